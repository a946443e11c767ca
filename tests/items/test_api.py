"""The items API: staff authors list item sets and import files — all or nothing, every error as a record."""

import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from items.models import Item
from tests.items.conftest import locomo_conversation, table_counts, twist_record

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def upload(name: str, text: str) -> io.BytesIO:
    handle = io.BytesIO(text.encode())
    handle.name = name
    return handle


def jsonl(*records) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_a_staff_author_imports_a_conversation_and_items_and_lists_the_set(author):
    client = token_client(author)
    assert client.post("/api/item-sets/import/", {"kind": "locomo", "file": upload("1.json", json.dumps(locomo_conversation()))}).status_code == 201
    response = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert response.status_code == 201 and response.json()["created"] == 1
    [listed] = client.get("/api/item-sets/").json()
    assert (listed["name"], listed["kind"], listed["items"], listed["rejects"], listed["benchmark"]) == ("s", "twist", 1, 0, "TWIST")


def test_importing_the_same_file_again_is_a_200_that_changes_nothing(author, small_corpus):
    client = token_client(author)
    body = jsonl(twist_record(1))
    client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "file": upload("t.jsonl", body)})
    again = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "file": upload("t.jsonl", body)})
    assert again.status_code == 200 and again.json()["unchanged"] == 1 and Item.objects.count() == 1


def test_a_dry_run_writes_nothing(author, small_corpus):
    response = token_client(author).post(
        "/api/item-sets/import/", {"kind": "twist", "item_set": "s", "dry_run": "true", "file": upload("t.jsonl", jsonl(twist_record(1)))}
    )
    assert response.status_code == 200 and response.json()["dry_run"] and response.json()["created"] == 1
    assert not Item.objects.exists()


def test_a_malformed_file_is_a_400_listing_every_error_and_writes_nothing(author, small_corpus):
    before = table_counts()
    response = token_client(author).post("/api/item-sets/import/", {
        "kind": "twist", "item_set": "s",
        "file": upload("bad.jsonl", jsonl(twist_record(1, conv="conv-99"), twist_record(2, type="nonsense"))),
    })
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert sorted((e["file"], e["line"], e["field"]) for e in errors) == [("bad.jsonl", 1, "conv"), ("bad.jsonl", 2, "type")]
    assert table_counts() == before


def test_a_missing_field_in_the_request_is_a_400_naming_it(author):
    response = token_client(author).post("/api/item-sets/import/", {"kind": "twist"})
    assert response.status_code == 400 and "file" in response.json()


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_authors_cannot_list_or_import(persona, request, small_corpus):
    client = token_client(request.getfixturevalue(persona))
    assert client.get("/api/item-sets/").status_code == 403
    refused = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert refused.status_code == 403 and not Item.objects.exists()


def test_an_author_without_staff_cannot_import_as_on_the_admin_page(author, small_corpus):
    author.is_staff = False
    author.save()
    assert token_client(author).get("/api/item-sets/").status_code == 403


def test_anonymous_and_a_wrong_token_are_refused():
    # Session authentication comes first, so DRF answers missing or wrong credentials with 403 (as documented).
    assert APIClient().get("/api/item-sets/").status_code == 403
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert wrong.get("/api/item-sets/").status_code == 403


def test_the_item_set_list_runs_a_constant_number_of_queries(author, small_corpus, django_assert_max_num_queries):
    client = token_client(author)
    client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "one", "file": upload("t.jsonl", jsonl(twist_record(1)))})
    with django_assert_max_num_queries(4) as one:
        client.get("/api/item-sets/")
    few = len(one.captured_queries)  # read now: the next request resets the connection's query log
    for name in ("two", "three"):
        client.post("/api/item-sets/import/", {"kind": "twist", "item_set": name, "file": upload("t.jsonl", jsonl(twist_record(1)))})
    with django_assert_max_num_queries(few):
        assert len(client.get("/api/item-sets/").json()) == 3


def test_an_api_import_records_the_licence_it_names_and_the_list_shows_it(author, small_corpus):
    client = token_client(author)
    response = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "license": "cc-by-nc-sa-4.0",
                                                      "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert response.status_code == 201
    [listed] = client.get("/api/item-sets/").json()
    assert listed["license"] == "cc-by-nc-sa-4.0"


def test_an_api_import_with_a_malformed_licence_is_a_400_naming_the_field(author, small_corpus):
    before = table_counts()
    response = token_client(author).post("/api/item-sets/import/", {"kind": "twist", "item_set": "s", "license": "CC BY",
                                                                    "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert response.status_code == 400
    assert any(e["field"] == "license" for e in response.json()["errors"]), response.json()
    assert table_counts() == before


def test_an_uploaded_file_with_a_value_over_its_column_is_a_400_naming_file_line_and_field(author, small_corpus):
    n = Item._meta.get_field("external_id").max_length
    before = table_counts()
    response = token_client(author).post("/api/item-sets/import/", {
        "kind": "twist", "item_set": "s",
        "file": upload("t.jsonl", jsonl(twist_record(1), twist_record(2, id="conv-1:v1b" + "2" * n))),
    })
    assert response.status_code == 400
    assert [(e["file"], e["line"], e["field"]) for e in response.json()["errors"]] == [("t.jsonl", 2, "id")]
    assert table_counts() == before


def test_an_item_set_name_over_its_column_is_a_400_naming_the_field(author, small_corpus):
    from items.models import ItemSet

    n = ItemSet._meta.get_field("name").max_length
    before = table_counts()
    client = token_client(author)
    response = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s" * (n + 1),
                                                      "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert response.status_code == 400 and "item_set" in response.json(), response.json()
    assert table_counts() == before
    response = client.post("/api/item-sets/import/", {"kind": "twist", "item_set": "s" * n,
                                                      "file": upload("t.jsonl", jsonl(twist_record(1)))})
    assert response.status_code == 201 and ItemSet.objects.get().name == "s" * n
