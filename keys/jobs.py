"""Key jobs: a build, freeze or derive started from a key page and run by a worker, so that a 100,000-item
freeze neither outlives the web server's request timeout nor leaves the author before a spinning tab.

Writes: `key_job_start` (the row, the task enqueued on commit), `key_job_run` (the worker's side: the
existing key service, unchanged, with a progress callback). Reads for the job's page: `get_job_for_user`,
`job_progress`. The management commands stay synchronous: they are the long-work path for scripts.
"""

import logging
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, IntegrityError, connection, connections, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation import access
from annotation.models import Campaign
from goldkey import roles
from goldkey.errors import ApplicationError, NotFound
from keys import services as key_services
from keys.models import GoldKey, KeyJob
from keys.selectors import get_key_for_user

logger = logging.getLogger(__name__)

Action, Status = KeyJob.Action, KeyJob.Status

NO_WORKER_AFTER = 15  # seconds a job may wait in the queue before its page says no worker is running
WORKER_COMMAND = "celery -A goldkey worker --loglevel=INFO"
UNEXPECTED = "failed: unexpected error, see the server log"
STARTING, DONE = "starting", "done"


def _require_author(user) -> None:
    roles.require_author(user, message="only authors may build, freeze or derive gold keys")


def _abandoned_after() -> timedelta:
    """An open job older than this was lost with its worker (killed past the task's hard limit, or a message
    that never arrived): it no longer holds its target."""
    return timedelta(seconds=settings.KEY_JOB_TIME_LIMIT + 60)


def _target(*, action: str, campaign: Campaign | None, key: GoldKey | None) -> str:
    # A build and a freeze both rewrite the campaign's key line under its lock: one of them at a time.
    if action in (Action.BUILD, Action.FREEZE) and campaign is not None:
        return f"campaign:{campaign.pk}"
    return f"key:{key.pk}"


def key_job_start(
    *, action: str, user, version: str, campaign: Campaign | None = None, key: GoldKey | None = None, notes: str = ""
) -> tuple[KeyJob, bool]:
    """A queued job for `action` (build: campaign + version; freeze: the draft `key`; derive: the parent
    `key` + version), and True; or the job already open on the same target, and False — a double click or a
    second tab never starts a second freeze (the database's partial unique constraint decides a race)."""
    _require_author(user)
    if action in (Action.BUILD, Action.DERIVE) and version:
        key_services.key_version_check(version=version)  # refused in the request, not later in the worker
    if action == Action.BUILD:
        if campaign is None or not version:
            raise ApplicationError("a build needs a campaign and a version")
    elif action == Action.FREEZE:
        if key is None:
            raise ApplicationError("a freeze needs the draft key")
        campaign, version = key.campaign, key.version
    elif action == Action.DERIVE:
        if key is None or not version:
            raise ApplicationError("a derive needs the parent key and the new version")
    else:
        raise ApplicationError(f"'{action}' is not a key job: choose one of {', '.join(Action.values)}")
    target = _target(action=action, campaign=campaign, key=key)
    with transaction.atomic():
        now = timezone.now()
        horizon = now - _abandoned_after()
        abandoned = Q(status=Status.QUEUED, created_at__lt=horizon) | Q(status=Status.RUNNING, started_at__lt=horizon)
        KeyJob.objects.filter(abandoned, target=target).update(
            status=Status.FAILED, finished_at=now,
            error="failed: no worker finished this job within its time limit (the worker was stopped); start it again",
        )
        existing = KeyJob.objects.filter(target=target, status__in=KeyJob.OPEN).first()
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():  # a savepoint: a concurrent start may have taken the target meanwhile
                job = KeyJob.objects.create(
                    action=action, target=target, campaign=campaign, key=key, version=version, notes=notes,
                    requested_by=user,
                )
        except IntegrityError:
            return KeyJob.objects.get(target=target, status__in=KeyJob.OPEN), False
        transaction.on_commit(lambda: _enqueue(job.pk))
    return job, True


def _enqueue(job_id: int) -> None:
    from keys.tasks import key_job_task  # the task module imports this one: import at call time

    try:
        key_job_task.delay(job_id)
    except BrokerError:
        # The row is committed; without a message no worker will ever take it, so say so on its page.
        logger.exception("key job %s: the broker refused the task", job_id)
        KeyJob.objects.filter(pk=job_id, status=Status.QUEUED).update(
            status=Status.FAILED, finished_at=timezone.now(),
            error="failed: the job could not be handed to a worker (the task broker is unreachable); see the server log",
        )


class _StageReporter:
    """The service's `progress` callback: each stage written where the job's page can read it while the
    service's transaction is still open. On PostgreSQL that is a connection of its own in autocommit: each
    stage is committed at once, and it never waits, because the service's transaction writes the job row
    only after the last stage. SQLite has one writer and the service holds it from its first statement
    (transaction_mode IMMEDIATE): a second connection would wait for the whole run and then fail. There the
    stages are not written and the page shows how long the job has been running instead."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.side = connections.create_connection(DEFAULT_DB_ALIAS) if stages_shown() else None

    def __call__(self, stage: str) -> None:
        if self.side is None:
            return
        table = self.side.ops.quote_name(KeyJob._meta.db_table)
        try:
            with self.side.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET stage = %s WHERE id = %s AND status = %s", [stage, self.job_id, Status.RUNNING]
                )
        except DatabaseError:  # a stage is a courtesy: never the reason a freeze fails
            logger.warning("key job %s: could not record the stage %r", self.job_id, stage, exc_info=True)
            self.close()

    def close(self) -> None:
        if self.side is not None:
            self.side.close()
            self.side = None


def stages_shown() -> bool:
    return connection.vendor != "sqlite"  # see _StageReporter


def _service_call(job: KeyJob, progress) -> GoldKey:
    """The existing key service for the job's action, as the page used to call it in its request."""
    user = job.requested_by
    if job.action == Action.BUILD:
        return key_services.key_build(
            campaign=job.campaign, version=job.version, user=user, notes=job.notes, progress=progress
        )
    if job.action == Action.FREEZE:
        return key_services.key_freeze_draft(key=job.key, user=user, progress=progress)
    return key_services.key_derive(parent=job.key, version=job.version, user=user, notes=job.notes, progress=progress)


def key_job_run(*, job_id: int) -> KeyJob | None:
    """Run a job (the worker's side): done with the key, or failed with the service's message. A job already
    done or failed is left as it is (a duplicate delivery); a running one is run again — it was delivered
    again because its worker was lost, and its work rolled back with that worker's transaction."""
    claimed = KeyJob.objects.filter(pk=job_id, status__in=KeyJob.OPEN).update(
        status=Status.RUNNING, started_at=timezone.now(), stage=STARTING
    )
    job = KeyJob.objects.select_related("campaign", "key", "requested_by").filter(pk=job_id).first()
    if job is None:
        logger.warning("key job %s does not exist", job_id)
        return None
    if not claimed:
        return job
    reporter = _StageReporter(job.pk)
    try:
        with transaction.atomic():
            key = _service_call(job, reporter)
            # In the service's transaction: the job is done exactly when the key is written.
            KeyJob.objects.filter(pk=job.pk).update(
                status=Status.DONE, stage=DONE, result=key, error="", finished_at=timezone.now()
            )
    except ApplicationError as exc:
        _failed(job.pk, exc.message)
    except SoftTimeLimitExceeded:  # the task's soft limit, raised inside the service: its transaction rolled back
        logger.error("key job %s (%s %s) ran past its time limit", job.pk, job.action, job.version)
        _failed(job.pk, f"failed: it ran past its time limit ({settings.KEY_JOB_TIME_LIMIT} s, KEY_JOB_TIME_LIMIT); "
                        "nothing was written — start it again, or raise the limit")
    except Exception:  # anything else is a bug: its traceback goes to the log, never to the page
        logger.exception("key job %s (%s %s) failed unexpectedly", job.pk, job.action, job.version)
        _failed(job.pk, UNEXPECTED)
    finally:
        reporter.close()
    job.refresh_from_db()
    return job


def _failed(job_id: int, message: str) -> None:
    # Only a running job: if a duplicate delivery finished it meanwhile, its outcome stands.
    KeyJob.objects.filter(pk=job_id, status=Status.RUNNING).update(
        status=Status.FAILED, error=message, finished_at=timezone.now()
    )


# ---------------------------------------------------------------------------------------------
# Reads for the job's page


def get_job_for_user(job_id: int, user) -> KeyJob:
    """Authors only (NotAllowed), and only a job on a campaign or key the author may read (NotFound): an
    author annotating a campaign is blind to its gold, and a job's messages may name its items."""
    _require_author(user)
    job = KeyJob.objects.select_related("campaign", "key", "result").filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no key job {job_id}")
    if job.key is not None:  # a freeze's draft or a derive's parent: the key page's own rule
        get_key_for_user(job.key.version, user)
    elif job.campaign_id and access.blind_campaigns(user).filter(pk=job.campaign_id).exists():
        raise NotFound(f"no key job {job_id}")
    return job


def open_jobs_on_key(key: GoldKey, user) -> list[KeyJob]:
    """The queued or running jobs on a key (a freeze of it, a derive from it, a rebuild of its draft), for
    its page to link to: an author who left a job's page finds it again. Authors only: nobody else may
    open a job's page."""
    if not roles.is_author(user):
        return []
    on_key = Q(key=key)
    if not key.is_frozen and key.campaign_id is not None:
        on_key |= Q(action=Action.BUILD, campaign_id=key.campaign_id, version=key.version)
    return list(KeyJob.objects.filter(on_key, status__in=KeyJob.OPEN, created_at__gte=timezone.now() - _abandoned_after())
                .order_by("created_at"))


def _clock(when) -> str:
    return timezone.localtime(when).strftime("%H:%M:%S %Z")


def job_progress(job: KeyJob) -> dict:
    """What the job's page shows and polls: status, stage, how long, and what to do when nothing moves."""
    now = timezone.now()
    ended = job.status in (Status.DONE, Status.FAILED)
    note = ""
    if job.status == Status.QUEUED:
        waited = max(0, int((now - job.created_at).total_seconds()))
        elapsed = f"queued since {_clock(job.created_at)} ({waited} s)"
        if waited > NO_WORKER_AFTER:
            note = (f"No worker has picked this job up in {waited} s: no worker is running. Start one with "
                    f"`{WORKER_COMMAND}` (make demo starts one); this page carries on by itself once it runs.")
    elif job.status == Status.RUNNING:
        seconds = max(0, int((now - (job.started_at or job.created_at)).total_seconds()))
        elapsed = f"running since {_clock(job.started_at or job.created_at)} ({seconds} s)"
        if now - (job.started_at or job.created_at) > _abandoned_after():
            note = (f"No result after {seconds} s, past the job's time limit: its worker was stopped. Start it again "
                    "from the key page; the new start replaces this job.")
        elif not stages_shown():
            note = "This database (SQLite) has one writer and the job holds it: the stages show on PostgreSQL."
    else:
        begun = job.started_at or job.created_at
        seconds = max(0, int(((job.finished_at or now) - begun).total_seconds()))
        elapsed = f"{job.status} at {_clock(job.finished_at or now)} after {seconds} s"
    return {
        "job": job.pk,
        "action": job.action,
        "version": job.version,
        "status": job.status,
        "stage": job.stage or job.status,
        "elapsed": elapsed,
        "note": note,
        "no_worker": job.status == Status.QUEUED and bool(note),
        "ended": ended,
        "error": job.error if job.status == Status.FAILED else "",
        "result": job.result.version if job.status == Status.DONE and job.result_id else "",
    }
