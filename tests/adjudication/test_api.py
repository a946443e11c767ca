"""The adjudication API: same access rule and services as the pages."""

import pytest

from adjudication.models import Decision
from items.models import Item

pytestmark = pytest.mark.django_db


def item_id(external_id):
    return Item.objects.get(external_id=external_id).id


def test_author_reads_agreement_and_queue(client, small_campaign, author):
    client.force_login(author)
    agreement = client.get(f"/api/adjudication/{small_campaign.slug}/agreement/").json()
    assert agreement["queue"]["n"] == 3 and "kappa" in agreement["q1"]
    queue = client.get(f"/api/adjudication/{small_campaign.slug}/queue/").json()["queue"]
    assert [e["item"] for e in queue] == ["conv-1:v1c4", "conv-1:v1b3", "conv-1:v1b5"]


def test_author_records_a_decision_and_a_missing_note_is_a_400(client, small_campaign, author):
    client.force_login(author)
    url = f"/api/adjudication/{small_campaign.slug}/decisions/{item_id('conv-1:v1c4')}/"
    refused = client.put(url, {"action": "drop"}, content_type="application/json")
    assert refused.status_code == 400 and "needs a note" in refused.json()["detail"]
    saved = client.put(url, {"action": "drop", "note": "not stated"}, content_type="application/json")
    assert saved.status_code == 200 and saved.json()["decision"]["decided_by"] == "author"
    assert Decision.objects.get().action == "drop"


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_authors_get_403_from_every_endpoint(client, small_campaign, persona, request):
    client.force_login(request.getfixturevalue(persona))
    base = f"/api/adjudication/{small_campaign.slug}"
    assert client.get(f"{base}/agreement/").status_code == 403
    assert client.get(f"{base}/queue/").status_code == 403
    put = client.put(f"{base}/decisions/{item_id('conv-1:v1c4')}/", {"action": "keep"}, content_type="application/json")
    assert put.status_code == 403 and not Decision.objects.exists()


def test_unknown_campaign_or_item_is_404_and_anonymous_is_refused(client, small_campaign, author):
    assert client.get(f"/api/adjudication/{small_campaign.slug}/queue/").status_code in (401, 403)
    client.force_login(author)
    assert client.get("/api/adjudication/nope/queue/").status_code == 404
    missing = client.put(f"/api/adjudication/{small_campaign.slug}/decisions/999999/", {"action": "keep"}, content_type="application/json")
    assert missing.status_code == 404


def test_a_note_over_the_limit_is_a_400_naming_it_and_nothing_is_saved(client, small_campaign, author):
    client.force_login(author)
    url = f"/api/adjudication/{small_campaign.slug}/decisions/{item_id('conv-1:v1c4')}/"
    refused = client.put(url, {"action": "drop", "note": "n" * 12000}, content_type="application/json")
    assert refused.status_code == 400 and "the note is 12,000 characters long" in refused.json()["detail"]
    assert not Decision.objects.exists()
