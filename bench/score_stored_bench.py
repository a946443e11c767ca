"""The stored path of scoring: 50 runs imported against a frozen synthetic 100,000-item key, then the
report computed from the stored predictions, as the leaderboard page, the API and `score_report` do.
(bench/score_bench.py times the pure report alone, without a database.)

    .venv/bin/python bench/score_stored_bench.py [--items 100000] [--runs 50] [--conversations 500] [--json]

Runs on a throw-away database (bench/scratch.py: a SQLite file in a temporary folder, or with
DATABASE_URL a `test_<name>` database on that server, dropped at the end), never the project's own.
Setup is not timed: the key (items, entries, frozen with its SHA-256) and runs 2..N (their predictions
written with the bulk inserter). Timed as a user runs them, each command a process (start-up
included): `manage.py score_import` of run 1 from a predictions JSONL (parse, check against the key,
verify the key's hash, write) and `manage.py score_report --json` of all N runs (read the key and every
prediction, then the pure batch report of bench/score_bench.py, printed); and in this process
`scoring.selectors.score_report` alone, as the page and the API call it.
"""

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import bytecode_compiled, load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from scratch import scratch_database

    with scratch_database() as scratch:
        run(args, scratch)


def run(args, scratch) -> None:
    # Imported after django.setup() in main(): the models need the app registry.
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone
    from import_bench import command
    from score_bench import build_key, build_runs, timed

    from goldkey.lib.bulk import bulk_insert
    from items.models import Conversation, Item
    from items.services import item_set_get_or_create
    from keys.canonical import sha256_hex
    from keys.models import GoldKey, KeyEntry
    from keys.releases import release_seal
    from keys.selectors import key_canonical_bytes
    from scoring import selectors as score_selectors
    from scoring.models import RunPrediction, SystemRun

    wall0 = time.perf_counter()
    entries = build_key(args.items, args.conversations, args.seed)
    runs = build_runs(entries, args.runs, args.seed)
    item_set = item_set_get_or_create(name="bench items", kind="twist")
    Conversation.objects.bulk_create(Conversation(external_id=f"conv-{c}", speaker_a="A", speaker_b="B")
                                     for c in range(args.conversations))
    conversation = dict(Conversation.objects.values_list("external_id", "id"))
    Item.objects.bulk_create(
        (Item(item_set=item_set, kind="twist", external_id=e.item_id, conversation_id=conversation[e.conversation],
              gold_label=e.gold, history_turns=e.history_turns) for e in entries),
        batch_size=5000,
    )
    item_ids = dict(Item.objects.filter(item_set=item_set).values_list("external_id", "id"))
    key = GoldKey.objects.create(benchmark=item_set.track.benchmark, kind="twist", version="BENCH-v1.0")
    bulk_insert(KeyEntry, ({"key_id": key.pk, "item_id": item_ids[e.item_id], "external_id": e.item_id, "gold": e.gold,
                            "evidence": list(e.evidence), "quote": "", "family": "", "history_turns": e.history_turns,
                            "provenance": "kept_unanimous", "detail": None} for e in entries))
    GoldKey.objects.filter(pk=key.pk).update(status=GoldKey.Status.FROZEN, sha256=sha256_hex(key_canonical_bytes(key)),
                                             frozen_at=timezone.now())
    release_seal(key=GoldKey.objects.get(pk=key.pk))  # score_import verifies the key, sealed release included
    names = list(runs)
    now = timezone.now()
    for name in names[1:]:
        stored = SystemRun.objects.create(key=key, system=name, source_name="bench", source_sha256="0" * 64, imported_at=now)
        bulk_insert(RunPrediction, ({"run_id": stored.pk, "item_external_id": item_id, "aligned": p.aligned,
                                     "evidence": list(p.evidence), "attributed": None, "cited_fact_only": None}
                                    for item_id, p in runs[name].items()))
    get_user_model().objects.create_superuser("bench-admin", password="x")  # the commands' acting user
    first = scratch.folder / "run-1.jsonl"
    with first.open("w") as handle:
        for item_id, p in runs[names[0]].items():
            handle.write(json.dumps({"item_id": item_id, "aligned": p.aligned, "evidence": list(p.evidence)}) + "\n")
    # The page, the API and the command score in a process that holds no synthetic run: the 5,000,000
    # Prediction objects built above are dropped before timing (a run holding them measured the report at
    # 12.3 s CPU; a fresh process on an identical database, 9.2-9.7 s).
    del runs, entries
    gc.collect()
    setup = time.perf_counter() - wall0

    bytecode_compiled()
    imported = command(scratch, "score_import", "BENCH-v1.0", str(first), "--system", names[0])
    key = GoldKey.objects.get(pk=key.pk)
    reported = command(scratch, "score_report", "BENCH-v1.0", "--json")
    report, report_wall, report_cpu = timed(lambda: score_selectors.score_report(key))
    assert list(report["runs"]) == names[1:] + names[:1]  # import order: run 1 was imported last
    figures = {
        "database": connection.vendor, "items": args.items, "runs": args.runs, "conversations": args.conversations,
        "setup_s": round(setup, 1),
        "score_import_command": imported, "score_report_command": reported,
        "stored_report_wall_s": round(report_wall, 2), "stored_report_cpu_s": round(report_cpu, 2),
        "mcnemar_tests": report["family_size"], "load": load(), "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"{connection.vendor}: {args.items:,}-item key, {args.runs} runs (setup {setup:.0f} s, not timed)")
    print(f"manage.py score_import of one {args.items:,}-prediction run: {imported['wall_s']:.2f} s wall, "
          f"{imported['cpu_s']:.2f} s CPU (load {imported['load']})")
    print(f"manage.py score_report --json, {args.runs} runs with bootstrap: {reported['wall_s']:.2f} s wall, "
          f"{reported['cpu_s']:.2f} s CPU (load {reported['load']})")
    print(f"score_report in this process (the page's and the API's call): {report_wall:.2f} s wall, {report_cpu:.2f} s CPU")
    print(f"load average {figures['load']} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
