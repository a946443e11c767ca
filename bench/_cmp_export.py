"""Freeze and export a synthetic 100,000-item gold key; print the times.

    .venv/bin/python bench/export_bench.py [--items 100000]

Runs on a throw-away SQLite database in a temporary folder, or, with DATABASE_URL set, in a throw-away
test database (`test_<name>`) on that server, dropped at the end — never the project's own. The setup (items, a two-annotator campaign, 200,000 answers) is not timed; the
freeze (queue check, entries, canonical JSONL, SHA-256, manifest with agreement figures) and the
export of the full release bundle (written to disk, then zipped) are. Target: under 12 s in total.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", action="store_true", help="print the slowest queries of freeze and export")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of freeze and export to this prefix")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="goldkey-bench-"))
    os.environ.setdefault("GOLDKEY_VAR_DIR", str(scratch))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    throwaway_server_db = connection.vendor != "sqlite"
    project_db = connection.settings_dict["NAME"]
    if throwaway_server_db:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    else:
        call_command("migrate", verbosity=0)
    try:
        run(args, scratch)
    finally:
        if throwaway_server_db:
            connection.creation.destroy_test_db(project_db, verbosity=0)


def run(args, scratch: Path) -> None:
    import django
    from django.contrib.auth import get_user_model

    from annotation.models import Answer, Assignment
    from annotation.services import campaign_close, campaign_create
    from goldkey import roles
    from items.models import Item
    from items.services import item_set_get_or_create
    from keys import bundle
    from keys.services import key_freeze

    types = ["contradicting", "aligned", "hard_negative"]
    verdict = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}
    t0 = time.perf_counter()
    roles.ensure_groups()
    User = get_user_model()
    author = User.objects.create_user("bench-author", password="x")
    other = User.objects.create_user("bench-b", password="x")
    author.groups.add(*roles.Group.objects.filter(name__in=[roles.AUTHOR, roles.ANNOTATOR]))
    item_set = item_set_get_or_create(name="bench items", kind="twist")
    Item.objects.bulk_create(
        (
            Item(
                item_set=item_set, kind="twist", external_id=f"bench-{i:06d}", recipient="Ana",
                draft=f"Hey Ana, how is the pottery class going? ({i})", gold_type=types[i % 3],
                family=f"F{i % 7}", contradicted_quote="I quit pottery last week" if i % 3 == 0 else "",
                rationale="synthetic", history_turns=369 + i % 320,
            )
            for i in range(args.items)
        ),
        batch_size=5000,
    )
    campaign = campaign_create(slug="bench", item_set=item_set, annotators=[author, other], seed=1)
    Answer.objects.bulk_create(
        (
            Answer(assignment_id=a_id, values={"q1": verdict[gold]}, revision=1)
            for a_id, gold in Assignment.objects.filter(enrollment__campaign=campaign).values_list("id", "item__gold_type")
        ),
        batch_size=5000,
    )
    campaign_close(campaign=campaign, user=author, end_open=True)  # annotation over: a key can be frozen
    setup = time.perf_counter() - t0

    import cProfile
    from contextlib import ExitStack

    slow: list[tuple[float, str]] = []

    def timed(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            slow.append((time.perf_counter() - start, sql[:150]))

    stack = ExitStack()
    if args.queries:
        stack.enter_context(django.db.connection.execute_wrapper(timed))

    profiler = cProfile.Profile() if args.profile else None
    t1, c1 = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    key = key_freeze(campaign=campaign, version="BENCH-v1.0", user=author)
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.freeze")
        profiler = cProfile.Profile()
        profiler.enable()
    t2, c2 = time.perf_counter(), time.process_time()
    out = scratch / "bundle"
    from django.core.management import call_command
    call_command("key_export", key.version, "--out", str(out))
    from keys import releases
    files = releases.release_files(key)
    t3, c3 = time.perf_counter(), time.process_time()
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.export")
    archive = bundle.zip_bytes(files, key.version)
    t4 = time.perf_counter()
    stack.close()
    for seconds, sql in sorted(slow, reverse=True)[:12]:
        print(f"  {seconds:6.2f} s  {sql}")

    size = sum(len(b) for b in files.values())
    print(f"database: {django.db.connection.vendor}; items: {args.items:,}; setup (untimed): {setup:.1f} s")
    print(f"freeze  : {t2 - t1:6.2f} s, CPU {c2 - c1:5.2f} s  ({key.entries.count():,} entries, sha256 {key.sha256[:16]}…)")
    print(f"export  : {t3 - t2:6.2f} s, CPU {c3 - c2:5.2f} s  ({len(files)} files, {size / 1e6:.1f} MB) -> {out}")
    print(f"zip     : {t4 - t3:6.2f} s  ({len(archive) / 1e6:.1f} MB)")
    total = t3 - t1
    print(f"freeze + export: {total:.2f} s, CPU in this process {c3 - c1:.2f} s (target < 12 s; {'met' if total < 12 else 'NOT met'})")


if __name__ == "__main__":
    main()
