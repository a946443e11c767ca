"""Admin actions call the same services as the commands."""

import pytest

from keys.models import GoldKey
from keys.services import erratum_decide, erratum_file, key_build
from tests.adjudication.conftest import decide

pytestmark = pytest.mark.django_db


def test_the_admin_action_freezes_a_draft(client, admin_user, key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="K-v1.0", user=author)
    client.force_login(admin_user)
    response = client.post(
        "/admin/keys/goldkey/", {"action": "freeze_drafts", "_selected_action": [draft.pk]}, follow=True
    )
    assert response.status_code == 200
    draft.refresh_from_db()
    assert draft.is_frozen and draft.frozen_by == admin_user


def test_the_admin_action_derives_the_next_version(client, admin_user, frozen_key, outsider, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
    client.force_login(admin_user)
    client.post("/admin/keys/goldkey/", {"action": "derive_next_versions", "_selected_action": [frozen_key.pk]})
    child = GoldKey.objects.get(version="TWIST-test-v1.1")
    assert child.parent == frozen_key and child.is_frozen and len(child.changelog) == 1


def test_the_admin_freeze_action_reports_undecided_items(client, admin_user, key_campaign, author):
    draft = GoldKey.objects.create(
        benchmark=key_campaign.item_set.track.benchmark, kind="twist", version="K-v1.0", campaign=key_campaign
    )
    client.force_login(admin_user)
    response = client.post(
        "/admin/keys/goldkey/", {"action": "freeze_drafts", "_selected_action": [draft.pk]}, follow=True
    )
    assert b"s-0001, s-0004" in response.content
    draft.refresh_from_db()
    assert not draft.is_frozen
