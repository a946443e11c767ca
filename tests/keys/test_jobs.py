"""Key jobs (keys/jobs.py): start, run to done or to the service's refusal, one open job per target, the
stages the page reads while the service's transaction is open, and the reads behind the job's page."""

import logging
import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from adjudication.models import Decision
from annotation.models import Enrollment
from goldkey.errors import NotAllowed, NotFound
from keys import jobs
from keys import services as key_services
from keys.models import Erratum, GoldKey, KeyJob
from keys.services import erratum_decide, erratum_file, key_build
from tests.adjudication.conftest import decide

pytestmark = pytest.mark.django_db


def _start_freeze(draft, author):
    return jobs.key_job_start(action=KeyJob.Action.FREEZE, key=draft, version=draft.version, user=author)


def test_a_start_queues_a_job_and_enqueues_it_once_the_row_is_committed(draft, author, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        job, created = _start_freeze(draft, author)
    assert created and len(callbacks) == 1
    job.refresh_from_db()
    assert (job.status, job.action, job.version, job.key, job.campaign) == (
        "queued", "freeze", "TWIST-test-draft", draft, draft.campaign)
    assert job.requested_by == author and job.target == f"campaign:{draft.campaign_id}"


def test_only_authors_start_a_job(draft, annotator_a):
    with pytest.raises(NotAllowed):
        _start_freeze(draft, annotator_a)
    assert not KeyJob.objects.exists()


def test_a_second_start_on_the_same_target_is_the_open_job(draft, author, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        first, _ = _start_freeze(draft, author)
        second, created = _start_freeze(draft, author)
        # A build of the same campaign's key line waits for the freeze too: both rewrite it.
        build, build_created = jobs.key_job_start(
            action=KeyJob.Action.BUILD, campaign=draft.campaign, version=draft.version, user=author)
    assert second.pk == first.pk and build.pk == first.pk and not created and not build_created
    assert KeyJob.objects.count() == 1 and len(callbacks) == 1


def test_the_database_allows_one_open_job_per_target(draft, author):
    KeyJob.objects.create(action="freeze", target="campaign:1", version="v", requested_by=author)
    with pytest.raises(IntegrityError), transaction.atomic():
        KeyJob.objects.create(action="freeze", target="campaign:1", version="v", requested_by=author, status="running")
    KeyJob.objects.filter(target="campaign:1").update(status="failed")
    KeyJob.objects.create(action="freeze", target="campaign:1", version="v", requested_by=author)  # the next one
    assert KeyJob.objects.filter(target="campaign:1").count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_double_start_at_the_same_moment_makes_one_job(draft, author, monkeypatch):
    enqueued = []
    monkeypatch.setattr(jobs, "_enqueue", enqueued.append)  # no broker here: the worker tests send for real
    barrier = threading.Barrier(2)
    results, errors = [], []

    def start():
        try:
            barrier.wait(5)
            results.append(_start_freeze(draft, author))
        except Exception as exc:  # reported below: a thread's exception would otherwise vanish
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert len({job.pk for job, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, True]
    assert KeyJob.objects.count() == 1 and len(enqueued) == 1


def test_a_run_freezes_the_draft_and_the_job_is_done_with_the_key(draft, author):
    job, _ = _start_freeze(draft, author)
    job = jobs.key_job_run(job_id=job.pk)
    draft.refresh_from_db()
    assert job.status == "done" and job.stage == "done" and job.result == draft and draft.is_frozen
    assert job.error == "" and job.started_at and job.finished_at >= job.started_at
    assert draft.release is not None


def test_a_run_the_service_refuses_fails_with_its_message_and_writes_nothing(draft, author):
    job, _ = _start_freeze(draft, author)
    Decision.objects.filter(campaign=draft.campaign, item__external_id="s-0004").update(action="drop")
    job = jobs.key_job_run(job_id=job.pk)
    draft.refresh_from_db()
    assert job.status == "failed" and not draft.is_frozen and job.result is None
    assert job.error == ("the decisions of 'small' changed since draft 'TWIST-test-draft' was built: "
                         "rebuild it and review it again")


def test_an_unexpected_error_fails_plainly_and_logs_its_traceback(draft, author, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("the secret internals")

    monkeypatch.setattr(key_services, "key_freeze_draft", broken)
    job, _ = _start_freeze(draft, author)
    with caplog.at_level(logging.ERROR, logger="keys.jobs"):
        job = jobs.key_job_run(job_id=job.pk)
    assert job.status == "failed" and job.error == "failed: unexpected error, see the server log"
    record = next(r for r in caplog.records if r.name == "keys.jobs")
    assert record.exc_info and "the secret internals" in str(record.exc_info[1])
    assert jobs.job_progress(job)["error"] == "failed: unexpected error, see the server log"


def test_a_job_past_its_soft_time_limit_fails_saying_so(draft, author, monkeypatch, settings):
    from celery.exceptions import SoftTimeLimitExceeded

    def slow(**kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(key_services, "key_freeze_draft", slow)
    job, _ = _start_freeze(draft, author)
    job = jobs.key_job_run(job_id=job.pk)
    assert job.status == "failed"
    assert job.error.startswith(f"failed: it ran past its time limit ({settings.KEY_JOB_TIME_LIMIT} s, KEY_JOB_TIME_LIMIT)")


def test_a_job_running_past_its_time_limit_says_its_worker_was_stopped(draft, author, settings):
    job, _ = _start_freeze(draft, author)
    KeyJob.objects.filter(pk=job.pk).update(
        status="running", started_at=timezone.now() - timedelta(seconds=settings.KEY_JOB_TIME_LIMIT + 61))
    note = jobs.job_progress(KeyJob.objects.get(pk=job.pk))["note"]
    assert "past the job's time limit: its worker was stopped" in note


def test_a_build_and_a_derive_run_through_their_services(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    build, _ = jobs.key_job_start(action="build", campaign=key_campaign, version="T-v1.0", notes="first", user=author)
    build = jobs.key_job_run(job_id=build.pk)
    assert build.status == "done" and build.result.version == "T-v1.0" and build.result.notes == "first"
    assert build.result.status == GoldKey.Status.DRAFT and build.result.entries.count() == 8
    parent = key_services.key_freeze_draft(key=build.result, user=author)
    erratum = erratum_file(key=parent, item_external_id="s-0002", kind="drop", description="dup", user=author)
    erratum_decide(erratum=erratum, accept=True, note="yes", user=author)
    derive, _ = jobs.key_job_start(action="derive", key=parent, version="T-v1.1", user=author)
    assert derive.target == f"key:{parent.pk}"
    derive = jobs.key_job_run(job_id=derive.pk)
    assert derive.status == "done" and derive.result.version == "T-v1.1" and derive.result.is_frozen
    assert Erratum.objects.get(pk=erratum.pk).applied_in == derive.result


def test_a_job_already_ended_is_not_run_again_when_delivered_twice(draft, author):
    job, _ = _start_freeze(draft, author)
    jobs.key_job_run(job_id=job.pk)
    again = jobs.key_job_run(job_id=job.pk)  # without the guard: "already frozen", and the done job failed
    assert again.status == "done" and again.result == draft


def test_a_job_delivered_again_after_its_worker_was_lost_runs_again(draft, author):
    job, _ = _start_freeze(draft, author)
    KeyJob.objects.filter(pk=job.pk).update(status="running", started_at=timezone.now(), stage="reading the campaign")
    assert jobs.key_job_run(job_id=job.pk).status == "done"


def test_an_abandoned_job_no_longer_holds_its_target(draft, author, settings):
    old, _ = _start_freeze(draft, author)
    long_ago = timezone.now() - timedelta(seconds=settings.KEY_JOB_TIME_LIMIT + 61)
    # Queued long ago but started just now: still running, still holding its target.
    KeyJob.objects.filter(pk=old.pk).update(status="running", created_at=long_ago, started_at=timezone.now())
    assert _start_freeze(draft, author) == (old, False)
    KeyJob.objects.filter(pk=old.pk).update(started_at=long_ago)
    new, created = _start_freeze(draft, author)
    old.refresh_from_db()
    assert created and new.pk != old.pk
    assert old.status == "failed" and "no worker finished this job within its time limit" in old.error


def test_the_progress_callback_reports_stages_and_changes_no_query(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    key_build(campaign=key_campaign, version="T-v1.0", user=author)
    with CaptureQueriesContext(connection) as plain:  # a rebuild, as the one below
        first = key_build(campaign=key_campaign, version="T-v1.0", user=author)
    stages = []
    with CaptureQueriesContext(connection) as reported:
        second = key_build(campaign=key_campaign, version="T-v1.0", user=author, progress=stages.append)
    assert stages == ["reading the campaign", "writing the entries"]
    assert second.sha256 == first.sha256 and len(reported) == len(plain)
    frozen_stages = []
    key_services.key_freeze_draft(key=second, user=author, progress=frozen_stages.append)
    assert frozen_stages == ["reading the campaign", "checking the draft", "sealing the release"]


def _stage_seen_elsewhere(job_id: int) -> str:
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(f"SELECT stage FROM {KeyJob._meta.db_table} WHERE id = %s", [job_id])
            return cursor.fetchone()[0]
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_stages_are_readable_by_another_connection_while_the_freeze_transaction_is_open(
    frozen_rows_teardown, draft, author, monkeypatch
):
    monkeypatch.setattr(jobs, "_enqueue", lambda job_id: None)  # run here, below
    job, _ = _start_freeze(draft, author)
    real, seen = key_services.key_freeze_draft, []

    def watched(**kwargs):
        report = kwargs.pop("progress")

        def progress(stage):
            report(stage)
            assert connection.in_atomic_block  # the freeze's transaction is open
            seen.append(_stage_seen_elsewhere(job.pk))

        return real(**kwargs, progress=progress)

    monkeypatch.setattr(key_services, "key_freeze_draft", watched)
    assert jobs.key_job_run(job_id=job.pk).status == "done"
    if connection.vendor == "sqlite":
        # One writer, held by the freeze: no stage is written meanwhile, and the page says why.
        assert seen == ["starting"] * 3
        KeyJob.objects.filter(pk=job.pk).update(status="running")
        assert "SQLite" in jobs.job_progress(KeyJob.objects.get(pk=job.pk))["note"]
    else:
        assert seen == ["reading the campaign", "checking the draft", "sealing the release"]


def test_job_progress_says_when_no_worker_has_picked_the_job_up(draft, author):
    job, _ = _start_freeze(draft, author)
    fresh = jobs.job_progress(job)
    assert fresh["status"] == "queued" and not fresh["no_worker"] and fresh["note"] == ""
    KeyJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=jobs.NO_WORKER_AFTER + 5))
    waiting = jobs.job_progress(KeyJob.objects.get(pk=job.pk))
    assert waiting["no_worker"] and "no worker is running. Start one with `celery -A goldkey worker" in waiting["note"]


def test_only_authors_who_may_read_its_campaign_open_a_job(draft, author, annotator_b, admin_user, key_campaign):
    job, _ = _start_freeze(draft, admin_user)
    assert jobs.get_job_for_user(job.pk, author) == job
    with pytest.raises(NotAllowed):
        jobs.get_job_for_user(job.pk, annotator_b)
    with pytest.raises(NotFound):
        jobs.get_job_for_user(job.pk + 1, author)
    # The author annotates this campaign again and has not handed in: blind to its gold, and to the job.
    Enrollment.objects.filter(campaign=key_campaign, annotator=author).update(submitted_at=None, ended_at=None)
    with pytest.raises(NotFound):
        jobs.get_job_for_user(job.pk, author)
