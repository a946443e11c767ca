"""Council cost per vote, independent of machine load: SQL queries and worker CPU ms per (member, item) vote.

Runs the `council_batch` task body (`council.execution.batch_work`) in this process (no broker, no pool)
against the local OpenAI-compatible server in a subprocess (its CPU is not counted), each member's batch
after the other with the member's concurrency in flight, and prints queries/vote and CPU ms/vote (process
time of this process, both threads: Django, the async SDK client, JSON, the driver).
`--profile` adds the top of a cProfile listing.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/council_vote_profile.py
    .venv/bin/python bench/council_vote_profile.py --items 100 --profile

Runs in a throw-away test database (`test_<name>`), never the project's own.
"""

import argparse
import cProfile
import io
import os
import pstats
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="cumulative", help="cProfile sort key (cumulative, tottime)")
    args = parser.parse_args()

    import django

    django.setup()
    import urllib.request
    from unittest import mock

    from council_bench import build_items, free_port
    from django.db import connection, transaction

    from council.execution import batch_work
    from council.models import CouncilRun, CouncilVote, ResponseCache
    from council.services import council_member_add, council_run_start

    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    server = None
    try:
        campaign = build_items(args.items)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "fake_llm_server", "--port", str(port)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/control", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("the fake server did not start")
                time.sleep(0.1)
        members = [
            council_member_add(name=f"prof-{m}", base_url=f"http://127.0.0.1:{port}/v1", model=f"fake-ok-{m}",
                               concurrency=8, requests_per_minute=0, timeout_seconds=30)[0]
            for m in range(args.members)
        ]
        # Warm up (imports, the SDK client, the slot rows) on a one-item run, then measure a fresh run.
        with mock.patch("council.tasks.council_batch.delay"), transaction.atomic():
            warm = council_run_start(campaign=campaign, members=members)
        for batch in warm.batches.order_by("id")[:1]:
            batch.item_ids = batch.item_ids[:1]
            batch.save()
            batch_work(batch_id=batch.pk, holder="warm-up")
        CouncilVote.objects.all().delete()
        ResponseCache.objects.all().delete()
        with mock.patch("council.tasks.council_batch.delay"), transaction.atomic():
            run = council_run_start(campaign=campaign, members=members)
        pairs = [(b.member_id, i) for b in run.batches.all() for i in b.item_ids]
        measured = pairs
        profiler = cProfile.Profile() if args.profile else None
        statements: list[str] = []

        def count(execute, sql, params, many, context):
            statements.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            cpu0, wall0 = time.process_time(), time.monotonic()
            if profiler:
                profiler.enable()
            for batch_id in run.batches.order_by("id").values_list("id", flat=True):
                batch_work(batch_id=batch_id, holder=f"profile-{batch_id}")
            if profiler:
                profiler.disable()
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        n = len(measured)
        run.refresh_from_db()
        ok = CouncilVote.objects.filter(run=run, status="ok").count()
        print(f"council vote profile: {n} votes ({args.items} items × {args.members} members), {connection.vendor}")
        print(f"  queries/vote   {len(statements) / n:6.1f}   (transaction BEGIN/COMMIT not counted)")
        print(f"  CPU ms/vote    {1000 * cpu / n:6.1f}   (wall {1000 * wall / n:.1f} ms/vote, server latency 0, "
              f"8 in flight per member)")
        print(f"  votes ok {ok}/{len(pairs)}, run {run.status}")
        if run.status != CouncilRun.Status.FINISHED:
            sys.exit("the run did not finish")
        if args.profile:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(40)
            print(out.getvalue())
            by_sql: dict[str, int] = {}
            for sql in statements:
                key = sql[:90]
                by_sql[key] = by_sql.get(key, 0) + 1
            for sql, count in sorted(by_sql.items(), key=lambda kv: -kv[1])[:30]:
                print(f"{count / n:5.2f}/vote  {sql}")
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
