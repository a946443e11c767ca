"""The annotator's TWIST Track C item page over HTTP: Resume and the item page, p50/p95 per request.

    .venv/bin/python bench/chain_page_bench.py [--items 2000] [--conversations 10] [--requests 200] [--json]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/chain_page_bench.py

No one has released Track C items, so the set is generated in the import shape of docs/twist_c.md, at the
scale of the released conversations: each conversation is LoCoMo-sized (20 sessions x 30 turns = 600 turns),
and its version has every chain's steps injected as turns of later and later sessions (2 or 3 steps; every
family, HN-C1's two facts in one session). The conversations, their versions and the items are imported
through the same services as `import_locomo --version-of` and `import_twist_c` (every gate of the import
runs) into a throw-away database (bench/scratch.py). A two-annotator campaign over them, Goldkey behind
gunicorn with 2 workers, an annotator logged in through the login form; then, each request on a new
connection (bench/common.py `fresh_get`):
  - Resume (GET /annotate/<campaign>/ -> 302 to the first open item) with the item page it names;
  - the item page at random positions (the dated chain turns of a 600-turn conversation version).
Every figure with p50/p95/max and the load average it was measured at.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import (  # noqa: E402
    annotator_page_figures,
    annotators,
    bytecode_compiled,
    latency_line,
    load,
)

PASSWORD = "bench-pass"
SESSIONS, TURNS = 20, 30
# (family, steps); C3 and C4 take a single or a double update (docs/twist_c.md).
SHAPES = (("C1", 2), ("C2", 3), ("C3", 2), ("C3", 3), ("C4", 2), ("C4", 3), ("HN-C1", 2))
WORDS = "we walked the cliff path every morning and talked about the studio shelves lights and the trip".split()


def _date(session: int) -> str:
    return f"9:05 am on {session} March, 2025"


def _sessions(rng: random.Random, conversation: int) -> dict[int, list[dict]]:
    return {
        s: [{"speaker": ("Noor", "Elias")[t % 2], "dia_id": f"D{s}:{t + 1}",
             "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24))) + f" ({conversation})"}
            for t in range(TURNS)]
        for s in range(1, SESSIONS + 1)
    }


def _locomo(sessions: dict[int, list[dict]]) -> dict:
    record = {"speaker_a": "Noor", "speaker_b": "Elias"}
    for s, turns in sessions.items():
        record[f"session_{s}_date_time"] = _date(s)
        record[f"session_{s}"] = turns
    return record


def _item(i: int, name: str, family: str, steps: list[dict]) -> dict:
    values = [s["value"] for s in steps]
    if family == "HN-C1":
        gold, superseded = f"Both hold: {values[0]} and {values[1]}.", []
    elif family == "C3":
        gold, superseded = "First " + ", then ".join(values) + ".", values[:-1]
    else:
        gold, superseded = f"Now {values[-1]}.", values[:-1]
    return {"id": f"tc-bench-{i:06d}", "conversation": name, "conversation_version": f"{name}.tc1", "family": family,
            "question": f"What is the state of plan {i}?" if family != "C3" else f"How did plan {i} change over time?",
            "gold": gold, "steps": steps, "superseded": superseded}


def generate(folder: Path, *, items: int, conversations: int, seed: int = 7) -> tuple[list[tuple[Path, Path]], Path]:
    """Per conversation its original and its version (LoCoMo's shape), and the items file."""
    rng = random.Random(seed)
    originals = {k: _sessions(rng, k) for k in range(conversations)}
    versions = {k: {s: list(turns) for s, turns in originals[k].items()} for k in originals}
    records = []
    for i in range(items):
        k = i % conversations
        family, count = SHAPES[i % len(SHAPES)]
        version = versions[k]
        if family == "HN-C1":
            chosen = [rng.randint(1, SESSIONS)] * 2
        else:
            chosen = sorted(rng.sample(range(1, SESSIONS + 1), count))
        steps = []
        for n, s in enumerate(chosen):
            value = f"plan {i} option {n}" if family != "HN-C1" else f"plan {i} fact {n}"
            turn = {"speaker": "Elias", "dia_id": f"D{s}:{len(version[s]) + 1}", "text": f"About plan {i}: it is {value} now."}
            version[s].append(turn)
            steps.append({"turn_id": turn["dia_id"], "date": _date(s), "speaker": "Elias", "text": turn["text"], "value": value})
        records.append(_item(i, f"bench-c{k}", family, steps))
    files = []
    for k in originals:
        original, versioned = folder / f"bench-c{k}.json", folder / f"bench-c{k}.tc1.json"
        original.write_text(json.dumps(_locomo(originals[k])))
        versioned.write_text(json.dumps(_locomo(versions[k])))
        files.append((original, versioned))
    path = folder / "chains.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return files, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per figure")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else print

    from scratch import scratch_database

    bytecode_compiled()
    with scratch_database() as scratch:
        from annotation.services import campaign_create
        from chains.importer import items_import_twist_c
        from items.models import ItemSet
        from items.services import corpus_import_locomo, corpus_import_version

        folder = Path(tempfile.mkdtemp(dir=scratch.folder))
        files, path = generate(folder, items=args.items, conversations=args.conversations)
        for original, versioned in files:
            corpus_import_locomo(path=original, external_id=original.name.removesuffix(".json"))
            corpus_import_version(path=versioned, version_of=original.name.removesuffix(".json"))
        report = items_import_twist_c(path=path, item_set_name="bench chains")
        item_set = ItemSet.objects.get(name="bench chains")
        kept = item_set.items.filter(gate_rejected=False).count()
        if kept != args.items:
            raise SystemExit(f"the generated set lost {args.items - kept} item(s) to the import's gates: {report}")
        users = annotators(("bench-a", "bench-b"), PASSWORD)
        campaign_create(slug="bench-chains", item_set=item_set, annotators=users, seed=1)
        say(f"{scratch.vendor}: {args.items:,} Track C items over {args.conversations} conversation versions of "
            f"{SESSIONS * TURNS}+ turns; gunicorn, 2 workers; load {load()}")
        figures = annotator_page_figures(scratch, slug="bench-chains", items=args.items, requests_per_figure=args.requests,
                                         username="bench-a", password=PASSWORD)
    result = {"items": args.items, "conversations": args.conversations, "database": scratch.vendor,
              "server": "gunicorn, 2 workers", "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M %Z")} | figures
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(latency_line("Resume (302) + the Track C item page", figures["resume_and_item_page"]))
    print(latency_line("Track C item page, random position", figures["item_page"]))


if __name__ == "__main__":
    main()
