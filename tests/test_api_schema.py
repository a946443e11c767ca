"""The OpenAPI schema: valid, free of generator warnings, and typed all the way down — no response (or
anything inside one) is an object of unknown shape."""

import json
from io import StringIO

import pydantic
import pytest
from django.core.management import call_command

import protocols

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    out = StringIO()
    with django_db_blocker.unblock():
        # --fail-on-warn turns any generator warning (an unresolvable view, a guessed type) into a failure.
        call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    return json.loads(out.getvalue())


def _untyped(schema: dict, components: dict, where: str, seen: set) -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return []
        return _untyped(components[name], components, f"{where} → {name}", seen | {name})
    found = []
    for key in ("oneOf", "anyOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            found += _untyped(sub, components, f"{where}.{key}[{i}]", seen)
    if any(key in schema for key in ("oneOf", "anyOf", "allOf")):
        return found
    kind = schema.get("type")
    if kind is None and "enum" not in schema:
        return [f"{where}: no type"]
    if kind == "array":
        return _untyped(schema.get("items", {}), components, f"{where}[]", seen)
    if kind == "object":
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        if not properties and not isinstance(extra, dict) or isinstance(extra, dict) and not extra:
            return [f"{where}: object of unknown shape"]
        for name, sub in properties.items():
            found += _untyped(sub, components, f"{where}.{name}", seen)
        if isinstance(extra, dict):
            found += _untyped(extra, components, f"{where}.*", seen)
    return found


def _responses(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                for media, content in response.get("content", {}).items():
                    yield f"{method.upper()} {path} {code} {media}", content["schema"]


def test_the_schema_validates_without_warnings_and_lists_the_endpoints(schema):
    paths = set(schema["paths"])
    assert {"/api/item-sets/", "/api/item-sets/import/", "/api/campaigns/", "/api/campaigns/{slug}/progress/",
            "/api/campaigns/{slug}/close/",
            "/api/council/members/", "/api/council/runs/", "/api/council/runs/{run_id}/",
            "/api/council/runs/{run_id}/cancel/"} <= paths


def test_no_response_in_the_schema_is_an_untyped_object(schema):
    components = schema["components"]["schemas"]
    problems = [p for where, body in _responses(schema) for p in _untyped(body, components, where, set())]
    assert problems == []


PUBLIC_READS = {("get", "/api/keys/"), ("get", "/api/keys/{version}/"), ("get", "/api/keys/{version}/errata/"),
                ("get", "/api/keys/{version}/scores/")}


def _operations(schema):
    for path, operations in schema["paths"].items():
        if path.startswith("/api/") and not path.startswith("/api/schema"):
            for method, operation in operations.items():
                yield method, path, set(operation["responses"])


def test_every_endpoint_but_the_public_key_reads_documents_403(schema):
    assert [f"{m} {p}" for m, p, codes in _operations(schema) if (m, p) not in PUBLIC_READS and "403" not in codes] == []


def test_every_endpoint_that_names_an_object_documents_404(schema):
    assert [f"{m} {p}" for m, p, codes in _operations(schema) if "{" in p and "404" not in codes] == []


def test_every_write_documents_400(schema):
    # Cancelling a run and skipping an item take no body: nothing in the request can be invalid.
    assert [f"{m} {p}" for m, p, codes in _operations(schema) if m in ("post", "put", "patch") and "400" not in codes
            and not p.endswith(("/cancel/", "/skip/"))] == []


def test_my_assignments_are_documented_as_a_limit_offset_page(schema):
    operation = schema["paths"]["/api/annotation/assignments/"]["get"]
    assert {"limit", "offset", "campaign"} <= {p["name"] for p in operation["parameters"]}
    page = schema["components"]["schemas"][operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
    assert {"count", "next", "previous", "results"} <= set(page["properties"])


def test_the_blind_item_is_one_of_the_protocols_blind_serializers(schema):
    item = schema["components"]["schemas"]["ItemView"]["properties"]["item"]
    variants = schema["components"]["schemas"]["BlindItem"]["oneOf"]
    assert (item.get("$ref") or item["allOf"][0]["$ref"]).endswith("/BlindItem")
    names = {v["$ref"].rsplit("/", 1)[1] for v in variants}
    assert {"BlindTwistBItem", "BlindLapseItem"} <= names
    assert names == {f"Blind{spec.name.title().replace('_', '')}Item" for spec in protocols.specs()}


def test_a_blind_item_declares_exactly_its_protocols_blind_fields(schema):
    import protocols

    components = schema["components"]["schemas"]
    for spec in protocols.REGISTRY.values():
        name = f"Blind{spec.name.title().replace('_', '')}Item"
        assert set(components[name]["properties"]) == set(spec.blind_fields)


def test_partial_answers_are_patch_and_put_replaces(schema):
    answer = schema["paths"]["/api/annotation/assignments/{id}/answer/"]
    assert {"patch", "put"} <= set(answer)
    assert "Replace" in answer["put"]["summary"] and "merges" in answer["patch"]["summary"]


def _schema_now() -> dict:
    out = StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("protocol", [spec.name for spec in protocols.specs()])
def test_a_blind_field_added_to_a_protocols_content_schema_is_documented_from_the_schema(protocol, monkeypatch):
    spec = protocols.get(protocol)
    extended = pydantic.create_model(
        spec.content.__name__, __base__=spec.content,
        weather=(str, pydantic.Field("", max_length=40, description="The weather the speakers mention.")),
    )
    monkeypatch.setitem(spec.__dict__, "content", extended)  # the spec is frozen: as a new schema class would
    monkeypatch.setitem(spec.__dict__, "blind_fields", (*spec.blind_fields, "weather"))
    item = _schema_now()["components"]["schemas"][f"Blind{spec.class_prefix}Item"]
    assert item["properties"]["weather"] == {
        "type": "string", "maxLength": 40, "description": "The weather the speakers mention.",
    }
    for name in set(spec.blind_fields) & set(spec.content_fields):
        assert item["properties"][name]["description"] == spec.content.model_fields[name].description
