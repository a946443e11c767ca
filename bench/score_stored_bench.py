"""The stored path of scoring: 50 runs imported against a frozen synthetic 100,000-item key, then the
report computed from the stored predictions, as the leaderboard page, the API and `score_report` do.

    .venv/bin/python bench/score_stored_bench.py [--items 100000] [--runs 50] [--conversations 500] [--json]

Runs on a throw-away SQLite database in a temporary folder, or, with DATABASE_URL set, in a throw-away
test database on that server (dropped at the end), never the project's own. Setup is not timed: the
key (items, entries, frozen with its SHA-256) and runs 2..N (their predictions written with the bulk
inserter). Timed: `score_import` of run 1 from a predictions JSONL through the service (parse, check
against the key, verify the key's hash, write), and `scoring.selectors.score_report` of all N
runs (read the key and every prediction, then the pure batch report of bench/score_bench.py).
"""

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="goldkey-score-bench-"))
    os.environ.setdefault("GOLDKEY_VAR_DIR", str(scratch))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    # Django is set up here, not at import: the settings read GOLDKEY_VAR_DIR chosen just above.
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
    # Imported after django.setup() in main(): the models need the app registry.
    from django.db import connection
    from django.utils import timezone
    from score_bench import build_key, build_runs, timed

    from goldkey.lib.bulk import bulk_insert
    from items.models import Conversation, Item
    from items.services import item_set_get_or_create
    from keys.canonical import sha256_hex
    from keys.models import GoldKey, KeyEntry
    from keys.releases import release_seal
    from keys.selectors import key_canonical_bytes
    from scoring import selectors as score_selectors
    from scoring import services as score_services
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
                            "provenance": "kept_unanimous"} for e in entries))
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
    first = scratch / "run-1.jsonl"
    with first.open("w") as handle:
        for item_id, p in runs[names[0]].items():
            handle.write(json.dumps({"item_id": item_id, "aligned": p.aligned, "evidence": list(p.evidence)}) + "\n")
    # The page, the API and the command score in a process that holds no synthetic run: the 5,000,000
    # Prediction objects built above are dropped before timing (a run holding them measured the report at
    # 12.3 s CPU; a fresh process on an identical database, 9.2-9.7 s).
    del runs, entries
    gc.collect()
    setup = time.perf_counter() - wall0

    _, import_wall, import_cpu = timed(lambda: score_services.score_import(version="BENCH-v1.0", path=first, system=names[0]))
    key = GoldKey.objects.get(pk=key.pk)
    report, report_wall, report_cpu = timed(lambda: score_selectors.score_report(key))
    assert list(report["runs"]) == names[1:] + names[:1]  # import order: run 1 was imported last
    figures = {
        "database": connection.vendor, "items": args.items, "runs": args.runs, "conversations": args.conversations,
        "setup_s": round(setup, 1),
        "score_import_one_run_wall_s": round(import_wall, 2), "score_import_one_run_cpu_s": round(import_cpu, 2),
        "stored_report_wall_s": round(report_wall, 2), "stored_report_cpu_s": round(report_cpu, 2),
        "mcnemar_tests": report["family_size"],
        "load_average": [round(x, 1) for x in os.getloadavg()], "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"{connection.vendor}: {args.items:,}-item key, {args.runs} runs (setup {setup:.0f} s, not timed)")
    print(f"score_import of one {args.items:,}-prediction run: {import_wall:.2f} s wall, {import_cpu:.2f} s CPU")
    print(f"score_report from stored predictions, {args.runs} runs with bootstrap: {report_wall:.2f} s wall, {report_cpu:.2f} s CPU")
    print(f"load average {' '.join(map(str, figures['load_average']))} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
