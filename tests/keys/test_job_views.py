"""The key pages start jobs: every method and persona on the three starts, the job's page and its JSON."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from keys import jobs
from keys.models import GoldKey, KeyJob
from keys.services import erratum_decide, erratum_file
from tests.keys.conftest import run_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def derivable(frozen_key, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0002", kind="drop", description="dup", user=author)
    erratum_decide(erratum=erratum, accept=True, note="yes", user=author)
    return frozen_key


@pytest.fixture
def starts(decided, draft, author):
    """(url, the form that starts a job) for each of the three starts."""
    return {
        "build": (reverse("keys:build", args=[decided.slug]), {"version": "TWIST-test-draft"}),
        "freeze": (reverse("keys:freeze", args=[draft.version]), {"confirm": "yes", "below_bar": "yes"}),
    }


def _job_url(response) -> str:
    assert response.status_code == 303
    assert response["Location"].startswith("/keys/jobs/")
    return response["Location"]


@pytest.mark.parametrize("start", ["build", "freeze"])
def test_an_author_starts_a_job_and_is_sent_to_its_page_with_303(client, starts, author, start):
    client.force_login(author)
    url, form = starts[start]
    location = _job_url(client.post(url, form))
    job = KeyJob.objects.get()
    assert location == reverse("keys:job", args=[job.pk]) and job.action == start and job.status == "queued"
    page = client.get(location)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="job"' in html and reverse("keys:job-progress", args=[job.pk]) in html
    assert "keys/job.js" in html and '<meta http-equiv="refresh"' in html  # polls, or reloads without JS


def test_an_author_starts_a_derive_and_is_sent_to_its_page(client, derivable, author):
    client.force_login(author)
    location = _job_url(client.post(reverse("keys:derive", args=[derivable.version]), {"version": "TWIST-test-v1.1"}))
    job = KeyJob.objects.get()
    assert (job.action, job.key, job.version) == ("derive", derivable, "TWIST-test-v1.1")
    assert location == reverse("keys:job", args=[job.pk])
    assert not GoldKey.objects.filter(version="TWIST-test-v1.1").exists()  # the worker derives it


@pytest.mark.parametrize("start", ["build", "freeze"])
def test_annotators_outsiders_and_anonymous_users_start_no_job(client, starts, annotator_a, outsider, start):
    url, form = starts[start]
    anonymous = client.post(url, form)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    for user in (annotator_a, outsider):
        client.force_login(user)
        assert client.post(url, form).status_code in (403, 404)
    assert not KeyJob.objects.exists()


def test_annotators_and_anonymous_users_start_no_derive(client, derivable, annotator_a, outsider):
    url = reverse("keys:derive", args=[derivable.version])
    assert client.post(url, {"version": "X-v1.1"}).status_code == 302
    for user in (annotator_a, outsider):
        client.force_login(user)
        assert client.post(url, {"version": "X-v1.1"}).status_code == 403
        assert client.get(url).status_code == 403
    assert not KeyJob.objects.exists()


def test_the_starts_answer_only_their_methods(client, starts, author):
    client.force_login(author)
    build, _ = starts["build"]
    freeze, _ = starts["freeze"]
    assert client.get(build).status_code == 200 and client.get(freeze).status_code == 405
    for url in (build, freeze):
        assert client.put(url).status_code == 405 and client.delete(url).status_code == 405
    assert not KeyJob.objects.exists()


def test_the_derive_previews_on_get_and_starts_only_on_post(client, derivable, author):
    client.force_login(author)
    derive = reverse("keys:derive", args=[derivable.version])
    assert 'data-testid="derive-preview"' in client.get(derive).content.decode()
    assert client.put(derive).status_code == 405 and client.delete(derive).status_code == 405
    assert not KeyJob.objects.exists()


def test_a_second_freeze_while_one_is_queued_shows_the_open_job(client, starts, author):
    client.force_login(author)
    url, form = starts["freeze"]
    first = _job_url(client.post(url, form))
    second = client.post(url, form, follow=True)
    assert second.redirect_chain == [(first, 303)]
    assert "A job to freeze a draft TWIST-test-draft is already queued: here it is." in second.content.decode()
    assert KeyJob.objects.count() == 1


def test_the_job_page_and_its_json_are_for_authors_only(client, starts, author, annotator_a, outsider):
    client.force_login(author)
    url, form = starts["freeze"]
    job = KeyJob.objects.get(pk=client.post(url, form)["Location"].split("/")[-2])
    page, data = reverse("keys:job", args=[job.pk]), reverse("keys:job-progress", args=[job.pk])
    client.logout()
    for target in (page, data):
        response = client.get(target)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    for user in (annotator_a, outsider):
        client.force_login(user)
        for target in (page, data):
            assert client.get(target).status_code == 403
            assert "TWIST-test-draft" not in client.get(target).content.decode()
    client.force_login(author)
    for target in (page, data):
        assert client.post(target).status_code == 405 and client.put(target).status_code == 405
    assert client.get(reverse("keys:job", args=[job.pk + 1])).status_code == 404
    assert client.get(reverse("keys:job-progress", args=[job.pk + 1])).status_code == 404


def test_the_json_endpoint_reports_the_job_in_a_constant_number_of_queries(client, starts, author):
    client.force_login(author)
    url, form = starts["freeze"]
    job = KeyJob.objects.get(pk=client.post(url, form)["Location"].split("/")[-2])
    with CaptureQueriesContext(connection) as queries:
        data = client.get(reverse("keys:job-progress", args=[job.pk])).json()
    assert data["status"] == "queued" and data["stage"] == "queued" and data["version"] == "TWIST-test-draft"
    assert data["action"] == "freeze" and data["ended"] is False and data["error"] == "" and data["result"] == ""
    assert data["elapsed"].startswith("queued since ")
    # The session, the user and their groups, the job with its rows, and the draft's own read rule (the
    # key, its publication and whether it is hidden from this user, in one query).
    assert len(queries) == 5
    KeyJob.objects.filter(pk=job.pk).update(status="running", started_at=timezone.now(), stage="checking the draft")
    data = client.get(reverse("keys:job-progress", args=[job.pk])).json()
    assert data["status"] == "running" and data["stage"] == "checking the draft"
    assert data["elapsed"].startswith("running since ")


def test_the_page_says_plainly_when_no_worker_picks_the_job_up(client, starts, author):
    client.force_login(author)
    url, form = starts["freeze"]
    location = client.post(url, form)["Location"]
    job = KeyJob.objects.get()
    assert 'data-testid="job-note" hidden' in client.get(location).content.decode()
    KeyJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=jobs.NO_WORKER_AFTER + 1))
    html = client.get(location).content.decode()
    assert "no worker is running. Start one with `celery -A goldkey worker --loglevel=INFO`" in html
    data = client.get(reverse("keys:job-progress", args=[job.pk])).json()
    assert data["no_worker"] is True and "no worker is running" in data["note"]


def test_a_done_job_leads_to_its_key_and_a_failed_one_shows_the_refusal(client, starts, author):
    client.force_login(author)
    url, form = starts["build"]
    done = run_job(client, client.post(url, form))
    assert done.redirect_chain[-1] == (reverse("keys:detail", args=["TWIST-test-draft"]), 302)
    # Building another key line from the same campaign is refused by the service, now on the job's page.
    refused = run_job(client, client.post(url, {"version": "OTHER-v1.0"}))
    html = refused.content.decode()
    assert refused.status_code == 200 and 'data-testid="job-error"' in html
    assert "campaign &#x27;small&#x27; already has key line &#x27;TWIST-test-draft&#x27;" in html
    assert reverse("keys:build", args=["small"]) in html and "keys/job.js" not in html
    assert "Traceback" not in html


def test_the_key_page_links_an_author_to_its_open_jobs_and_nobody_else(client, derivable, author, annotator_a, outsider):
    detail = reverse("keys:detail", args=[derivable.version])
    client.force_login(author)
    assert 'data-testid="open-job"' not in client.get(detail).content.decode()  # no job: no notice
    job, _ = jobs.key_job_start(action=KeyJob.Action.DERIVE, user=author, key=derivable, version="TWIST-test-v1.1")
    page = client.get(detail).content.decode()
    assert 'data-testid="open-job"' in page and reverse("keys:job", args=[job.pk]) in page
    for other in (annotator_a, outsider):  # a job's page is for authors only: no link to it either
        client.force_login(other)
        response = client.get(detail)
        assert response.status_code in (200, 404)
        assert reverse("keys:job", args=[job.pk]) not in response.content.decode()
    jobs.key_job_run(job_id=job.pk)  # done: the notice goes
    client.force_login(author)
    assert 'data-testid="open-job"' not in client.get(detail).content.decode()
