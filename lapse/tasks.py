"""Celery tasks for the Lapse wing: thin — ids in, one service call, explicit retries on the transient
errors of an OpenAI-compatible endpoint (429, 5xx, timeouts) with the council's backoff."""

from celery import shared_task

from council import conf
from council.client import TransientCallError
from council.services import retry_delay
from lapse import services


@shared_task(bind=True, acks_late=True, soft_time_limit=conf.soft_time_limit(), time_limit=conf.hard_time_limit())
def lapse_judge_output(self, item_id: int, member_id: int, attempt: int = 0):
    """Judge one Lapse behaviour output."""
    try:
        services.lapse_output_judge(item_id=item_id, member_id=member_id)
    except TransientCallError as exc:
        if attempt >= conf.max_transient_retries():
            raise
        raise self.retry(args=(item_id, member_id, attempt + 1), countdown=retry_delay(attempt, exc.retry_after)) from None


@shared_task(bind=True, acks_late=True, soft_time_limit=conf.soft_time_limit(), time_limit=conf.hard_time_limit())
def lapse_generate_output(self, stimulus_id: int, member_id: int, item_set_name: str = "Lapse outputs", attempt: int = 0):
    """A council member answers one Lapse stimulus; idempotent (an existing output is not asked again)."""
    try:
        services.lapse_output_generate(stimulus_id=stimulus_id, member_id=member_id, item_set_name=item_set_name)
    except TransientCallError as exc:
        if attempt >= conf.max_transient_retries():
            raise
        delay = retry_delay(attempt, exc.retry_after)
        raise self.retry(args=(stimulus_id, member_id, item_set_name, attempt + 1), countdown=delay) from None
