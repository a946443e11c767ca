"""Reliability with a REAL Celery worker process, the real broker and the local OpenAI-compatible server.

On PostgreSQL + Redis (CI) and on SQLite these always run. The restart test brings its own redis-server
(on a free port from 56400) so that shutting it down touches nobody else's broker.
"""

import os
import signal
import socket
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
from goldkey.celery import app as celery_app
from items.models import Item
from tests.celery_worker import (
    READY_TIMEOUT,
    WorkerProcess,
    _drop_pooled_connections,
    _worker_broker,
    database_url_for_worker,
)
from tests.conftest import IN_CI

ON_REDIS = settings.CELERY_BROKER_URL.startswith("redis")
# Short limits so that the sweep's lease (hard limit + a margin) runs out within the test; the visibility
# timeout follows the longest hard limit (68 s here), so recovery in these tests is the sweep's doing.
WORKER_ENV = {
    "COUNCIL_BACKOFF_BASE": "0.05",
    "COUNCIL_BACKOFF_CAP": "0.5",
    "COUNCIL_MAX_RETRIES": "2",
}
SHORT_LIMITS = {
    "COUNCIL_SOFT_TIME_LIMIT": "6",
    "COUNCIL_TIME_LIMIT": "8",
    "CELERY_TASK_TIME_LIMIT": "8",
    "GATES_TIME_LIMIT": "8",
    "KEY_JOB_TIME_LIMIT": "8",
    "COUNCIL_SWEEP_INTERVAL": "1",
    "CELERY_UNACKED_RESTORE_INTERVAL": "1",
}


def free_port(start: int = 56400) -> int:
    for port in range(start, start + 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail("no free port for a private Redis")


class PrivateRedis:
    """A redis-server of this test's own (never the shared one), to shut down and start again mid-run."""

    def __init__(self, tmp_path):
        self.port = free_port()
        self.dir = tmp_path / "redis"
        self.dir.mkdir()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True).stdout.strip() != "PONG":
            if time.monotonic() > deadline:
                pytest.fail("the private redis-server did not start")
            time.sleep(0.05)

    def shutdown_nosave(self) -> None:
        """What the incident did: every queued message is gone."""
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True)
        if self.process is not None:
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class CouncilWorkers:
    """Start, SIGKILL and restart real prefork workers on the test database (and a broker of the test's
    choosing: the settings' one, the file-system broker, or a private Redis)."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.broker_env, self.transport_options = _worker_broker(tmp_path)
        self.broker_url: str | None = None
        self.workers: list[WorkerProcess] = []

    def use_broker(self, url: str | None) -> None:
        """Send this test's tasks through `url` (a private Redis) or, with None, the file-system broker."""
        if url is None:
            folder = self.tmp_path / "broker"
            for sub in ("queue", "processed", "control"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
            self.broker_url = settings.FILESYSTEM_BROKER_URL
            self.broker_env = {"CELERY_BROKER_URL": self.broker_url, "GOLDKEY_BROKER_DIR": str(folder)}
            self.transport_options = {
                "data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
                "processed_folder": str(folder / "processed"), "control_folder": str(folder / "control"),
                "store_processed": False,
            }
        else:
            self.broker_url = url
            self.broker_env = {"CELERY_BROKER_URL": url}
            self.transport_options = {"visibility_timeout": 3600}
        celery_app.conf.broker_url = self.broker_url
        celery_app.conf.broker_transport_options = self.transport_options
        _drop_pooled_connections()

    def start(self, concurrency: int = 6, purge: bool = False, short_limits: bool = False) -> WorkerProcess:
        hostname = f"council-{uuid.uuid4().hex[:8]}@%h"
        env = {
            **os.environ, **self.broker_env, **WORKER_ENV, **(SHORT_LIMITS if short_limits else {}),
            "DATABASE_URL": database_url_for_worker(),
            "DJANGO_SETTINGS_MODULE": "goldkey.settings",
            "GOLDKEY_VAR_DIR": str(self.tmp_path / "var"),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("CELERY_VISIBILITY_TIMEOUT", None)
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
def council_workers(transactional_db, tmp_path, fake_llm, settings):
    if not IN_CI and connection_is_memory():
        pytest.skip("the worker needs a database file or PostgreSQL")
    settings.COUNCIL_BATCH_SIZE = 10  # 30 items × members: several batches per member, as in a large run
    workers = CouncilWorkers(tmp_path)
    saved = celery_app.conf.broker_url, celery_app.conf.broker_transport_options
    if workers.transport_options is not None:
        celery_app.conf.broker_transport_options = workers.transport_options
        _drop_pooled_connections()
    try:
        yield workers
    finally:
        workers.stop_all()
        if ON_REDIS and workers.broker_url is None:
            import redis

            client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
            client.delete("celery", "unacked", "unacked_index", "unacked_mutex")
        celery_app.conf.broker_url, celery_app.conf.broker_transport_options = saved
        _drop_pooled_connections()


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
                           # the server sleeps 5 s on each item's first request; 2.5 s leaves a loaded
                           # machine room to answer the retries in time
                           timeout_seconds=2.5)[0],
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


def _one_row_per_pair(campaign, expected: int) -> None:
    assert CouncilVote.objects.filter(campaign=campaign).count() == expected
    assert _votes_per_pair(campaign) == []


def _wait_final(worker, run, timeout):
    """Finished — or stalled, which must then say why."""
    def final():
        run.refresh_from_db()
        return run.status in (CouncilRun.Status.FINISHED, CouncilRun.Status.STALLED)

    worker.wait_for(final, timeout=timeout, what=f"run {run.pk} reaching a final state")
    assert run.status == CouncilRun.Status.FINISHED or run.stalled_reason, run.status


@pytest.mark.worker
@pytest.mark.programs("redis-server", "redis-cli")
def test_a_run_survives_a_redis_restart_and_a_worker_sigkill_and_finishes_by_itself(council_workers, fake_llm, thirty_items, tmp_path):
    """Redis shut down without saving mid-run (the queued batches vanish), started again; later the worker
    is SIGKILLed with batches in flight and a new one started. Nobody resumes the run: the sweep does."""
    redis_server = PrivateRedis(tmp_path)
    redis_server.start()
    try:
        council_workers.use_broker(redis_server.url)
        fake_llm.state.latency_ms = 250
        members = [
            council_member_add(name=f"m{i}", base_url=fake_llm.base_url, model=f"fake-ok-{i}", concurrency=2,
                               requests_per_minute=0)[0]
            for i in range(3)
        ]
        worker = council_workers.start(concurrency=3, purge=True, short_limits=True)
        started = time.monotonic()
        with transaction.atomic():
            run = council_run_start(campaign=thirty_items, members=members)
        votes = CouncilVote.objects.filter(run=run)
        worker.wait_for(lambda: votes.count() >= 10, timeout=60, what="the first votes")
        redis_server.shutdown_nosave()
        time.sleep(1.0)
        redis_server.start()
        worker.wait_for(lambda: votes.count() >= 45, timeout=90, what="votes after the Redis restart")
        council_workers.kill(worker)
        assert votes.count() < 90, "the run finished before the kill; slow the server down"

        restarted = council_workers.start(concurrency=3, short_limits=True)
        _wait_final(restarted, run, timeout=120 - (time.monotonic() - started))
        time.sleep(1.5)  # a late duplicate delivery must find its rows and add none
        _one_row_per_pair(thirty_items, 90)
        assert run.status == CouncilRun.Status.FINISHED
        assert CouncilVote.objects.filter(campaign=thirty_items, status="ok").count() == 90
        assert "council sweep" in restarted.log() or "council sweep" in worker.log()  # the sweep re-sent lost batches
    finally:
        redis_server.stop()


@pytest.mark.worker
def test_a_worker_killed_on_the_file_system_broker_is_recovered_by_the_sweep(council_workers, fake_llm, thirty_items):
    """The demo's broker deletes a message when it hands it out: a killed worker's batches exist nowhere
    but in their rows, and the sweep sends them again once their lease runs out."""
    council_workers.use_broker(None)
    fake_llm.state.latency_ms = 200
    members = [
        council_member_add(name=f"fs{i}", base_url=fake_llm.base_url, model=f"fake-ok-fs{i}", concurrency=2,
                           requests_per_minute=0)[0]
        for i in range(2)
    ]
    worker = council_workers.start(concurrency=2, short_limits=True)
    started = time.monotonic()
    with transaction.atomic():
        run = council_run_start(campaign=thirty_items, members=members)
    votes = CouncilVote.objects.filter(run=run)
    worker.wait_for(lambda: votes.count() >= 10, timeout=60, what="the first votes")
    council_workers.kill(worker)
    assert votes.count() < 60
    restarted = council_workers.start(concurrency=2, short_limits=True)
    _wait_final(restarted, run, timeout=120 - (time.monotonic() - started))
    _one_row_per_pair(thirty_items, 60)
    assert run.status == CouncilRun.Status.FINISHED


@pytest.mark.parametrize("env, expected", [
    ({"COUNCIL_TIME_LIMIT": "900"}, 960),  # the council's hard limit is the longest: it decides
    ({}, 720),  # by default the gates' 660 s is the longest task
    ({"KEY_JOB_TIME_LIMIT": "1200"}, 1260),  # a key job (build, freeze, derive from the web) counts too
    ({"CELERY_VISIBILITY_TIMEOUT": "100"}, 100),  # an explicit setting wins
])
def test_the_redis_visibility_timeout_follows_the_longest_task_hard_limit(env, expected):
    code = "import django; django.setup(); from django.conf import settings; " \
           "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], settings.CELERY_TASK_ACKS_LATE, " \
           "settings.CELERY_TASK_REJECT_ON_WORKER_LOST)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_", "GATES_", "KEY_JOB_", "CELERY_TASK_TIME", "CELERY_VISIB"))}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=60,
        env={**clean, "DJANGO_SETTINGS_MODULE": "goldkey.settings", "CELERY_BROKER_URL": "redis://127.0.0.1:1/0", **env},
    )
    assert out.stdout.split() == [str(expected), "True", "True"], out.stderr
