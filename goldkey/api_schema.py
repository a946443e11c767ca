"""The error bodies every API endpoint may answer with, declared once for the OpenAPI schema.

They follow the one DRF exception handler (goldkey.errors.api_exception_handler): a refusal by a service
is {"detail", "errors"?}; a request body that fails its serializer is DRF's {field: [messages]}."""

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="what was refused, safe to show to the user who asked")
    errors = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="every problem, when the refusal found several"
    )


class ErrorRecordSerializer(serializers.Serializer):
    file = serializers.CharField(allow_null=True)
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ImportErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="every problem as text, one per line")
    errors = ErrorRecordSerializer(many=True, help_text="every problem as a record (as the commands print under --json)")


# No 401: session authentication comes first, and DRF then answers missing or wrong credentials with 403.
FORBIDDEN = OpenApiResponse(
    response=ErrorSerializer, description="No valid session or token, or the user's role or access rule does not allow this"
)
NOT_FOUND = OpenApiResponse(response=ErrorSerializer, description="No such object")

INVALID = OpenApiResponse(
    response={"oneOf": [
        {"$ref": "#/components/schemas/Error"},
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    ]},
    description="Refused by a service ({detail, errors}) or an invalid body ({field: [messages]})",
)
STALE = OpenApiResponse(
    response=ErrorSerializer,
    description="The answer changed elsewhere (another tab or device) since the revision this write was based on",
)
_BY_CODE = {400: INVALID, 403: FORBIDDEN, 404: NOT_FOUND, 409: STALE}


def errors(*codes: int) -> dict:
    """The error responses an endpoint may answer with, for its extend_schema(responses=...)."""
    return {code: _BY_CODE[code] for code in codes}


class _AsStored(serializers.Field):
    """A value handed out as it is (already checked by the schema that declares it)."""

    def to_representation(self, value):
        return value

    def to_internal_value(self, data):
        return data


def json_schema_field(schema: dict, **kwargs) -> serializers.Field:
    """A response field documented by `schema`, a JSON Schema written elsewhere (a protocol's content field:
    `ProtocolSpec.content_field_schemas`), so that a value's type and description are declared once."""
    documented = {key: value for key, value in schema.items() if key not in ("title", "default")}
    field_class = extend_schema_field(documented)(type("JsonSchemaField", (_AsStored,), {}))
    return field_class(**kwargs)
