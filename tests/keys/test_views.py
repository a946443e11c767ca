"""Key pages: frozen keys public without login; drafts for authors only; errata forms."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from keys.models import Erratum
from keys.services import erratum_decide, erratum_file, key_derive, key_publish
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db


def test_frozen_keys_are_listed_without_login(client, frozen_key):
    response = client.get("/keys/")
    assert response.status_code == 200
    assert b"TWIST-test-v1.0" in response.content


def test_drafts_are_not_listed_for_the_public(client, outsider, draft):
    assert b"TWIST-test-draft" not in client.get("/keys/").content
    client.force_login(outsider)
    assert b"TWIST-test-draft" not in client.get("/keys/").content


def test_authors_see_drafts(client, author, draft):
    client.force_login(author)
    assert b"TWIST-test-draft" in client.get("/keys/").content
    assert client.get("/keys/TWIST-test-draft/").status_code == 200


def test_a_draft_page_is_404_for_everyone_but_authors(client, annotator_b, draft):
    assert client.get("/keys/TWIST-test-draft/").status_code == 404
    client.force_login(annotator_b)
    assert client.get("/keys/TWIST-test-draft/").status_code == 404
    assert client.get("/keys/TWIST-test-draft/key.jsonl").status_code == 404


def test_an_unknown_key_is_404(client):
    assert client.get("/keys/NOPE-v9/").status_code == 404


def test_the_key_page_shows_counts_hash_and_download_without_login(client, frozen_key):
    response = client.get("/keys/TWIST-test-v1.0/")
    assert response.status_code == 200
    page = response.content.decode()
    assert frozen_key.sha256 in page and "download.zip" in page
    assert "<th>contradicting</th><td>3</td>" in page
    assert "Log in</a> to file an erratum" in page


def test_key_jsonl_downloads_the_canonical_bytes(client, frozen_key):
    from keys.canonical import sha256_hex

    response = client.get("/keys/TWIST-test-v1.0/key.jsonl")
    assert sha256_hex(response.content) == frozen_key.sha256


def test_a_signed_in_user_files_an_erratum_from_the_key_page(client, outsider, frozen_key):
    client.force_login(outsider)
    response = client.post(
        "/keys/TWIST-test-v1.0/errata/", {"item": "s-0000", "kind": "drop", "description": "absence-based"}
    )
    assert response.status_code == 302
    erratum = Erratum.objects.get()
    assert (erratum.item_external_id, erratum.filed_by) == ("s-0000", outsider)
    assert b"absence-based" in client.get("/keys/TWIST-test-v1.0/").content


def test_an_invalid_erratum_is_refused_with_a_message(client, outsider, frozen_key):
    client.force_login(outsider)
    response = client.post("/keys/TWIST-test-v1.0/errata/", {"item": "nope", "kind": "drop", "description": "x"}, follow=True)
    assert b"not an item of TWIST-test-v1.0" in response.content
    assert not Erratum.objects.exists()


def test_anonymous_visitors_cannot_file_errata(client, frozen_key):
    response = client.post("/keys/TWIST-test-v1.0/errata/", {"item": "s-0000", "kind": "drop", "description": "x"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Erratum.objects.exists()


def test_authors_decide_errata_on_the_page_and_others_get_403(client, outsider, author, frozen_key):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    client.force_login(outsider)
    assert client.post(f"/keys/errata/{erratum.pk}/decide/", {"decision": "accept", "note": "n"}).status_code == 403
    client.force_login(author)
    assert b'class="inline decide"' in client.get("/keys/TWIST-test-v1.0/").content
    assert client.post(f"/keys/errata/{erratum.pk}/decide/", {"decision": "accept", "note": "ok"}).status_code == 302
    erratum.refresh_from_db()
    assert erratum.status == "accepted"
    assert client.post("/keys/errata/999999/decide/", {"decision": "accept", "note": "n"}).status_code == 404


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_key_pages_run_a_constant_number_of_queries(client, author, annotator_b, outsider, frozen_key):
    for i in (0, 2, 3):
        erratum_file(key=frozen_key, item_external_id=f"s-000{i}", kind="drop", description="x", user=outsider)
    small_list, small_detail = _queries(client, "/keys/"), _queries(client, "/keys/TWIST-test-v1.0/")

    big = make_campaign(slug="big", n=60, annotators=[author, annotator_b])
    from keys.services import key_freeze

    big_key = key_freeze(campaign=big, version="TWIST-big-v1.0", user=author)
    for i in range(20):
        erratum = erratum_file(key=big_key, item_external_id=f"s-{i:04d}", kind="drop", description="x", user=outsider)
        if i < 5:
            erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
    child = key_derive(parent=big_key, version="TWIST-big-v1.1", user=author)
    for key in (big_key, child):
        key_publish(key=key, user=author)
    assert _queries(client, "/keys/") == small_list
    assert _queries(client, "/keys/TWIST-big-v1.0/") == small_detail
    assert _queries(client, f"/keys/{child.version}/") == small_detail


@pytest.fixture
def big_key(author, annotator_b):
    from keys.services import key_freeze

    campaign = make_campaign(slug="wide", n=130, annotators=[author, annotator_b])
    key = key_freeze(campaign=campaign, version="TWIST-wide-v1.0", user=author)
    key_publish(key=key, user=author)
    return key


def test_the_key_page_lists_its_items_a_page_at_a_time_with_gold_and_provenance(client, big_key):
    from keys.selectors import ENTRY_PAGE_SIZE

    first = client.get("/keys/TWIST-wide-v1.0/").content.decode()
    last = client.get("/keys/TWIST-wide-v1.0/", {"page": "3"}).content.decode()
    assert ENTRY_PAGE_SIZE == 50 and "page 1 of 3" in first and "page 3 of 3" in last
    assert "<td>s-0000</td><td>contradicting</td><td>D1:1</td><td>kept unanimous</td>" in first
    assert "s-0049" in first and "s-0050" not in first
    assert "<td>101</td><td>s-0100</td>" in last and "s-0099" not in last
    assert "30 shown of 130" in last


def test_the_key_item_table_filters_by_gold_and_keeps_the_filter_on_its_pages(client, big_key):
    html = client.get("/keys/TWIST-wide-v1.0/", {"gold": "aligned"}).content.decode()
    # 130 items, every third aligned (1, 4, 7, …): 43, on one page.
    assert "43 shown of 43 with gold aligned" in html and "<td>s-0001</td><td>aligned</td>" in html
    assert "s-0000" not in html.split('id="entries"')[1]
    unknown = client.get("/keys/TWIST-wide-v1.0/", {"gold": "<nope>", "page": "x"}).content.decode()
    assert "50 shown of 130" in unknown and "<nope>" not in unknown


def test_the_key_item_table_runs_the_same_queries_for_9_and_130_items(client, frozen_key, big_key):
    small = _queries(client, f"/keys/{frozen_key.version}/?page=1&gold=aligned")
    large = _queries(client, f"/keys/{big_key.version}/?page=2&gold=aligned")
    assert small == large, (small, large)
