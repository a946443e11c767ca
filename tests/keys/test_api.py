"""Key API: public reads of frozen keys, errata with token auth, authors decide."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from keys.models import Erratum
from keys.services import erratum_file, key_build
from tests.adjudication.conftest import decide

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_frozen_keys_are_readable_without_authentication(frozen_key):
    client = APIClient()
    listing = client.get("/api/keys/").json()
    assert [k["version"] for k in listing] == ["TWIST-test-v1.0"]
    detail = client.get("/api/keys/TWIST-test-v1.0/").json()
    assert detail["sha256"] == frozen_key.sha256 and len(detail["records"]) == 8
    assert {r["key_version"] for r in detail["records"]} == {"TWIST-test-v1.0"}


def test_drafts_are_404_in_the_api_for_non_authors(key_campaign, author, annotator_b):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    key_build(campaign=key_campaign, version="K-draft", user=author)
    assert APIClient().get("/api/keys/K-draft/").status_code == 404
    assert token_client(annotator_b).get("/api/keys/K-draft/").status_code == 404
    assert token_client(author).get("/api/keys/K-draft/").status_code == 200


def test_a_token_client_files_an_erratum(frozen_key, outsider):
    response = token_client(outsider).post(
        "/api/keys/TWIST-test-v1.0/errata/",
        {"item": "s-0002", "kind": "relabel", "value": "aligned", "description": "not a hard negative"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "filed"
    assert Erratum.objects.get().filed_by == outsider


def test_an_anonymous_client_cannot_file_an_erratum(frozen_key):
    response = APIClient().post(
        "/api/keys/TWIST-test-v1.0/errata/", {"item": "s-0000", "kind": "drop", "description": "x"}, format="json"
    )
    assert response.status_code in (401, 403)
    assert not Erratum.objects.exists()


def test_an_invalid_erratum_is_a_400_naming_the_problem(frozen_key, outsider):
    response = token_client(outsider).post(
        "/api/keys/TWIST-test-v1.0/errata/", {"item": "nope", "kind": "drop", "description": "x"}, format="json"
    )
    assert response.status_code == 400 and "not an item" in response.json()["detail"]


def test_only_authors_decide_errata_through_the_api(frozen_key, outsider, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    url = f"/api/errata/{erratum.pk}/decision/"
    assert token_client(outsider).post(url, {"decision": "accept", "note": "n"}, format="json").status_code == 403
    response = token_client(author).post(url, {"decision": "reject", "note": "quote is verbatim"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert token_client(author).post("/api/errata/999999/decision/", {"decision": "accept", "note": "n"}, format="json").status_code == 404


def test_errata_of_a_key_are_public(frozen_key, outsider):
    erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    assert [e["item"] for e in APIClient().get("/api/keys/TWIST-test-v1.0/errata/").json()] == ["s-0000"]
