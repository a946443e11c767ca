"""Admin actions call the same services as the commands."""

import pytest

from adjudication.models import Decision
from goldkey.errors import ApplicationError
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


def test_the_admin_add_form_asks_only_for_a_campaign_a_version_and_notes(client, admin_user, key_campaign):
    client.force_login(admin_user)
    page = client.get("/admin/keys/goldkey/add/").content.decode()
    assert 'name="campaign"' in page and 'name="version"' in page and 'name="notes"' in page
    for free_field in ("benchmark", "kind", "created_by", "created_at", "status", "sha256"):
        assert f'name="{free_field}"' not in page


def test_the_admin_builds_a_key_from_a_campaign_whose_benchmark_and_kind_follow(client, admin_user, key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    client.force_login(admin_user)
    client.post("/admin/keys/goldkey/add/", {"campaign": key_campaign.pk, "version": "K-v1.0", "notes": ""})
    key = GoldKey.objects.get(version="K-v1.0")
    assert key.campaign == key_campaign and key.kind == "twist" and key.entries.count() == 8
    assert key.benchmark == key_campaign.item_set.track.benchmark and not key.is_frozen


def test_a_campaign_has_one_key_line(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    key_build(campaign=key_campaign, version="K-v1.0", user=author)
    with pytest.raises(ApplicationError, match="already has key line 'K-v1.0'"):
        key_build(campaign=key_campaign, version="OTHER-v1.0", user=author)


def test_the_admin_freezes_the_draft_that_was_reviewed_not_a_rebuilt_one(client, admin_user, key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="K-v1.0", user=author)
    Decision.objects.filter(campaign=key_campaign, item__external_id="s-0004").update(action="drop")  # after review
    client.force_login(admin_user)
    response = client.post("/admin/keys/goldkey/", {"action": "freeze_drafts", "_selected_action": [draft.pk]}, follow=True)
    draft.refresh_from_db()
    assert not draft.is_frozen
    assert "changed since draft" in response.content.decode()


def test_a_blind_superuser_author_sees_no_draft_of_their_campaign_in_the_admin(client, key_campaign, author):
    from annotation.models import Campaign, Enrollment
    from tests.conftest import _user

    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="K-v1.0", user=author)
    boss = _user("boss", "author", is_staff=True, is_superuser=True)
    # An unsubmitted enrollment in the campaign: the superuser is still one of its annotators.
    Enrollment.objects.create(campaign=Campaign.objects.get(pk=key_campaign.pk), annotator=boss, pseudonym="C", order_seed=1)
    client.force_login(boss)
    assert draft.version not in client.get("/admin/keys/goldkey/").content.decode()
    assert client.get(f"/admin/keys/goldkey/{draft.pk}/change/").status_code in (302, 404)
    assert client.get(f"/keys/{draft.version}/").status_code == 404


def test_a_blind_superuser_sees_no_council_vote_or_gate_verdict_of_their_campaign(client, key_campaign):
    from annotation.models import Enrollment
    from council.models import CouncilMember, CouncilVote, GateVerdict
    from items.models import Item
    from tests.conftest import _user

    item = Item.objects.filter(item_set=key_campaign.item_set).first()
    member = CouncilMember.objects.create(name="m-secret", model="m")
    CouncilVote.objects.create(campaign=key_campaign, member=member, item=item, prompt_version="p", values={"q1": "contradicts"})
    GateVerdict.objects.create(item_set=key_campaign.item_set, item=item, gate="recipient_speaker", passed=False, blocking=True, detail="SECRET-VERDICT")
    boss = _user("boss", "author", is_staff=True, is_superuser=True)
    Enrollment.objects.create(campaign=key_campaign, annotator=boss, pseudonym="C", order_seed=1)
    client.force_login(boss)
    assert "m-secret" not in client.get("/admin/council/councilvote/").content.decode()
    assert "SECRET-VERDICT" not in client.get("/admin/council/gateverdict/").content.decode()
    assert client.get("/admin/council/councilvote/add/").status_code == 403


@pytest.fixture
def stored_run(frozen_key, author, tmp_path):
    import json

    from keys.scoring import selectors as score_selectors
    from keys.scoring import services as score_services

    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"item_id": e.item_id, "aligned": False, "evidence": ["D1:1"]}) + "\n"
                            for e in score_selectors.key_items(frozen_key)))
    [run] = score_services.score_import(version=frozen_key.version, path=path, system="flatrag:openai", user=author)
    return run


def run_admin_urls(run) -> list[str]:
    return ["/admin/keys/systemrun/", f"/admin/keys/systemrun/{run.pk}/change/",
            f"/admin/keys/runprediction/?run__id__exact={run.pk}",
            f"/admin/keys/runprediction/{run.predictions.first().pk}/change/"]


def test_an_author_reads_a_run_and_its_predictions_in_the_admin(client, author, stored_run):
    client.force_login(author)
    assert "flatrag" in client.get("/admin/keys/systemrun/").content.decode()
    page = client.get(f"/admin/keys/systemrun/{stored_run.pk}/change/").content.decode()
    count = stored_run.predictions.count()
    assert stored_run.source_sha256 in page and f"{count} predictions" in page
    assert 'name="system"' not in page and 'name="_save"' not in page  # shown, not a form
    listing = client.get(f"/admin/keys/runprediction/?run__id__exact={stored_run.pk}").content.decode()
    assert all(p.item_external_id in listing for p in stored_run.predictions.all())


def test_an_author_cannot_change_add_or_delete_a_run_or_a_prediction(client, author, stored_run):
    client.force_login(author)
    change = client.post(f"/admin/keys/systemrun/{stored_run.pk}/change/",
                         {"system": "forged", "configuration": "x", "ingest": 1, "source_name": "f", "source_sha256": "0" * 64})
    assert change.status_code == 403
    prediction = stored_run.predictions.order_by("pk").first()
    assert client.post(f"/admin/keys/runprediction/{prediction.pk}/change/", {"aligned": "on"}).status_code == 403
    assert client.get("/admin/keys/systemrun/add/").status_code == 403
    assert client.post(f"/admin/keys/systemrun/{stored_run.pk}/delete/", {"post": "yes"}).status_code == 403
    stored_run.refresh_from_db()
    prediction.refresh_from_db()
    assert (stored_run.system, stored_run.configuration, prediction.aligned) == ("flatrag", "openai", False)


def test_an_annotator_cannot_reach_runs_in_the_admin_even_as_staff_with_every_model_permission(client, annotator_a, stored_run):
    from django.contrib.auth.models import Permission

    client.force_login(annotator_a)
    for url in run_admin_urls(stored_run):
        assert client.get(url).status_code == 302  # not staff: sent to the admin login
    annotator_a.is_staff = True
    annotator_a.save()
    annotator_a.user_permissions.set(Permission.objects.filter(content_type__app_label="keys"))
    client.force_login(annotator_a)
    for url in run_admin_urls(stored_run):
        assert client.get(url).status_code == 403, url
    assert "systemrun" not in client.get("/admin/").content.decode()
