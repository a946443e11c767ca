"""`celery_worker_process`: a REAL Celery worker subprocess on the configured broker and the test database.

Registered for the whole suite by the root conftest.py (``pytest_plugins``). Use it like this:

    @pytest.mark.worker
    def test_something_runs_through_the_worker(celery_worker_process):
        ...  # create rows, then enqueue (directly, or through transaction.on_commit)
        row = celery_worker_process.wait_for(lambda: Thing.objects.filter(...).first())

The fixture makes the test transactional (the worker only sees committed rows), so on_commit callbacks
fire and rows written by the worker are visible to the test. The broker is the one the settings name:
Redis when CELERY_BROKER_URL is set (as in CI), otherwise the file-system broker in a private temporary
folder (so a `make demo` worker running in the same checkout cannot steal the test's messages). The
worker gets the test database through DATABASE_URL: PostgreSQL's test database, or on SQLite the test
database file (goldkey/settings.py makes it a file rather than memory for this reason).
"""

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from goldkey.celery import app as celery_app

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


def database_url_for_worker() -> str:
    """A DATABASE_URL naming the database this test process is using right now (the test database)."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "", safe="")
        if db["PASSWORD"]:
            auth += ":" + quote(db["PASSWORD"], safe="")
        host = db["HOST"] or "localhost"
        port = f":{db['PORT']}" if db["PORT"] else ""
        return f"postgres://{auth}{'@' if auth else ''}{host}{port}/{quote(db['NAME'], safe='')}"
    if connection.vendor == "sqlite":
        name = str(db["NAME"])
        if connection.is_in_memory_db() or not Path(name).is_absolute():
            pytest.fail(
                f"the SQLite test database is {name!r}: a worker process cannot open it "
                "(goldkey/settings.py should give tests a file, DATABASES['default']['TEST']['NAME'])"
            )
        return f"sqlite:///{name}"
    pytest.fail(f"celery_worker_process does not know how to share a {connection.vendor} database")


class WorkerProcess:
    def __init__(self, process: subprocess.Popen, log_path: Path, hostname: str):
        self.process = process
        self.log_path = log_path
        self.hostname = hostname

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def wait_for(self, condition: Callable[[], object], timeout: float = 30.0, what: str = "the worker's effect"):
        """Poll `condition` until it returns something truthy (returned); fail with the worker log if not."""
        deadline = time.monotonic() + timeout
        while True:
            result = condition()
            if result:
                return result
            if self.process.poll() is not None:
                pytest.fail(f"the worker exited ({self.process.returncode}) before {what}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no sign of {what} after {timeout:.0f} s; worker log:\n{self.log_tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Kill the worker: the test is over and nothing it checks is still running. (Even a cold shutdown
        takes seconds of broker polling, and a warm one longer: not worth it once per test.)"""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)


def _worker_broker(tmp_path: Path) -> tuple[dict, dict | None]:
    """(environment for the worker, transport options for this process or None to keep the settings')."""
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return {"CELERY_BROKER_URL": settings.CELERY_BROKER_URL}, None
    folder = tmp_path / "broker"
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    return {"CELERY_BROKER_URL": settings.FILESYSTEM_BROKER_URL, "GOLDKEY_BROKER_DIR": str(folder)}, options


def _drop_pooled_connections() -> None:
    """Forget connections made with the previous transport options. Not app.close(): it also
    deregisters the app, after which shared tasks resolve to a fresh default app that knows no tasks
    (NotRegistered in the next worker test). The producer pool must go too, and kombu's global pools
    key connections by URL only (not transport options), so they are reset as well."""
    from kombu import pools

    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
    celery_app._pool = None
    amqp = celery_app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    pools.reset()


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    broker_env, transport_options = _worker_broker(tmp_path)
    saved_options = celery_app.conf.broker_transport_options
    if transport_options is not None:
        celery_app.conf.broker_transport_options = transport_options
        _drop_pooled_connections()
    hostname = f"pytest-{uuid.uuid4().hex[:8]}@%h"
    env = {
        **os.environ,
        **broker_env,
        "DATABASE_URL": database_url_for_worker(),
        "DJANGO_SETTINGS_MODULE": "goldkey.settings",
        "GOLDKEY_VAR_DIR": str(tmp_path / "var"),
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "worker.log"
    command = [
        sys.executable, "-m", "celery", "-A", "goldkey", "worker",
        "--pool=solo", "--loglevel=INFO", "--hostname", hostname,
        "--without-gossip", "--without-mingle", "--without-heartbeat",
        "--purge",  # messages left on the broker by an earlier run are not this test's
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    worker = WorkerProcess(process, log_path, hostname)
    try:
        worker.wait_for(lambda: " ready." in worker.log(), timeout=READY_TIMEOUT, what="the worker being ready")
        yield worker
    finally:
        worker.stop()
        if transport_options is not None:
            celery_app.conf.broker_transport_options = saved_options
            _drop_pooled_connections()
