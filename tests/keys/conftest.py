"""Keys are frozen from adjudicated campaigns: the key tests build on the adjudication fixtures."""

import pytest

from keys.services import key_build
from tests.adjudication.conftest import *  # noqa: F403
from tests.adjudication.conftest import decide


@pytest.fixture
def decided(key_campaign, author):
    """The key campaign with its two queued items decided (one dropped, one kept)."""
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    return key_campaign


@pytest.fixture
def draft(decided, author):
    """A draft key built from the decided campaign."""
    return key_build(campaign=decided, version="TWIST-test-draft", user=author)


def run_job(client, response, *, follow: bool = True):
    """A key page's POST started a job (303 to the job's page): run it here as the worker's task would (a test
    without a worker), then open the job's page — a done job's page leads on to the key."""
    from django.urls import resolve

    from keys.jobs import key_job_run

    assert response.status_code == 303, f"expected the job's page, got {response.status_code}"
    match = resolve(response["Location"])
    assert match.view_name == "keys:job"
    key_job_run(job_id=match.kwargs["pk"])
    return client.get(response["Location"], follow=follow)


def run_queued_jobs() -> list:
    """Run every queued key job here, as the worker would (for starts that do not lead to one job's page)."""
    from keys.jobs import key_job_run
    from keys.models import KeyJob

    return [key_job_run(job_id=pk) for pk in KeyJob.objects.filter(status="queued").order_by("pk").values_list("pk", flat=True)]
