"""Build and freeze a real-shaped TWIST key from the key pages, as key jobs run by a real Celery worker.

    .venv/bin/python bench/key_job_bench.py [--items 100000] [--json]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/key_job_bench.py

The database is a throw-away one (bench/scratch.py); the broker is the file-system one in the scratch
folder (CELERY_BROKER_URL is ignored, so no other worker can take the jobs). Untimed setup: the same
campaign as export_bench.py (its `build`), closed, every item answered by two annotators. Timed, each as
the author's browser does it (Django's test client, signed in as the author):
  - the POST that starts the job (the build page's form, then the draft's freeze form), which now returns
    a 303 to the job's page instead of doing the work inside the request;
  - the job, by polling the JSON endpoint the page polls (every 0.2 s) until it has ended: when each stage
    was first seen. On SQLite the stages are not written while the job holds the one writer (keys/jobs.py),
    so only queued / starting / done show.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

os.environ.pop("CELERY_BROKER_URL", None)  # the scratch folder's file-system broker: this bench's worker only

from export_bench import build, load  # noqa: E402
from scratch import scratch_database  # noqa: E402


def start_worker(scratch) -> tuple[subprocess.Popen, Path]:
    log = scratch.folder / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "goldkey", "worker", "--pool=solo", "--loglevel=INFO",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--hostname", "key-job-bench@%h"],
            cwd=ROOT, env=scratch.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    deadline = time.monotonic() + 120
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    return process, log


def through_the_page(client, url: str, form: dict) -> dict:
    started = time.perf_counter()
    response = client.post(url, form)
    request_s = time.perf_counter() - started
    if response.status_code != 303:
        raise SystemExit(f"POST {url}: {response.status_code}, not the job's page")
    progress = response["Location"] + "progress/"
    seen: list[tuple[float, str]] = []
    while True:
        data = client.get(progress).json()
        label = data["stage"] if data["status"] == "running" else data["status"]
        if not seen or seen[-1][1] != label:
            seen.append((round(time.perf_counter() - started, 2), label))
        if data["ended"]:
            break
        time.sleep(0.2)
    if data["status"] != "done":
        raise SystemExit(f"the job failed: {data['error']}")
    return {"request_ms": round(request_s * 1000, 1), "job_s": seen[-1][0], "stages": seen, "load": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with scratch_database() as scratch:
        from django.contrib.auth import get_user_model
        from django.test import Client

        figures = {"database": scratch.vendor, "items": args.items, "cpus": os.cpu_count(), "load_at_start": load()}
        built = build(args, scratch.folder)
        figures["setup_untimed_s"] = built["setup_s"]
        worker, log = start_worker(scratch)
        try:
            client = Client(HTTP_HOST="localhost")
            client.force_login(get_user_model().objects.get(username=built["author"]))
            os.sync()
            figures["build"] = through_the_page(client, "/keys/new/bench/", {"version": "BENCH-v1.0"})
            figures["freeze"] = through_the_page(
                client, "/keys/BENCH-v1.0/freeze/", {"confirm": "yes", "below_bar": "yes"})
        finally:
            worker.kill()
            worker.wait(15)
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"database: {figures['database']}; items: {args.items:,}; setup (untimed): {figures['setup_untimed_s']} s; "
          f"load at start {figures['load_at_start']}")
    for name in ("build", "freeze"):
        f = figures[name]
        stages = ", ".join(f"{label} at {t} s" for t, label in f["stages"])
        print(f"{name:6}  the POST answered in {f['request_ms']} ms; the job: {stages} | load {f['load']}")


if __name__ == "__main__":
    main()
