"""A key job's page in real Chromium: a draft frozen from its page by a real worker, and the page that
waits for a worker, says so when none comes, and follows the job to its key."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from keys import jobs
from keys.models import GoldKey, KeyJob
from keys.services import key_build
from tests.adjudication.conftest import decide
from tests.conftest import browser_login, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def draft(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    return key_build(campaign=key_campaign, version="TWIST-job-v1.0", user=author)


def _freeze_from_the_page(page, draft) -> None:
    page.goto(f"/keys/{draft.version}/")
    page.check("input[name=confirm]")
    page.check("input[name=below_bar]")  # the small campaign's kept-set kappa is below the bar
    page.click("[data-testid=freeze-review] button[type=submit]")


@pytest.mark.worker
def test_an_author_freezes_a_draft_from_its_page_and_reaches_the_frozen_key(
    page, frozen_rows_teardown, celery_worker_process, draft, author
):
    browser_login(page, author)
    _freeze_from_the_page(page, draft)
    # Through the job's page (queued or running, polled) to the key page, by the worker's freeze.
    expect(page.locator("text=TWIST-job-v1.0 is frozen and its release sealed.")).to_be_visible(timeout=30_000)
    assert page.url.endswith("/keys/TWIST-job-v1.0/")
    assert GoldKey.objects.get(pk=draft.pk).is_frozen
    job = KeyJob.objects.get()
    assert (job.action, job.status, job.result_id) == ("freeze", "done", draft.pk)


def test_the_job_page_says_when_no_worker_runs_and_follows_the_job_to_its_key(page, frozen_rows_teardown, draft, author, monkeypatch):
    monkeypatch.setattr(jobs, "_enqueue", lambda job_id: None)  # no worker takes the job: the test runs it below
    browser_login(page, author)
    _freeze_from_the_page(page, draft)
    page.wait_for_selector("[data-testid=job]")
    assert page.locator("#job-status").inner_text() == "queued"
    expect(page.locator("[data-testid=job-note]")).to_be_hidden()
    job = KeyJob.objects.get()
    KeyJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=jobs.NO_WORKER_AFTER + 1))
    # The page's own polling shows it, without a reload.
    expect(page.locator("[data-testid=job-note]")).to_contain_text("no worker is running. Start one with", timeout=5000)
    save_screenshot(page, "key-job-no-worker")
    jobs.key_job_run(job_id=job.pk)  # what a worker would do
    expect(page.locator("text=TWIST-job-v1.0 is frozen and its release sealed.")).to_be_visible(timeout=5000)
    assert page.url.endswith("/keys/TWIST-job-v1.0/")
