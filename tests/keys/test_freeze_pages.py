"""The author's freeze and derive path in the browser's pages: build a draft, review it against the bar,
freeze it knowingly; preview a derive with its changelog or its refusal, then derive."""

import pytest
from django.urls import reverse

from keys.models import GoldKey, KeyJob
from keys.services import erratum_decide, erratum_file
from tests.keys.conftest import run_job

pytestmark = pytest.mark.django_db


def test_the_queue_offers_the_next_step_once_everything_is_decided(client, decided, author):
    client.force_login(author)
    page = client.get(reverse("adjudication:queue", args=[decided.slug])).content.decode()
    assert reverse("keys:build", args=[decided.slug]) in page
    keys_page = client.get(reverse("keys:list")).content.decode()
    assert reverse("keys:build", args=[decided.slug]) in keys_page


def test_an_author_builds_reviews_and_freezes_a_draft_below_the_bar_only_knowingly(client, decided, author):
    client.force_login(author)
    response = client.post(reverse("keys:build", args=[decided.slug]), {"version": "T-v1.0", "notes": "first"})
    built = run_job(client, response)
    assert built.redirect_chain[-1][0] == reverse("keys:detail", args=["T-v1.0"])
    page = built.content.decode()
    assert "Draft T-v1.0 built: review it, then freeze it." in page
    assert 'data-testid="freeze-review"' in page and "8 items kept of 9 candidates" in page
    # The small campaign's kept-set kappa (0.771) is below the 0.8 bar: the page says so.
    assert "<strong>0.771</strong> against the pre-registered bar 0.8" in page and "below the bar." in page
    unconfirmed = client.post(reverse("keys:freeze", args=["T-v1.0"]), {}, follow=True)  # no confirmation
    assert "Tick the box to confirm" in unconfirmed.content.decode()
    refused = client.post(reverse("keys:freeze", args=["T-v1.0"]), {"confirm": "yes"}, follow=True)
    assert "below the pre-registered bar 0.8" in refused.content.decode()
    assert GoldKey.objects.get(version="T-v1.0").status == GoldKey.Status.DRAFT
    assert not KeyJob.objects.filter(action=KeyJob.Action.FREEZE).exists()  # refused before any job started
    frozen = run_job(client, client.post(reverse("keys:freeze", args=["T-v1.0"]), {"confirm": "yes", "below_bar": "yes"}))
    assert "T-v1.0 is frozen and its release sealed." in frozen.content.decode()
    key = GoldKey.objects.get(version="T-v1.0")
    assert key.is_frozen and key.release is not None
    assert KeyJob.objects.get(action=KeyJob.Action.FREEZE).result == key


def test_a_freeze_refused_by_the_service_shows_its_message_on_the_job_page(client, decided, author):
    from adjudication.models import Decision

    client.force_login(author)
    run_job(client, client.post(reverse("keys:build", args=[decided.slug]), {"version": "T-v1.0"}))
    Decision.objects.filter(campaign=decided, item__external_id="s-0004").update(action="drop")  # after the review
    page = run_job(client, client.post(reverse("keys:freeze", args=["T-v1.0"]), {"confirm": "yes", "below_bar": "yes"}))
    html = page.content.decode()
    assert 'data-testid="job-error"' in html
    assert "the decisions of &#x27;small&#x27; changed since draft &#x27;T-v1.0&#x27; was built: rebuild it and review it again" in html
    assert reverse("keys:detail", args=["T-v1.0"]) in html  # where to go next
    assert GoldKey.objects.get(version="T-v1.0").status == GoldKey.Status.DRAFT


def test_annotators_and_blind_authors_cannot_build(client, decided, annotator_a, annotator_b):
    client.force_login(annotator_a)
    assert client.post(reverse("keys:build", args=[decided.slug]), {"version": "X"}).status_code == 403
    assert not GoldKey.objects.filter(version="X").exists()
    assert not KeyJob.objects.exists()


def test_a_derive_is_previewed_with_its_changelog_then_made(client, frozen_key, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0002", kind="drop", description="dup", user=author)
    erratum_decide(erratum=erratum, accept=True, note="yes", user=author)
    client.force_login(author)
    detail = client.get(reverse("keys:detail", args=[frozen_key.version])).content.decode()
    assert reverse("keys:derive", args=[frozen_key.version]) in detail
    preview = client.get(reverse("keys:derive", args=[frozen_key.version]), {"version": "TWIST-test-v1.1"}).content.decode()
    assert 'data-testid="derive-preview"' in preview and "s-0002" in preview and "dropped" in preview
    assert not GoldKey.objects.filter(version="TWIST-test-v1.1").exists()  # the preview wrote nothing
    response = client.post(reverse("keys:derive", args=[frozen_key.version]), {"version": "TWIST-test-v1.1"})
    done = run_job(client, response)
    assert done.redirect_chain[-1][0] == reverse("keys:detail", args=["TWIST-test-v1.1"])
    assert "TWIST-test-v1.1 derived from TWIST-test-v1.0, frozen and sealed." in done.content.decode()
    derived = GoldKey.objects.get(version="TWIST-test-v1.1")
    assert derived.is_frozen and not derived.entries.filter(external_id="s-0002").exists()
    parent_page = client.get(reverse("keys:detail", args=[frozen_key.version])).content.decode()
    assert 'data-testid="superseded"' in parent_page and reverse("keys:detail", args=["TWIST-test-v1.1"]) in parent_page
