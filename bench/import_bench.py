"""Import benchmark: N synthetic TWIST Track B items imported as a user imports them, as a process.

Generates, in the released file formats, CONVERSATIONS LoCoMo conversation files (a folder of
`<n>.json`, TURNS turns each in 20-odd dated sessions) and one Track B JSONL of N items, each citing 1-3
real turns of its recipient (the real Track B shape), then imports both in one process — `manage.py
import_twist FILE --conversations DIR` — into an empty item store, RUNS times: the whole
command, start-up included, with full validation (every field, every type, duplicate ids, unknown
conversations, evidence ids resolved against the stored turns, recipient a participant) in one
transaction. Then a re-import of the same file (every item found unchanged), and on PostgreSQL the floor
under it: the file parsed as JSON with no checks, and a bare COPY of the rows the import stored into
tables without constraints or indexes; beside it the same COPY into the real tables and their foreign
keys checked. Prints each run, p50/p95 where there are several, the load average, `--json` for scripts.

    .venv/bin/python bench/import_bench.py                      # 100,000 items, SQLite (a file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/import_bench.py
    .venv/bin/python bench/import_bench.py --items 20000 --conversations 20 --turns 400 --runs 1 --json

It runs in a throw-away database (bench/scratch.py: a SQLite file, or `test_<name>` on the PostgreSQL
server DATABASE_URL names), never the project's own. `--profile PREFIX` writes a cProfile file of the
last run's command.
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import bytecode_compiled, latency, latency_line, load  # noqa: E402

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


def command(scratch, *argv: str, profile: str | None = None) -> dict:
    """One management command as a process, as a user runs it: wall time (start-up included) and the CPU
    time of the process; `profile`: under cProfile, its statistics written to that file."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    python = [sys.executable, "-m", "cProfile", "-o", profile] if profile else [sys.executable]
    done = subprocess.run([*python, "manage.py", *argv], cwd=ROOT, env=scratch.env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "load": load(), "profiled": bool(profile)}


def items_emptied() -> None:
    """The previous run's rows deleted (untimed), children first, so that each import starts where a
    user's first one does; the rows the migrations wrote stay."""
    from django.db import connection, transaction

    from items.models import Conversation, Evidence, GenerationReject, Item, ItemSet, Session, Turn

    with transaction.atomic(), connection.cursor() as cursor:
        for model in (Evidence, GenerationReject, Item, ItemSet, Turn, Session, Conversation):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # what autovacuum does between two users' imports
            # The pages the delete and the vacuum dirtied are written now, untimed, rather than by the
            # checkpointer during the next run's import, which a user's first import does not share.
            cursor.execute("CHECKPOINT")


def floor(jsonl: Path) -> dict | None:
    """Under the import, on PostgreSQL: the file read as JSON with no checks; a bare COPY of the rows the
    import stored (items, then evidence) into tables of the same columns without constraints or indexes,
    sent from memory (the floor); the same COPY into the real tables (their indexes and, on PostgreSQL
    since items 0012, the statement triggers checking their references) and the deferred foreign keys
    left checked (what the commit does). Each in a transaction rolled back: the stored rows stay."""
    from django.db import connection

    from items.models import Evidence, Item

    if connection.vendor != "postgresql":
        return None
    start = time.perf_counter()
    with jsonl.open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    figures = {"json_parse_s": time.perf_counter() - start}
    del records
    tables = [connection.ops.quote_name(model._meta.db_table) for model in (Item, Evidence)]
    data = {}
    with connection.cursor() as cursor:
        for table in tables:
            data[table] = bytearray()
            with cursor.cursor.copy(f"COPY {table} TO STDOUT") as copy:
                for chunk in copy:
                    data[table] += chunk

    def copy_in(cursor, table: str, rows_of: str) -> float:
        """The rows `rows_of` held, copied into `table`, from memory."""
        start = time.perf_counter()
        with cursor.cursor.copy(f"COPY {table} FROM STDIN") as copy:
            rows = data[rows_of]
            for at in range(0, len(rows), 1 << 20):
                copy.write(rows[at:at + (1 << 20)])
        return time.perf_counter() - start

    with transaction_rolled_back() as cursor:
        for table, name in zip(tables, ("items", "evidence"), strict=True):
            cursor.execute(f"CREATE TEMP TABLE floor_{name} (LIKE {table})")
            figures[f"bare_copy_{name}_s"] = copy_in(cursor, f"floor_{name}", table)
    with transaction_rolled_back() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(reversed(tables))} CASCADE")  # the other referring tables are empty
        for table, name in zip(tables, ("items", "evidence"), strict=True):
            figures[f"indexed_copy_{name}_s"] = copy_in(cursor, table, table)
        start = time.perf_counter()
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the deferred foreign-key checks, as at the commit
        figures["foreign_key_checks_s"] = time.perf_counter() - start
    figures["bare_copy_s"] = figures["bare_copy_items_s"] + figures["bare_copy_evidence_s"]
    figures["floor_s"] = figures["json_parse_s"] + figures["bare_copy_s"]
    return {key: round(value, 3) for key, value in figures.items()} | {"load": load()}


@contextmanager
def transaction_rolled_back():
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        yield cursor
        transaction.set_rollback(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="imports into an empty item store, each timed")
    parser.add_argument("--profile", metavar="PREFIX", help="also write a cProfile file of the last run's command")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else print

    from scratch import scratch_database

    with scratch_database() as scratch:
        locomo, jsonl = generate(scratch.folder, items=args.items, conversations=args.conversations,
                                 turns=args.turns, seed=args.seed)
        say(f"{scratch.vendor}: {args.items:,} Track B items over {args.conversations} conversations of {args.turns} "
            f"turns; {os.cpu_count()} CPUs, load {load()}")
        bytecode_compiled()
        startup = [command(scratch, "import_twist", "--help") for _ in range(args.runs)]
        runs = []
        for n in range(args.runs):
            items_emptied()
            profiled = args.profile and n == args.runs - 1
            run = {"import_twist": command(scratch, "import_twist", str(jsonl), "--item-set", "bench",
                                           "--conversations", str(locomo),
                                           profile=f"{args.profile}-import_twist.prof" if profiled else None)}
            run["whole_s"] = run["import_twist"]["wall_s"]
            runs.append(run)
            say(f"  run {n + 1}: import_twist --conversations {run['whole_s']:.2f} s whole (CPU of the process "
                f"{run['import_twist']['cpu_s']:.2f} s; load {load()})")
        again = command(scratch, "import_twist", str(jsonl), "--item-set", "bench")
        from items.models import Evidence, Item

        assert Item.objects.count() == args.items, Item.objects.count()
        evidence_rows = Evidence.objects.count()
        below = floor(jsonl)
    whole = [run["whole_s"] for run in runs]
    figures = {
        "database": scratch.vendor, "items": args.items, "conversations": args.conversations,
        "turns": args.conversations * args.turns, "evidence_rows": evidence_rows,
        "command_startup": latency([s["wall_s"] for s in startup]),
        "runs": runs, "whole_p50_s": round(statistics.median(whole), 3), "whole_max_s": max(whole),
        "reimport_unchanged": again, "floor": below, "cpus": os.cpu_count(), "load": load(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }
    if below:
        figures["whole_over_floor"] = round(figures["whole_p50_s"] / below["floor_s"], 2)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(latency_line("command start-up (import_twist --help)", figures["command_startup"]))
    print(f"  whole import (import_twist --conversations, a process): p50 {figures['whole_p50_s']:.2f} s, "
          f"max {figures['whole_max_s']:.2f} s over {args.runs} runs")
    print(f"  re-import, every item unchanged: {again['wall_s']:.2f} s (CPU {again['cpu_s']:.2f} s)")
    if below:
        print(f"  floor: JSON parse {below['json_parse_s']:.2f} s + bare COPY of the items {below['bare_copy_items_s']:.2f} s "
              f"and evidence {below['bare_copy_evidence_s']:.2f} s (no checks, constraints or indexes) = "
              f"{below['floor_s']:.2f} s; the whole import is {figures['whole_over_floor']}x it\n"
              f"  the same rows into the real tables: items {below['indexed_copy_items_s']:.2f} s, evidence "
              f"{below['indexed_copy_evidence_s']:.2f} s; their foreign keys checked {below['foreign_key_checks_s']:.2f} s")
    print(f"  {os.cpu_count()} CPUs, load average {load()} (wall times compare only at a similar load)")


if __name__ == "__main__":
    main()
