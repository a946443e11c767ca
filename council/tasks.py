"""Celery tasks for the council and the gates: thin — ids in, one service call, explicit retries."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from council import conf
from council.client import TransientCallError
from council.throttle import Throttled


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,  # throttling waits are unbounded; transient API errors are counted in `attempt`
    soft_time_limit=conf.soft_time_limit(),
    time_limit=conf.hard_time_limit(),
)
def council_vote(self, run_id: int, member_id: int, item_id: int, attempt: int = 0):
    from council import services

    kwargs = {"run_id": run_id, "member_id": member_id, "item_id": item_id}
    try:
        services.council_vote_produce(**kwargs, holder=self.request.id or f"local-{run_id}-{member_id}-{item_id}", attempt=attempt)
    except Throttled as exc:
        raise self.retry(kwargs={**kwargs, "attempt": attempt}, countdown=exc.wait) from None
    except (TransientCallError, SoftTimeLimitExceeded) as exc:
        reason = str(exc) or "soft time limit exceeded"
        if attempt >= conf.max_transient_retries():
            services.council_vote_give_up(**kwargs, error=f"gave up after {attempt + 1} attempts: {reason}", attempts=attempt + 1)
            return
        delay = services.retry_delay(attempt, getattr(exc, "retry_after", None))
        raise self.retry(kwargs={**kwargs, "attempt": attempt + 1}, countdown=delay) from None


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, soft_time_limit=600, time_limit=660)
def gates_run_task(self, item_set_id: int, llm_member_id: int | None = None):
    from council import gates

    gates.gates_run(item_set_id=item_set_id, llm_member_id=llm_member_id)


@shared_task(bind=True, acks_late=True, soft_time_limit=conf.soft_time_limit(), time_limit=conf.hard_time_limit())
def lapse_judge_output(self, item_id: int, member_id: int, attempt: int = 0):
    """Judge one Lapse behaviour output (lapse branch): ids in, one service call, explicit retries."""
    from lapse import services as lapse_services

    try:
        lapse_services.lapse_output_judge(item_id=item_id, member_id=member_id)
    except TransientCallError as exc:
        if attempt >= conf.max_transient_retries():
            raise
        from council import services

        delay = services.retry_delay(attempt, getattr(exc, "retry_after", None))
        raise self.retry(args=(item_id, member_id, attempt + 1), countdown=delay) from None


@shared_task(bind=True, acks_late=True, soft_time_limit=conf.soft_time_limit(), time_limit=conf.hard_time_limit())
def lapse_generate_output(self, stimulus_id: int, member_id: int, item_set_name: str = "Lapse outputs", attempt: int = 0):
    """A council member answers one Lapse stimulus (lapse branch); idempotent, explicit retries."""
    from lapse import services as lapse_services

    try:
        lapse_services.lapse_output_generate(stimulus_id=stimulus_id, member_id=member_id, item_set_name=item_set_name)
    except TransientCallError as exc:
        if attempt >= conf.max_transient_retries():
            raise
        from council import services

        delay = services.retry_delay(attempt, getattr(exc, "retry_after", None))
        raise self.retry(args=(stimulus_id, member_id, item_set_name, attempt + 1), countdown=delay) from None
