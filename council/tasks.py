"""Celery tasks for the council and the gates: thin — ids in, one service call, explicit retries — and the
worker's sweep timer."""

import logging
import threading
import time

from celery import shared_task
from celery.signals import worker_process_init, worker_ready, worker_shutdown
from django.conf import settings

from council import conf
from council.throttle import Throttled

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,  # only "no slot free" retries here; the API's transient errors are retried inside the vote
    soft_time_limit=conf.soft_time_limit(),
    time_limit=conf.hard_time_limit(),
)
def council_batch(self, batch_id: int):
    """One member's batch of a run: up to the member's concurrency of requests in flight in this process."""
    from council import execution

    started = time.monotonic()
    try:
        return execution.batch_work(batch_id=batch_id, holder=self.request.id or f"local-{batch_id}", started=started)
    except Throttled as exc:
        raise self.retry(countdown=exc.wait) from None


@shared_task
def council_sweep():
    """The sweep as a task, for deployments that schedule it with Celery beat; every worker also runs it on
    its own timer (below), so `make demo` and CI need no beat."""
    from council import services

    return services.council_sweep()


class _SweepTimer:
    """Each worker sweeps every COUNCIL_SWEEP_INTERVAL seconds in a thread of its main process: not as a task,
    which would wait behind long batches when every pool process is busy. Re-sends are compare-and-set on
    the batch rows, so several workers sweeping at once send each lost batch once."""

    def __init__(self):
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.thread is None and conf.sweep_interval() > 0:
            self.thread = threading.Thread(target=self._loop, name="council-sweep", daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        from django.db import connections

        from council import services

        while not self.stop.wait(conf.sweep_interval()):
            try:
                result = services.council_sweep()
                if result["resent"] or result["stalled"]:
                    logger.warning("council sweep: %s", result)
            except Exception:  # the database or broker is away: try again next time
                logger.exception("council sweep failed")
            finally:
                connections.close_all()  # this thread's connections only; none stays open between sweeps


_sweep_timer = _SweepTimer()


@worker_process_init.connect
def _warm_up_the_client(**kwargs):
    from council.client import warm_up

    warm_up()


@worker_ready.connect
def _start_sweep_timer(**kwargs):
    _sweep_timer.start()


@worker_shutdown.connect
def _stop_sweep_timer(**kwargs):
    _sweep_timer.stop.set()


@shared_task(
    bind=True, acks_late=True, reject_on_worker_lost=True,
    soft_time_limit=max(1, settings.GATES_TIME_LIMIT - 60), time_limit=settings.GATES_TIME_LIMIT,
)
def gates_run_task(self, item_set_id: int, llm_member_id: int | None = None):
    from council import gates

    gates.gates_run(item_set_id=item_set_id, llm_member_id=llm_member_id)
