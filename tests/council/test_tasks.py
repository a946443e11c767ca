"""Reliability with a REAL Celery worker process, the real broker and the local OpenAI-compatible server.

On PostgreSQL + Redis (CI) these always run. The kill test needs a broker with acknowledgements (Redis):
the file-system broker deletes a message when it is handed out, so a killed worker's tasks are recovered
there with `council_run --resume` instead (tested without a worker in test_services).
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.db import transaction
from django.db.models import Count

from council.models import CouncilRun, CouncilVote
from council.services import council_member_add, council_run_start
from items.models import Item
from tests.celery_worker import READY_TIMEOUT, WorkerProcess, _worker_broker, database_url_for_worker
from tests.conftest import IN_CI

ON_REDIS = settings.CELERY_BROKER_URL.startswith("redis")
WORKER_ENV = {
    "COUNCIL_BACKOFF_BASE": "0.05",
    "COUNCIL_BACKOFF_CAP": "0.5",
    "COUNCIL_MAX_RETRIES": "2",
    "CELERY_VISIBILITY_TIMEOUT": "4",
    "CELERY_UNACKED_RESTORE_INTERVAL": "1",
}


class CouncilWorkers:
    """Start, SIGKILL and restart real prefork workers on the test database."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.broker_env, self.transport_options = _worker_broker(tmp_path)
        self.workers: list[WorkerProcess] = []

    def start(self, concurrency: int = 6, purge: bool = False) -> WorkerProcess:
        hostname = f"council-{uuid.uuid4().hex[:8]}@%h"
        env = {
            **os.environ, **self.broker_env, **WORKER_ENV,
            "DATABASE_URL": database_url_for_worker(),
            "DJANGO_SETTINGS_MODULE": "goldkey.settings",
            "GOLDKEY_VAR_DIR": str(self.tmp_path / "var"),
            "PYTHONUNBUFFERED": "1",
        }
        log_path = self.tmp_path / f"worker-{len(self.workers)}.log"
        command = [
            sys.executable, "-m", "celery", "-A", "goldkey", "worker", "--pool=prefork", f"--concurrency={concurrency}",
            "--loglevel=INFO", "--hostname", hostname, "--without-gossip", "--without-mingle", "--without-heartbeat",
        ] + (["--purge"] if purge else [])  # fmt: skip
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,  # its own process group: SIGKILL takes the pool too
            )
        worker = WorkerProcess(process, log_path, hostname)
        self.workers.append(worker)
        worker.wait_for(lambda: " ready." in worker.log(), timeout=READY_TIMEOUT, what="the worker being ready")
        return worker

    def kill(self, worker: WorkerProcess) -> None:
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait(10)

    def stop_all(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                try:
                    os.killpg(worker.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                worker.process.wait(10)


@pytest.fixture
def council_workers(transactional_db, tmp_path, fake_llm):
    if not IN_CI and connection_is_memory():
        pytest.skip("the worker needs a database file or PostgreSQL")
    from goldkey.celery import app as celery_app

    workers = CouncilWorkers(tmp_path)
    saved = celery_app.conf.broker_transport_options
    if workers.transport_options is not None:
        celery_app.conf.broker_transport_options = workers.transport_options
        celery_app.close()
    try:
        yield workers
    finally:
        workers.stop_all()
        if ON_REDIS:
            import redis

            client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
            client.delete("celery", "unacked", "unacked_index", "unacked_mutex")
        if workers.transport_options is not None:
            celery_app.conf.broker_transport_options = saved
            celery_app.close()


def connection_is_memory() -> bool:
    from django.db import connection

    return connection.vendor == "sqlite" and connection.is_in_memory_db()


@pytest.fixture
def thirty_items(small_twist, annotator_a, annotator_b):
    """The three constructed items and 27 more like them: a campaign over 30 items."""
    from annotation.services import campaign_create
    from items.models import Evidence

    template = list(Item.objects.filter(item_set=small_twist).prefetch_related("evidence"))
    for n in range(27):
        source = template[n % 3]
        evidence = list(source.evidence.all())
        source.pk = None
        source.external_id = f"conv-x:{n + 4}"
        source.draft = f"{source.draft} (variant {n})"
        source.save()
        Evidence.objects.bulk_create(Evidence(item=source, turn_id=e.turn_id, position=e.position) for e in evidence)
    return campaign_create(slug="thirty", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=5)


def _votes_per_pair(campaign):
    return list(
        CouncilVote.objects.filter(campaign=campaign).values("member_id", "item_id").annotate(n=Count("id")).filter(n__gt=1)
    )


def _wait_finished(worker, run, timeout=120.0):
    def finished():
        run.refresh_from_db()
        return run.status == CouncilRun.Status.FINISHED

    worker.wait_for(finished, timeout=timeout, what=f"run {run.pk} finishing")


@pytest.mark.worker
def test_a_council_with_faults_on_ends_with_one_row_per_member_and_item_and_the_right_errors(council_workers, fake_llm, thirty_items):
    base = fake_llm.base_url
    members = [
        council_member_add(name="flaky-429", base_url=base, model="fake-429-once", concurrency=3, requests_per_minute=0)[0],
        council_member_add(name="flaky-500", base_url=base, model="fake-500-once", concurrency=3, requests_per_minute=0)[0],
        council_member_add(name="slow", base_url=base, model="fake-slow-once", concurrency=3, requests_per_minute=0,
                           timeout_seconds=0.5)[0],
        council_member_add(name="garbled", base_url=base, model="fake-malformed-always", concurrency=3, requests_per_minute=0)[0],
        council_member_add(name="down", base_url=base, model="fake-500-always", concurrency=3, requests_per_minute=0)[0],
    ]
    worker = council_workers.start(purge=True)
    with transaction.atomic():
        run = council_run_start(campaign=thirty_items, members=members)
    _wait_finished(worker, run)

    rows = CouncilVote.objects.filter(campaign=thirty_items)
    assert rows.count() == 5 * 30
    assert _votes_per_pair(thirty_items) == []
    errors = dict(rows.filter(status="error").values_list("member__name").annotate(n=Count("id")))
    # Transient faults that clear are retried into votes; a reply malformed twice and a server that
    # keeps failing past the retry budget are error rows — never votes.
    assert errors == {"garbled": 30, "down": 30}
    assert all("gave up after 3 attempts" in e for e in rows.filter(member__name="down").values_list("error", flat=True))
    assert fake_llm.state.faults_served >= 30 * 3


@pytest.mark.worker
@pytest.mark.skipif(not ON_REDIS and not IN_CI, reason="needs a broker with acknowledgements (set CELERY_BROKER_URL=redis://…)")
def test_a_worker_killed_mid_run_and_restarted_finishes_with_no_duplicate_and_no_lost_vote(council_workers, fake_llm, thirty_items):
    assert ON_REDIS, "under CI the kill test runs on Redis"
    fake_llm.state.latency_ms = 150
    members = [
        council_member_add(name=f"m{i}", base_url=fake_llm.base_url, model=f"fake-ok-{i}", concurrency=2,
                           requests_per_minute=0)[0]
        for i in range(3)
    ]
    worker = council_workers.start(purge=True)
    with transaction.atomic():
        run = council_run_start(campaign=thirty_items, members=members)
    worker.wait_for(lambda: CouncilVote.objects.filter(run=run).count() >= 15, timeout=60, what="some votes")
    council_workers.kill(worker)
    at_kill = CouncilVote.objects.filter(run=run).count()
    assert at_kill < 90, "the run finished before the kill; slow the server down"

    restarted = council_workers.start()
    _wait_finished(restarted, run, timeout=120)
    time.sleep(1.0)  # let any redelivered duplicate finish: it must find the vote and do nothing
    assert CouncilVote.objects.filter(campaign=thirty_items).count() == 90
    assert CouncilVote.objects.filter(campaign=thirty_items, status="ok").count() == 90
    assert _votes_per_pair(thirty_items) == []
