"""Celery tasks for gold keys: thin — a job id in, the run service called."""

from celery import shared_task
from django.conf import settings

from keys import jobs


@shared_task(
    bind=True,
    acks_late=True,  # a worker lost mid-freeze leaves the message to be delivered again: the run is idempotent
    reject_on_worker_lost=True,
    # A freeze is one transaction: past the soft limit it is rolled back and the job fails; the hard limit is
    # in the visibility timeout (goldkey/settings.py), so a job still running is never handed out twice.
    soft_time_limit=max(1, settings.KEY_JOB_TIME_LIMIT - 60),
    time_limit=settings.KEY_JOB_TIME_LIMIT,
)
def key_job_task(self, job_id: int) -> str | None:
    job = jobs.key_job_run(job_id=job_id)
    return job.status if job is not None else None
