"""Council benchmark: ITEMS items × MEMBERS members through a real Celery worker against the local
OpenAI-compatible server at LATENCY ms per response.

Prints the wall time, the throughput in (member, item) votes per second and its ratio to the ideal
items × members × latency / total concurrency (total concurrency = members × per-member concurrency;
the worker gets that many processes, or threads with --pool=threads). Each vote is two calls (Phase 1, then Phase 2), so the ideal is
also given for 2 calls per vote.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench CELERY_BROKER_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/council_bench.py
    .venv/bin/python bench/council_bench.py --items 200     # SQLite and the file-system broker (slow)

Runs in a throw-away test database (`test_<name>`), never the project's own.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of every live process in a process group (the worker and its pool)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ..., utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def build_items(n: int):
    from django.contrib.auth import get_user_model

    from annotation.services import campaign_create
    from items.models import Benchmark, Conversation, Evidence, Item, ItemSet, Session, Track, Turn

    track = Track.objects.create(benchmark=Benchmark.objects.create(slug="bench", name="Bench"), slug="b", name="B")
    item_set = ItemSet.objects.create(track=track, name="council bench", kind="twist")
    conv = Conversation.objects.create(external_id="conv-b", speaker_a="Ana", speaker_b="Ben")
    turns = []
    for s in range(1, 5):
        session = Session.objects.create(conversation=conv, number=s, date_time_raw=f"9:00 am on {s} May, 2023")
        for t in range(1, 4):
            speaker = "Ana" if t % 2 else "Ben"
            turns.append(Turn.objects.create(
                conversation=conv, session=session, dia_id=f"D{s}:{t}", speaker=speaker,
                text=f"Session {s} turn {t}: I started the pottery class number {s * t}.", order=len(turns),
            ))
    ana = [t for t in turns if t.speaker == "Ana"]
    types = ["contradicting", "aligned", "hard_negative"]
    items = Item.objects.bulk_create(
        Item(item_set=item_set, kind="twist", external_id=f"conv-b:{i}", conversation=conv, recipient="Ana",
             draft=f"Hope pottery class {i} is going well!", gold_type=types[i % 3],
             contradicted_quote="I started the pottery class" if i % 3 == 0 else "")
        for i in range(n)
    )
    Evidence.objects.bulk_create(Evidence(item=item, turn=ana[i % len(ana)], position=0) for i, item in enumerate(items))
    users = [get_user_model().objects.create_user(username=f"bench{i}") for i in range(2)]
    return campaign_create(slug="bench", item_set=item_set, annotators=users, seed=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8, help="per member")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--rpm", type=int, default=0, help="per-member rate limit (0: none)")
    parser.add_argument("--pool", default="prefork", choices=["prefork", "threads"], help="the worker's pool")
    parser.add_argument("--processes", type=int, default=0,
                        help="worker processes for --pool=threads (the total concurrency is split between them)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # so the finally below stops the children

    workdir = Path(tempfile.mkdtemp(prefix="council-bench-"))
    os.environ.setdefault("GOLDKEY_VAR_DIR", str(workdir / "var"))
    if not os.environ.get("CELERY_BROKER_URL"):
        os.environ["GOLDKEY_BROKER_DIR"] = str(workdir / "broker")

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from council.models import CouncilRun
    from council.selectors import run_progress
    from council.services import council_member_add, council_run_start
    from tests.celery_worker import database_url_for_worker

    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    processes: list[subprocess.Popen] = []
    try:
        campaign = build_items(args.items)
        port = free_port()
        total_concurrency = args.members * args.concurrency
        env = {**os.environ, "DATABASE_URL": database_url_for_worker(), "PYTHONUNBUFFERED": "1"}
        processes.append(subprocess.Popen(
            [sys.executable, "manage.py", "fake_llm_server", "--port", str(port), "--latency-ms", str(args.latency_ms)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        ))
        # prefork: one process per concurrent task. threads: `--processes` processes (default 1), each
        # running its share of the total concurrency in threads (Django keeps one connection per thread).
        workers = 1 if args.pool == "prefork" else max(1, args.processes)
        for w in range(workers):
            share = total_concurrency // workers + (1 if w < total_concurrency % workers else 0)
            log = (workdir / f"worker{w}.log").open("wb")
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "goldkey", "worker", f"--pool={args.pool}",
                 f"--concurrency={share}", "--loglevel=INFO", "--purge",
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"bench-{port}-{w}@%h"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))
        members = [
            council_member_add(name=f"bench-{m}", base_url=f"http://127.0.0.1:{port}/v1", model=f"fake-ok-{m}",
                               concurrency=args.concurrency, requests_per_minute=args.rpm, timeout_seconds=30)[0]
            for m in range(args.members)
        ]
        # Enqueue only once the worker is ready: its --purge must not erase this run's tasks.
        deadline = time.monotonic() + 120
        while not all(b" ready." in (workdir / f"worker{w}.log").read_bytes() for w in range(workers)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes[1:]):
                sys.exit("a worker did not start; see " + str(workdir))
            time.sleep(0.2)
        started = time.monotonic()
        def cpu_now() -> dict:
            return {"server": group_cpu_seconds(processes[0].pid), "worker": sum(group_cpu_seconds(p.pid) for p in processes[1:])}

        cpu_before = cpu_now()
        load_before = os.getloadavg()[0]
        run = council_run_start(campaign=campaign, members=members)
        while True:
            run = CouncilRun.objects.select_related("prompt_version").get(pk=run.pk)
            progress = run_progress(run)
            if progress["finished"]:
                break
            if any(p.poll() is not None for p in processes[1:]):
                sys.exit("a worker died; see " + str(workdir))
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        cpu = {name: seconds - cpu_before[name] for name, seconds in cpu_now().items()}
        load_after = os.getloadavg()[0]
        votes = args.items * args.members
        errors = sum(m["errors"] for m in progress["members"])
        latency = args.latency_ms / 1000
        ideal = votes * latency / total_concurrency
        print(f"council bench: {args.items} items × {args.members} members, {args.latency_ms:g} ms latency, "
              f"concurrency {args.concurrency}/member ({total_concurrency} total), "
              f"{connection.vendor}, broker {settings.CELERY_BROKER_URL.split('://')[0]}, "
              f"pool {args.pool} × {workers} process(es)")
        print(f"  wall time        {elapsed:8.1f} s   ({errors} errors)")
        print(f"  throughput       {votes / elapsed:8.1f} votes/s   ({2 * votes / elapsed:.1f} calls/s)")
        print(f"  ideal (1 call)   {ideal:8.1f} s   ratio ideal/actual {ideal / elapsed:.2f}")
        print(f"  ideal (2 calls)  {2 * ideal:8.1f} s   ratio ideal/actual {2 * ideal / elapsed:.2f}")
        print(f"  worker CPU       {1000 * cpu['worker'] / votes:8.1f} ms/vote   (fake server {1000 * cpu['server'] / votes:.1f} ms/vote)")
        print(f"  load average     {load_before:8.2f} at start, {load_after:.2f} at end ({os.cpu_count()} CPUs)")
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
