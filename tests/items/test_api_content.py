"""The API's write path for item content is the import upload (`POST /api/item-sets/import/`): whatever the
protocol, content its schema does not accept is a JSON 400 naming the file, line and field, never a 500,
and nothing is stored."""

import json

import pytest
from pydantic import BaseModel, field_validator

import protocols
from protocols.base import ItemContent, content_problems
from tests.items.conftest import locomo_conversation, table_counts, twist_record
from tests.items.test_api import jsonl, token_client, upload

pytestmark = pytest.mark.django_db

IMPORT = "/api/item-sets/import/"
REFUSED = "REFUSED-BY-THE-SCHEMA"

# One item of each registered protocol in its upload format, carrying `text` in a top-level string field of
# its content: (file name, body, that content field). A protocol registered later adds its line here.
UPLOADS = {
    "twist": lambda text: ("t.jsonl", jsonl(twist_record(1, draft=text)), "draft"),
    "lapse": lambda text: ("l.jsonl", jsonl({"gid": "g001", "query": text, "response": "r", "witness": "w"}), "request"),
    "judged": lambda text: ("j.jsonl", jsonl({
        "question_id": "q-01", "question_type": "single-session-user", "question": "Which dog?", "answer": "a collie",
        "question_date": "2023/05/30 (Tue) 10:00", "hypothesis": text,
    }), "hypothesis"),
    # A chain over the corpus fixture's own conversation (a conversation is a version of itself).
    "twist_c": lambda text: ("c.jsonl", jsonl({
        "id": "tc-1", "conversation": "conv-1", "conversation_version": "conv-1", "family": "C1", "question": text,
        "gold": "turn 1 of session 2", "superseded": ["turn 1 of session 1"],
        "steps": [{"turn_id": f"D{s}:1", "date": f"{s}:05 pm on {s + 2} May, 2023", "speaker": "Ann",
                   "text": f"turn 1 of session {s}", "value": f"turn 1 of session {s}"} for s in (1, 2)],
    }), "question"),
}


def refusing(schema, field: str):
    """The protocol's schema, made to refuse one value of one field (as a stricter schema would)."""

    class Stricter(schema):
        @field_validator(field)
        @classmethod
        def _refuse(cls, value):
            if value == REFUSED:
                raise ValueError("refused by the schema")
            return value

    Stricter.__name__ = schema.__name__
    return Stricter


@pytest.fixture
def corpus(author):
    token_client(author).post(IMPORT, {"kind": "locomo", "file": upload("1.json", json.dumps(locomo_conversation()))})


def test_every_registered_protocol_has_an_upload_case():
    assert set(UPLOADS) == {spec.item_kind for spec in protocols.specs()}


@pytest.mark.parametrize("kind", sorted(UPLOADS))
def test_content_the_protocols_schema_refuses_is_a_400_naming_the_field_and_stores_nothing(kind, author, corpus, monkeypatch):
    spec = protocols.for_kind(kind)
    name, body, field = UPLOADS[kind](REFUSED)
    client = token_client(author)
    assert client.post(IMPORT, {"kind": kind, "item_set": "fits", "file": upload(name, UPLOADS[kind]("fine")[1])}).status_code == 201
    # The spec is frozen; its schema is swapped the way a stricter schema of the protocol would be.
    monkeypatch.setitem(spec.__dict__, "content", refusing(spec.content, field))
    before = table_counts()

    response = client.post(IMPORT, {"kind": kind, "item_set": "refused", "file": upload(name, body)})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert [(e["file"], e["line"], e["field"]) for e in response.json()["errors"]] == [(name, 1, field)]
    assert "refused by the schema" in response.json()["errors"][0]["message"]
    assert table_counts() == before


def test_a_value_past_a_real_schema_limit_is_a_400_naming_the_content_field(author):
    response = token_client(author).post(IMPORT, {"kind": "lapse", "item_set": "s", "file": upload(
        "l.jsonl", jsonl({"gid": "g001", "query": "q", "response": "r", "witness": "w" * 301}))})
    assert response.status_code == 400
    assert [(e["file"], e["line"], e["field"]) for e in response.json()["errors"]] == [("l.jsonl", 1, "key_fact")]
    assert table_counts()["Item"] == 0


def test_a_nested_value_is_named_by_its_json_path():
    class Step(BaseModel):
        value: str

    class Chain(ItemContent):
        steps: list[Step] = []

    problems = content_problems(Chain, {"steps": [{"value": "a"}, {"value": 2}]})
    assert [p.split(":", 1)[0] for p in problems] == ["field 'steps[1].value'"]
