"""Key jobs through a REAL Celery worker process on the configured broker and the test database."""

import pytest

from adjudication.models import Decision
from keys.jobs import key_job_start
from keys.models import GoldKey, KeyJob

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _ended(job_id: int):
    return KeyJob.objects.filter(pk=job_id, status__in=[KeyJob.Status.DONE, KeyJob.Status.FAILED]).first()


def test_a_worker_freezes_the_draft_of_a_job_started_on_commit(frozen_rows_teardown, celery_worker_process, draft, author):
    job, created = key_job_start(action=KeyJob.Action.FREEZE, key=draft, version=draft.version, user=author)
    assert created
    ended = celery_worker_process.wait_for(lambda: _ended(job.pk), timeout=60, what="the freeze job ending")
    assert ended.status == "done", (ended.error, celery_worker_process.log_tail())
    assert ended.result_id == draft.pk and ended.started_at and ended.finished_at
    frozen = GoldKey.objects.get(pk=draft.pk)
    assert frozen.is_frozen and frozen.release is not None
    # The job row is written inside the task; the worker logs "succeeded" only after the task returns.
    celery_worker_process.wait_for(
        lambda: "key_job_task" in celery_worker_process.log() and "succeeded" in celery_worker_process.log(),
        timeout=30, what="the worker logging the task's success",
    )


def test_a_worker_fails_the_job_with_the_services_message(frozen_rows_teardown, celery_worker_process, draft, author):
    Decision.objects.filter(campaign=draft.campaign, item__external_id="s-0004").update(action="drop")
    job, _ = key_job_start(action=KeyJob.Action.FREEZE, key=draft, version=draft.version, user=author)
    ended = celery_worker_process.wait_for(lambda: _ended(job.pk), timeout=60, what="the freeze job ending")
    assert ended.status == "failed"
    assert ended.error == ("the decisions of 'small' changed since draft 'TWIST-test-draft' was built: "
                           "rebuild it and review it again")
    assert not GoldKey.objects.get(pk=draft.pk).is_frozen


@pytest.fixture
def forking_from_one_row(monkeypatch):
    """The worker started after this renders every release's large part in a forked process."""
    monkeypatch.setenv("GOLDKEY_FORK_FROM_ROWS", "0")


def test_a_worker_forks_the_release_render_and_seals_the_release_the_rows_give(
    frozen_rows_teardown, forking_from_one_row, celery_worker_process, draft, author
):
    from keys import bundle
    from keys.releases import release_files
    from keys.selectors import bundle_data

    job, _ = key_job_start(action=KeyJob.Action.FREEZE, key=draft, version=draft.version, user=author)
    ended = celery_worker_process.wait_for(lambda: _ended(job.pk), timeout=60, what="the freeze job ending")
    assert ended.status == "done", (ended.error, celery_worker_process.log_tail())
    frozen = GoldKey.objects.get(pk=draft.pk)
    # A forked part that failed in the worker's process would have been rendered again there, and said so.
    assert "forked part" not in celery_worker_process.log()
    assert release_files(frozen) == bundle.render(bundle_data(frozen))
