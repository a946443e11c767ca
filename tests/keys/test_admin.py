"""Admin actions call the same services as the commands (the freeze and the derive through key jobs, run by
the worker: here by the test, as the worker would)."""

import pytest

from adjudication.models import Decision
from goldkey.errors import ApplicationError
from keys.models import GoldKey
from keys.services import erratum_decide, erratum_file, key_build
from tests.adjudication.conftest import decide
from tests.keys.conftest import run_queued_jobs

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
    [job] = run_queued_jobs()
    assert f'K-v1.0: <a href="/keys/jobs/{job.pk}/">freeze a draft started</a>.' in response.content.decode()
    draft.refresh_from_db()
    assert job.status == "done" and draft.is_frozen and draft.frozen_by == admin_user


def test_the_admin_action_derives_the_next_version(client, admin_user, frozen_key, outsider, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
    client.force_login(admin_user)
    client.post("/admin/keys/goldkey/", {"action": "derive_next_versions", "_selected_action": [frozen_key.pk]})
    [job] = run_queued_jobs()
    child = GoldKey.objects.get(version="TWIST-test-v1.1")
    assert job.status == "done" and job.result == child
    assert child.parent == frozen_key and child.is_frozen and len(child.changelog) == 1


def test_the_admin_freeze_action_reports_undecided_items(client, admin_user, key_campaign, author):
    draft = GoldKey.objects.create(
        benchmark=key_campaign.item_set.track.benchmark, kind="twist", version="K-v1.0", campaign=key_campaign
    )
    client.force_login(admin_user)
    client.post("/admin/keys/goldkey/", {"action": "freeze_drafts", "_selected_action": [draft.pk]})
    [job] = run_queued_jobs()
    assert job.status == "failed" and "s-0001, s-0004" in job.error
    assert "s-0001, s-0004" in client.get(f"/keys/jobs/{job.pk}/").content.decode()
    draft.refresh_from_db()
    assert not draft.is_frozen


def test_the_admin_add_page_leads_to_the_build_page_of_each_campaign_ready_for_a_key(client, admin_user, key_campaign):
    client.force_login(admin_user)
    response = client.get("/admin/keys/goldkey/add/")
    page = response.content.decode()
    assert response.status_code == 200 and "Gold keys are built from a campaign" in page
    assert f'href="/keys/new/{key_campaign.slug}/"' in page and "Build the key of small" in page
    for raw_field in ("campaign", "version", "benchmark", "kind", "sha256"):
        assert f'name="{raw_field}"' not in page  # no raw form


def test_posting_to_the_admin_add_page_creates_no_key(client, admin_user, key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    client.force_login(admin_user)
    response = client.post("/admin/keys/goldkey/add/", {"campaign": key_campaign.pk, "version": "K-v1.0", "notes": ""})
    assert response.status_code == 200 and not GoldKey.objects.exists()


def test_the_key_entries_inline_is_titled_in_plain_english(client, admin_user, frozen_key):
    client.force_login(admin_user)
    page = client.get(f"/admin/keys/goldkey/{frozen_key.pk}/change/").content.decode()
    assert "Key entries" in page and "Key entrys" not in page
    assert "Read-only: A frozen key never changes" in page


def test_a_read_only_models_add_page_says_where_its_rows_come_from(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/admin/council/councilvote/add/")
    assert response.status_code == 403
    assert "Council votes come from council runs and vote imports" in response.content.decode()


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
    client.post("/admin/keys/goldkey/", {"action": "freeze_drafts", "_selected_action": [draft.pk]})
    [job] = run_queued_jobs()
    draft.refresh_from_db()
    assert not draft.is_frozen and job.status == "failed"
    assert "changed since draft" in job.error


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


def _campaign_list(client) -> tuple[str, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get("/admin/annotation/campaign/")
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_the_campaign_list_shows_progress_kappa_queue_and_key_linking_to_their_pages(client, author, frozen_key):
    from adjudication.models import QueueState

    client.force_login(author)
    QueueState.objects.filter(campaign=frozen_key.campaign).delete()  # the stored figures only, once built
    html, _ = _campaign_list(client)
    assert "18 of 18 answered · 2 of 2 annotators done" in html
    assert 'href="/adjudicate/small/">not built yet: open</a>' in html
    kept = frozen_key.manifest["agreement"]["kappa_kept_set"]["kappa"]
    assert f'href="/adjudicate/small/agreement/">{kept:.3f} (kept set, TWIST-test-v1.0)</a>' in html
    assert 'href="/keys/TWIST-test-v1.0/">TWIST-test-v1.0 (frozen)</a>' in html
    client.get("/adjudicate/small/")  # builds the stored queue and caches its counts and figures
    html, _ = _campaign_list(client)
    assert 'href="/adjudicate/small/">2 queued · 0 undecided</a>' in html


def test_the_campaign_list_reads_stored_figures_in_the_same_queries_for_one_and_many_campaigns(client, author, annotator_b, frozen_key, monkeypatch):
    from adjudication import agreement
    from tests.adjudication.conftest import make_campaign

    client.force_login(author)
    client.get("/adjudicate/small/")
    calls = []
    monkeypatch.setattr(agreement, "campaign_agreement", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(agreement, "queue_retained", lambda *a, **k: calls.append(1))
    _, one = _campaign_list(client)
    for n in range(4):
        make_campaign(slug=f"more-{n}", n=12, annotators=[author, annotator_b], disagree=(n,))
    html, many = _campaign_list(client)
    assert one == many and not calls  # no agreement computed for the list
    assert html.count("build the key") == 4


def test_the_campaign_list_hides_the_figures_of_a_campaign_the_author_annotates(client, author, annotator_b):
    from tests.adjudication.conftest import DISAGREE, make_twist_campaign

    make_twist_campaign([author, annotator_b], {"conv-1:v1b1": DISAGREE}, slug="mine", close=False)
    client.force_login(author)
    html, _ = _campaign_list(client)
    assert html.count("hidden while you annotate") == 3 and 'href="/adjudicate/mine/' not in html


def test_key_jobs_are_listed_read_only_and_not_to_an_author_blind_to_their_campaign(client, admin_user, key_campaign, author):
    from annotation.models import Enrollment
    from keys.models import KeyJob

    KeyJob.objects.create(action="build", status="failed", target=f"campaign:{key_campaign.pk}", campaign=key_campaign,
                          version="K-v1.0", requested_by=author, error="2 undecided item(s): s-0001, s-0004")
    client.force_login(admin_user)
    listed = client.get("/admin/keys/keyjob/").content.decode()
    assert "K-v1.0" in listed
    assert client.get("/admin/keys/keyjob/add/").status_code == 403
    # The superuser annotates this campaign and has not handed in: its jobs (and their messages) are hidden.
    Enrollment.objects.filter(campaign=key_campaign, annotator=author).update(annotator=admin_user)
    Enrollment.objects.filter(campaign=key_campaign, annotator=admin_user).update(submitted_at=None, ended_at=None)
    assert "K-v1.0" not in client.get("/admin/keys/keyjob/").content.decode()
