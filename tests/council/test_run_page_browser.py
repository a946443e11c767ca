"""The run page in real Chromium: live progress per member from the JSON endpoint, and cancel."""

import pytest
from playwright.sync_api import expect

from council.models import CouncilRun, CouncilVote
from council.services import council_member_add, prompt_version_default
from tests.conftest import browser_login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_run_page_updates_progress_live_and_cancels(page, author, small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    campaign = campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)
    member = council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x")[0]
    run = CouncilRun.objects.create(campaign=campaign, prompt_version=prompt_version_default(protocol="twist_b"),
                                    total_items=3, members_count=1, status="running")
    run.members.set([member])
    items = list(small_twist.items.order_by("external_id"))

    browser_login(page, author)
    page.goto(f"/council/runs/{run.pk}/")
    row = page.locator('tr[data-member="m1"]')
    assert row.locator(".remaining").inner_text() == "3"

    CouncilVote.objects.create(campaign=campaign, member=member, item=items[0], prompt_version="twist-b-v1",
                               values={"q1": "consistent"})
    CouncilVote.objects.create(campaign=campaign, member=member, item=items[1], prompt_version="twist-b-v1",
                               status="error", error="malformed")
    # expect() polls from Playwright's own world: a string predicate would need eval, which the CSP refuses.
    expect(row.locator(".remaining")).to_have_text("1", timeout=5000)
    assert row.locator(".done").inner_text() == "1"
    assert row.locator(".errors").inner_text() == "1"
    assert "66.7%" in row.locator(".bar").get_attribute("style")

    page.click("text=Cancel run")
    page.wait_for_load_state()
    assert page.locator("#run-status").inner_text() == "cancelled"
    run.refresh_from_db()
    assert run.cancelled


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_run_page_shows_a_member_retrying_after_a_429_live_and_drops_cancel_when_the_run_ends(page, author, small_twist, annotator_a, annotator_b):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.services import campaign_create
    from council.models import CouncilBatch
    from council.services import council_batch_waiting

    campaign = campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)
    member = council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x")[0]
    run = CouncilRun.objects.create(campaign=campaign, prompt_version=prompt_version_default(protocol="twist_b"),
                                    total_items=3, members_count=1, status="running")
    run.members.set([member])
    batch = CouncilBatch.objects.create(run=run, member=member, item_ids=[], holder="task-1",
                                        lease_until=timezone.now() + timedelta(minutes=5))
    browser_login(page, author)
    page.goto(f"/council/runs/{run.pk}/")
    row = page.locator('tr[data-member="m1"]')
    expect(row.locator(".state-name")).to_have_text("calling")

    council_batch_waiting(batch_id=batch.pk, seconds=60, reason="429 rate limited: slow down — retry 1 of at most 5")
    expect(row.locator(".state-name")).to_have_text("retrying", timeout=5000)
    expect(row.locator(".state-detail")).to_contain_text("429 rate limited: slow down")
    expect(row.locator(".state-detail")).to_contain_text("next try in")
    assert page.locator("#cancel-form").count() == 1

    for item in small_twist.items.all():
        CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="twist-b-v1",
                                   values={"q1": "consistent"})
    CouncilRun.objects.filter(pk=run.pk).update(status="finished", finished_at=timezone.now())
    expect(page.locator("#run-status")).to_have_text("finished", timeout=5000)
    expect(row.locator(".state-name")).to_have_text("done")
    expect(page.locator("#cancel-form")).to_have_count(0)
