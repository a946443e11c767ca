"""Import benchmark: N synthetic TWIST Track B items through the real import services.

Generates, in the released file formats, CONVERSATIONS LoCoMo conversation files (a folder of
`<n>.json`, TURNS turns each in dated sessions) and one Track B JSONL of N items citing real turns of
their conversation, then imports both with `corpus_import_locomo` and `items_import_twist` — the same
services the commands and the admin upload call, with full validation and evidence resolution.
Prints conversations/turns/items per second and peak memory.

    .venv/bin/python bench/import_bench.py                      # 100,000 items, SQLite (file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/import_bench.py

It runs in a throw-away test database (pytest-style `test_<name>`), never the project's own.
"""

import argparse
import gc
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")

TYPES = [
    ("contradicting", "B1 invented-activity"),
    ("contradicting", "B2 negated-commitment"),
    ("contradicting", "B3 stale-assumption"),
    ("aligned", "B-AL consistent-message"),
    ("hard_negative", "HN-B1 committed-despite-challenges"),
    ("hard_negative", "HN-B2 acknowledged-pause"),
    ("hard_negative", "HN-B3 change-question"),
]
WORDS = (
    "pottery adoption hiking painting camping guitar marathon garden volunteering school "
    "piano kayak novel bakery puppy concert workshop museum recipe festival"
).split()
MONTHS = "January February March April May June July August September October November December".split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(folder: Path, *, items: int, conversations: int, turns: int, seed: int) -> tuple[Path, Path]:
    """Write the LoCoMo folder and the Track B JSONL; return their paths."""
    rng = random.Random(seed)
    locomo = folder / "locomo"
    locomo.mkdir()
    per_session = 30
    sessions = max(1, turns // per_session)
    speakers_turns: dict[int, dict[str, list[str]]] = {}
    names: dict[int, tuple[str, str]] = {}
    for c in range(1, conversations + 1):
        a, b = f"Ava{c}", f"Ben{c}"
        names[c] = (a, b)
        doc: dict = {"speaker_a": a, "speaker_b": b}
        by_speaker: dict[str, list[str]] = {a: [], b: []}
        left = turns
        for s in range(1, sessions + 1):
            count = per_session if s < sessions else left
            left -= count
            day = 1 + (s % 28)
            doc[f"session_{s}_date_time"] = f"{1 + s % 12}:{s % 60:02d} pm on {day} {MONTHS[s % 12]}, 2023"
            session = []
            for t in range(1, count + 1):
                speaker = a if t % 2 else b
                dia_id = f"D{s}:{t}"
                by_speaker[speaker].append(dia_id)
                session.append({"speaker": speaker, "dia_id": dia_id, "text": sentence(rng, 12)})
            doc[f"session_{s}"] = session
        speakers_turns[c] = by_speaker
        (locomo / f"{c}.json").write_text(json.dumps(doc), encoding="utf-8")
    jsonl = folder / "track_b_items_bench.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for i in range(items):
            c = 1 + i % conversations
            recipient = names[c][rng.randrange(2)]
            gold_type, family = TYPES[i % len(TYPES)]
            evidence = rng.sample(speakers_turns[c][recipient], rng.randint(1, 3))
            record = {
                "id": f"conv-{c}:v1{'bcd'[i % 3]}{i}",
                "conv": f"conv-{c}",
                "speaker": recipient,
                "type": gold_type,
                "family": family,
                "draft": f"Hey {recipient}, " + sentence(rng, 16),
                "evidence": evidence,
                "contradicted_quote": sentence(rng, 6) if gold_type == "contradicting" else "",
                "rationale": sentence(rng, 20),
                "history_turns": turns,
            }
            out.write(json.dumps(record) + "\n")
    return locomo, jsonl


def server_cpu_s(connection) -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend, if it runs on this machine.

    With the process's own CPU time this gives a figure that does not depend on how busy the
    machine is, unlike the wall time."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from items.models import Evidence, Item, Turn
    from items.services import corpus_import_locomo, items_import_twist

    with tempfile.TemporaryDirectory(prefix="goldkey-bench-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        locomo, jsonl = generate(
            folder, items=args.items, conversations=args.conversations, turns=args.turns, seed=args.seed
        )
        generated_s = time.perf_counter() - started
        gc.collect()

        db = settings.DATABASES["default"]
        if db["ENGINE"].endswith("sqlite3"):
            # A file, like production, not the in-memory database Django tests default to.
            db.setdefault("TEST", {})["NAME"] = str(folder / "bench.sqlite3")
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        try:
            rss_before = peak_rss_mb()
            t0 = time.perf_counter()
            corpus_import_locomo(path=locomo)
            t1 = time.perf_counter()
            cpu1, server1 = time.process_time(), server_cpu_s(connection)
            report = items_import_twist(path=jsonl, item_set_name="bench")
            t2 = time.perf_counter()
            cpu2, server2 = time.process_time(), server_cpu_s(connection)
            again = items_import_twist(path=jsonl, item_set_name="bench")  # idempotent re-import
            t3 = time.perf_counter()
            assert report.created == args.items and again.unchanged == args.items, (report, again)
            figures = {
                "database": connection.vendor,
                "items": args.items,
                "conversations": args.conversations,
                "turns": Turn.objects.count(),
                "evidence_rows": Evidence.objects.count(),
                "items_in_db": Item.objects.count(),
                "generate_s": round(generated_s, 2),
                "conversations_import_s": round(t1 - t0, 2),
                "items_import_s": round(t2 - t1, 2),
                "items_per_s": round(args.items / (t2 - t1)),
                "items_import_python_cpu_s": round(cpu2 - cpu1, 2),
                "items_import_db_server_cpu_s": round(server2 - server1, 2) if server1 is not None else None,
                "turns_per_s": round(args.conversations * args.turns / (t1 - t0)),
                "reimport_unchanged_s": round(t3 - t2, 2),
                "peak_rss_mb": round(peak_rss_mb()),
                "peak_rss_before_import_mb": round(rss_before),
                "cpus": os.cpu_count(),
                "load_average_1min": round(os.getloadavg()[0], 2),
            }
        finally:
            connection.creation.destroy_test_db(db["NAME"], verbosity=0)

    if args.json:
        print(json.dumps(figures, indent=2))
        return
    server_cpu = figures["items_import_db_server_cpu_s"]
    cpu = f"{figures['items_import_python_cpu_s']} s in this process" + (
        f" + {server_cpu} s in the database server" if server_cpu is not None else " (SQLite runs inside it)"
    )
    print(
        f"{figures['database']}: {args.items:,} Track B items over {args.conversations} conversations "
        f"of {args.turns} turns ({figures['evidence_rows']:,} evidence rows)\n"
        f"  conversations: {figures['conversations_import_s']} s ({figures['turns_per_s']:,} turns/s)\n"
        f"  items:         {figures['items_import_s']} s ({figures['items_per_s']:,} items/s), "
        f"full validation + evidence resolution\n"
        f"                 CPU: {cpu}\n"
        f"  re-import (all unchanged): {figures['reimport_unchanged_s']} s\n"
        f"  peak RSS: {figures['peak_rss_mb']} MB (before import: {figures['peak_rss_before_import_mb']} MB)\n"
        f"  {figures['cpus']} CPUs, load average {figures['load_average_1min']} "
        "(wall times are only comparable on a quiet machine; CPU times much less affected)"
    )

if __name__ == "__main__":
    main()
