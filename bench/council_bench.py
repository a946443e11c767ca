"""Council benchmark: ITEMS items × MEMBERS members through a real Celery worker against the local
OpenAI-compatible server at LATENCY ms per response.

Prints the wall time, the throughput in (member, item) votes per second and its ratio to the latency-bound
ideal items × members × latency / total concurrency (total concurrency = members × per-member
concurrency), and the same ideal for the calls a vote really makes (Phase 1, then Phase 2 in the same
chat: two calls one after the other, so no schedule can beat twice the one-call ideal). Also the worker's
peak memory (PSS and RSS of all its processes, sampled every 0.2 s), its CPU ms per vote and the fake
server's (from /proc), and the load average. The worker is ONE prefork worker with --processes processes
(default: one per member): each runs a member's batch with the member's concurrency in flight.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench CELERY_BROKER_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/council_bench.py --items 200 --latency-ms 1000
    .venv/bin/python bench/council_bench.py --items 200 --latency-ms 100 --json   # SQLite, file-system broker

Runs in a throw-away test database (`test_<name>`), never the project's own.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import free_port  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")


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


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                    pids.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return pids


def memory_bytes(pids: list[int]) -> tuple[int, int, int]:
    """(RSS sum, PSS sum, live processes). Forked pool processes share the parent's pages, which RSS counts
    once per process; PSS splits shared pages among their sharers, so the PSS sum is what the worker as a
    whole really holds."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss = pss = count = 0
    for pid in pids:
        try:
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                    break
            count += 1
        except (OSError, IndexError, ValueError):
            continue
    return rss, pss, count


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
             draft=f"Hope pottery class {i} is going well!", gold_label=types[i % 3],
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
    parser.add_argument("--processes", type=int, default=0, help="worker pool processes (default: one per member)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--verbose", action="store_true", help="print each member's progress every 5 s")
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
        processes_n = args.processes or args.members
        workers = 1
        log = (workdir / "worker0.log").open("wb")
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "goldkey", "worker", "--pool=prefork",
             f"--concurrency={processes_n}", "--loglevel=INFO", "--purge",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"bench-{port}@%h"],
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
        # This process's first send imports the tasks (the SDK with them: ~1-3 s here), finalizes the Celery app
        # and connects to the broker — once per web process, not per run: done before the clock starts.
        import council.tasks  # noqa: F401
        from goldkey.celery import app as celery_app

        celery_app.finalize()
        with celery_app.producer_or_acquire() as producer:
            producer.connection.ensure_connection()

        def cpu_now() -> dict:
            return {"server": group_cpu_seconds(processes[0].pid), "worker": sum(group_cpu_seconds(p.pid) for p in processes[1:])}

        # Measured before the clock starts: scanning /proc is the bench's cost, not the council's.
        cpu_before = cpu_now()
        load_before = os.getloadavg()[0]
        pids = group_pids(processes[1].pid)
        rss_idle, pss_idle, _ = memory_bytes(pids)
        peak_rss, peak_pss, peak_procs = rss_idle, pss_idle, 0
        started = pids_at = time.monotonic()
        started_wall = time.time()
        run = council_run_start(campaign=campaign, members=members)
        last_poll = 0.0
        while True:
            if time.monotonic() - pids_at > 5:  # pool processes can be replaced; look again now and then
                pids, pids_at = group_pids(processes[1].pid), time.monotonic()
            rss, pss, procs = memory_bytes(pids)
            if pss > peak_pss:
                peak_pss, peak_procs = pss, procs
            peak_rss = max(peak_rss, rss)
            if time.monotonic() - last_poll >= 0.5:
                last_poll = time.monotonic()
                run = CouncilRun.objects.select_related("prompt_version").get(pk=run.pk)
                progress = run_progress(run)
                if args.verbose and int(last_poll - started) % 5 == 0:
                    print(f"  {last_poll - started:6.1f} s  " + "  ".join(
                        f"{m['member']} {m['done'] + m['errors']}" for m in progress["members"]), flush=True)
                if progress["finished"]:
                    break
                if run.status == CouncilRun.Status.STALLED:
                    sys.exit(f"the run stalled: {run.stalled_reason}")
            if any(p.poll() is not None for p in processes[1:]):
                sys.exit("a worker died; see " + str(workdir))
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        if run.finished_at is not None:  # when the worker wrote the last row, not when this loop noticed
            elapsed = min(elapsed, run.finished_at.timestamp() - started_wall)
        cpu = {name: seconds - cpu_before[name] for name, seconds in cpu_now().items()}
        load_after = os.getloadavg()[0]
        votes = args.items * args.members
        errors = sum(m["errors"] for m in progress["members"])
        latency = args.latency_ms / 1000
        ideal = votes * latency / total_concurrency
        figures = {
            "items": args.items, "members": args.members, "concurrency_per_member": args.concurrency,
            "total_concurrency": total_concurrency, "latency_ms": args.latency_ms, "database": connection.vendor,
            "broker": settings.CELERY_BROKER_URL.split("://")[0], "worker_processes": processes_n,
            "wall_s": round(elapsed, 2), "errors": errors, "votes_per_s": round(votes / elapsed, 2),
            "ideal_s": round(ideal, 2), "ratio": round(ideal / elapsed, 3),
            "ideal_2_calls_s": round(2 * ideal, 2), "ratio_2_calls": round(2 * ideal / elapsed, 3),
            "worker_peak_rss_mb": round(peak_rss / 2**20, 1), "worker_idle_rss_mb": round(rss_idle / 2**20, 1),
            "worker_peak_pss_mb": round(peak_pss / 2**20, 1), "worker_idle_pss_mb": round(pss_idle / 2**20, 1),
            "kb_per_request_in_flight": round((peak_pss - pss_idle) / 1024 / total_concurrency, 1),
            "worker_processes_at_peak": peak_procs,
            "worker_cpu_ms_per_vote": round(1000 * cpu["worker"] / votes, 2),
            "server_cpu_ms_per_vote": round(1000 * cpu["server"] / votes, 2),
            "load_average_start": round(load_before, 2), "load_average_end": round(load_after, 2),
            "cpus": os.cpu_count(),
        }
        if args.json:
            print(json.dumps(figures))
            return
        f = figures
        print(f"council bench: {args.items} items × {args.members} members, {args.latency_ms:g} ms latency, "
              f"concurrency {args.concurrency}/member ({total_concurrency} total), {f['database']}, "
              f"broker {f['broker']}, one prefork worker × {processes_n} processes")
        print(f"  wall time        {elapsed:8.1f} s   ({errors} errors)")
        print(f"  throughput       {votes / elapsed:8.1f} votes/s   ({2 * votes / elapsed:.1f} calls/s)")
        print(f"  ideal (1 call)   {ideal:8.1f} s   ratio ideal/actual {f['ratio']:.2f}   (items × members × latency ÷ concurrency)")
        print(f"  ideal (2 calls)  {2 * ideal:8.1f} s   ratio ideal/actual {f['ratio_2_calls']:.2f}   (each vote: Phase 1 then Phase 2)")
        print(f"  worker memory    {f['worker_peak_pss_mb']:8.1f} MB peak PSS over {peak_procs} processes "
              f"({f['worker_idle_pss_mb']:.1f} MB idle before the run; RSS sum {f['worker_peak_rss_mb']:.1f} MB peak, "
              f"{f['worker_idle_rss_mb']:.1f} idle)")
        print(f"  growth           {f['kb_per_request_in_flight']:8.1f} KB per request in flight   "
              "(peak − idle PSS ÷ total concurrency; includes the batch's items and results)")
        print(f"  worker CPU       {f['worker_cpu_ms_per_vote']:8.1f} ms/vote   (fake server {f['server_cpu_ms_per_vote']:.1f} ms/vote)")
        print(f"  load average     {load_before:8.2f} at start, {load_after:.2f} at end ({os.cpu_count()} CPUs)")
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
