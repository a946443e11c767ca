"""Where the adjudicator's round trip spends its server CPU: the decision answered with the next item's page.

    DATABASE_URL=postgres://postgres@127.0.0.1:5433/test_goldkey_adj4bench GOLDKEY_VAR_DIR=/tmp/adj4bench \\
        .venv/bin/python bench/adjudicate_profile.py [--decisions 100] [--top 40] [--two-requests | --held] [--breakdown]

Runs in one process against a database `adjudicate_bench.py --keep DIR` built and kept (its `test_<name>`
database, named here directly), through Django's test client with CSRF checks on, as the bench's user: N
decisions in queue order, each a POST asking for the next item's page as its answer (what the item page's
script sends), or with `--two-requests` the POST answered with a redirect and the GET after it. The
connection is kept between requests as a gunicorn worker keeps it (CONN_MAX_AGE), so what is timed is
the worker's part of a request, without the HTTP parsing and the TCP connection.

Prints the CPU per round trip, the queries (how many, and the time spent waiting for them, by the first
words of each), and cProfile's functions by cumulative and own time. With `--breakdown`, instead of the
profile, each round trip's wall time split into the process's CPU, the time inside the statements and
inside the COMMIT, on average and for the slowest 5 %: beside a busy machine, which of them grows. Decides
items of the kept database: the next bench run starts further down the queue.
"""

import argparse
import cProfile
import html
import io
import os
import pstats
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
os.environ.setdefault("DJANGO_DEBUG", "0")


from common import process_tree_cpu_s  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--top", type=int, default=40, help="functions listed by cumulative and by own time")
    parser.add_argument("--two-requests", action="store_true", help="the POST answered by a redirect, then the GET")
    parser.add_argument("--held", action="store_true",
                        help="the next page fetched ahead (not counted) and the POST answered 204: the wait alone")
    parser.add_argument("--no-profile", action="store_true", help="CPU and queries only, without cProfile's overhead")
    parser.add_argument("--breakdown", action="store_true",
                        help="each round trip's wall time split into CPU, statements and commit, the slowest 5 %% apart "
                             "(without cProfile)")
    args = parser.parse_args()
    args.no_profile = args.no_profile or args.breakdown

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from adjudication.models import QueueItem
    from annotation.models import Campaign

    campaign = Campaign.objects.get(slug="bench")
    queued = list(QueueItem.objects.filter(campaign=campaign, queued=True, decided=False).order_by("sort_key")
                  .values_list("item_id", flat=True)[: 2 * args.decisions + 12])
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="bench_author"))
    base = f"/adjudicate/{campaign.slug}/items/"
    # The first request of a process imports the URLconf and every view module, and compiles the templates.
    first = time.process_time()
    client.get(f"{base}{queued[-1]}/")
    first = time.process_time() - first
    for item_id in queued[-10:-1]:  # warm up: connections, the first figures of this state
        client.get(f"{base}{item_id}/")

    # Each query with the wall time inside execute and the process's CPU since the previous query ended
    # (building and compiling this one, and using the previous one's rows).
    queries: list[tuple[str, float, float]] = []
    last_cpu = [time.process_time()]

    aside = [False]  # the page fetched ahead: not part of the round trip the adjudicator waits for
    spent_aside = [0.0, 0.0, 0.0]  # its CPU, wall time and the backend's CPU, taken out of the figures

    def timed(execute, sql, params, many, context):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return execute(sql, params, many, context)
        finally:
            if not aside[0]:
                queries.append((sql, time.perf_counter() - t0, c0 - last_cpu[0]))
            last_cpu[0] = time.process_time()

    # The COMMIT, which the execute wrapper does not see: on PostgreSQL it waits for the WAL to reach the
    # disk, behind whatever else the server is writing.
    in_commit = [0.0]
    commit = connection.commit

    def timed_commit():
        t0 = time.perf_counter()
        try:
            return commit()
        finally:
            if not aside[0]:
                in_commit[0] += time.perf_counter() - t0

    connection.commit = timed_commit
    trips: list[tuple[float, float, float, float, int]] = []  # per round trip: wall, CPU, execute, commit, statements

    def fetch_ahead(path: str) -> str:
        """The page a decision on `path`'s item leads to, as the item page's script fetches it: its key."""
        profile.disable()
        aside[0] = True
        c0, t0, b0 = time.process_time(), time.perf_counter(), process_tree_cpu_s(backend) if local else 0.0
        response = client.get(f"{path}next/")
        assert response.status_code == 200, response.status_code
        spent_aside[0] += time.process_time() - c0
        spent_aside[1] += time.perf_counter() - t0
        spent_aside[2] += (process_tree_cpu_s(backend) if local else 0.0) - b0
        aside[0] = False
        last_cpu[0] = time.process_time()
        if not args.no_profile:
            profile.enable()
        return html.unescape(re.search(r'id="decision-form" data-key="([^"]+)"', response.content.decode()).group(1))

    def decide(path: str) -> str:
        token = client.cookies["csrftoken"].value
        data = {"action": "keep", "note": "", "csrfmiddlewaretoken": token}
        if args.two_requests:
            response = client.post(path, data)
            assert response.status_code == 302, response.status_code
            path = response["Location"]
            assert client.get(path).status_code == 200
            return path
        if args.held:
            response = client.post(path, data, headers={"X-Goldkey-Next": "page", "X-Goldkey-Held": fetch_ahead(path)})
            assert response.status_code == 204 and response["X-Goldkey-Held"] == "current", response.status_code
            return response["X-Goldkey-Url"]
        response = client.post(path, data, headers={"X-Goldkey-Next": "page"})
        assert response.status_code == 200, (response.status_code, response.content[:300])
        return response["X-Goldkey-Url"]

    path = f"{base}{queued[0]}/"
    with connection.cursor() as cursor:  # the PostgreSQL backend serving this connection, on this machine
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    profile = cProfile.Profile(time.process_time)  # CPU, not the wall time spent waiting for the database
    # The backend's CPU, when PostgreSQL runs on this machine (its /proc entry is readable here).
    local = Path(f"/proc/{backend}/stat").exists()
    cpu0, wall0, backend0 = time.process_time(), time.perf_counter(), process_tree_cpu_s(backend)
    with connection.execute_wrapper(timed):
        if not args.no_profile:
            profile.enable()
        for _ in range(args.decisions):
            before = (time.perf_counter(), time.process_time(), len(queries), in_commit[0], spent_aside[:])
            path = decide(path)
            t0, c0, q0, k0, aside0 = before
            trips.append((time.perf_counter() - t0 - (spent_aside[1] - aside0[1]),
                          time.process_time() - c0 - (spent_aside[0] - aside0[0]),
                          sum(t for _, t, _ in queries[q0:]), in_commit[0] - k0, len(queries) - q0))
        profile.disable()
    cpu, wall = time.process_time() - cpu0 - spent_aside[0], time.perf_counter() - wall0 - spent_aside[1]
    backend_cpu = process_tree_cpu_s(backend) - backend0 - spent_aside[2] if local else None
    n = args.decisions
    sql_wait = sum(t for _, t, _ in queries)
    kind = ("POST + GET" if args.two_requests else "one POST, the next page held" if args.held
            else "one POST answered with the next page")
    print(f"{n} round trips ({kind}), "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  CPU {cpu * 1000 / n:.2f} ms, wall {wall * 1000 / n:.2f} ms a round trip"
          + ("" if args.no_profile else " (under cProfile, which adds to both)"))
    print(f"  (this process's first request, an item page: {first * 1000:.0f} ms CPU)")
    if backend_cpu is not None:
        print(f"  the PostgreSQL backend's CPU {backend_cpu * 1000 / n:.2f} ms a round trip")
    print(f"  queries {len(queries) / n:.1f} a round trip, {sql_wait * 1000 / n:.2f} ms wall inside execute "
          "(the database's time and the driver's)")
    print("    a round trip's queries in order: wall inside execute, CPU before it (its building), the SQL's start")
    kinds: Counter = Counter()
    waits: dict[str, float] = defaultdict(float)
    builds: dict[str, float] = defaultdict(float)
    for sql, t, cpu_before in queries:
        words = re.sub(r'"[^"]*"\.', "", sql)[:80]
        kinds[words] += 1
        waits[words] += t
        builds[words] += cpu_before
    for words, count in kinds.items():  # first seen first: the order of a round trip
        print(f"    {count / n:4.1f} x {waits[words] * 1000 / count:5.2f} ms wall {builds[words] * 1000 / count:5.2f} ms CPU  {words}")
    if args.breakdown:
        print_breakdown(trips)
    if args.no_profile:
        return
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


def print_breakdown(trips: list[tuple[float, float, float, float, int]]) -> None:
    """Where a round trip's wall time goes, on average and in its slowest 5 %: the process's CPU, the wall
    time inside the statements (the database's work, the driver's, and the waits for a CPU on both sides
    of every round trip) and inside the COMMIT. CPU and statements overlap by the driver's CPU."""
    by_wall = sorted(trips)
    walls = [t[0] for t in by_wall]
    slowest = by_wall[-max(1, len(by_wall) // 20):]

    def line(name: str, rows) -> str:
        mean = [sum(r[i] for r in rows) / len(rows) for i in range(5)]
        return (f"  {name:<13} wall {mean[0] * 1000:6.2f} ms = CPU {mean[1] * 1000:6.2f}, inside {mean[4]:.0f} statements "
                f"{mean[2] * 1000:6.2f}, inside the commit {mean[3] * 1000:5.2f} ms")

    print(f"round trips' wall p50 {walls[len(walls) // 2] * 1000:.2f} ms, p95 {walls[int(len(walls) * 0.95)] * 1000:.2f} ms")
    print(line("every one", by_wall))
    print(line(f"slowest {len(slowest)}", slowest))


if __name__ == "__main__":
    main()
