"""The error bodies every API endpoint may answer with, declared once for the OpenAPI schema.

They follow the one DRF exception handler (goldkey.errors.api_exception_handler): a refusal by a service
is {"detail", "errors"?}; a request body that fails its serializer is DRF's {field: [messages]}."""

from drf_spectacular.utils import OpenApiResponse
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


VALIDATION_ERROR = OpenApiResponse(
    response=dict[str, list[str]], description="The request body is invalid: field name → messages"
)
REFUSED = OpenApiResponse(response=ErrorSerializer, description="Refused by a service (the message says why)")
# No 401: session authentication comes first, and DRF then answers missing or wrong credentials with 403.
FORBIDDEN = OpenApiResponse(
    response=ErrorSerializer, description="No valid session or token, or the user's role or access rule does not allow this"
)
NOT_FOUND = OpenApiResponse(response=ErrorSerializer, description="No such object")

# Reads: who may, and whether it exists. Writes add 400 (REFUSED or VALIDATION_ERROR, see WRITE_ERRORS).
ERRORS = {403: FORBIDDEN, 404: NOT_FOUND}
WRITE_ERRORS = {
    **ERRORS,
    400: OpenApiResponse(
        response={"oneOf": [
            {"$ref": "#/components/schemas/Error"},
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        ]},
        description="Refused by a service ({detail, errors}) or an invalid body ({field: [messages]})",
    ),
}
