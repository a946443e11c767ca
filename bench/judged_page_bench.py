"""The annotator's long-answer (judged) item page over HTTP: Resume and the item page, p50/p95 per request.

    .venv/bin/python bench/judged_page_bench.py [--items 3000] [--requests 200] [--json]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/judged_page_bench.py

Judged items as LongMemEval ships them: the answers are the released reader's hypotheses (Chain-of-Note
answers of up to ~3,000 characters, from ../shared/data/longmemeval's oracle run, read where the folder
is; otherwise synthetic answers of the same lengths), each item with its question, type, gold answer and
the judge's label, imported through the upload's importer (`items_import_judged`) into a throw-away
database (bench/scratch.py, never the project's own). A two-annotator campaign over them, Goldkey behind
gunicorn with 2 workers, an annotator logged in through the login form; then, each request on a new
connection (bench/common.py `fresh_get`):
  - Resume (GET /annotate/<campaign>/ -> 302 to the first open item) with the item page it names;
  - the item page at random positions.
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

RELEASED = ROOT.parent / "shared" / "data" / "longmemeval"
ORACLE_RUN = "longmemeval_oracle.json_testlog_top1000context_jsonformat_useronlyfalse_20251215-1521.jsonl.eval-results-gpt-4o-mini"
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
         "knowledge-update", "temporal-reasoning")
PASSWORD = "bench-pass"
WORDS = "the note says you booked a table for two at the harbour restaurant on friday evening".split()


def long_answers() -> tuple[list[str], str]:
    """The released run's answers when the data folder is there, else synthetic texts of similar lengths."""
    path = RELEASED / ORACLE_RUN
    if path.exists():
        with path.open(encoding="utf-8") as f:
            return [json.loads(line)["hypothesis"] for line in f if line.strip()], f"released answers ({path.name[:40]}…)"
    rng = random.Random(7)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 500))) for _ in range(500)], "synthetic answers"


def write_items(path: Path, n: int, answers: list[str]) -> None:
    """The upload's one-file format: question, type, gold answer, hypothesis, the judge's label per line."""
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps({
                "question_id": f"bench-{i:06d}", "question_type": TYPES[i % len(TYPES)],
                "question": f"What did I say about the booking in conversation {i}?",
                "answer": "A table for two at the harbour restaurant on Friday.", "question_date": "2023/05/30 (Tue) 10:00",
                "hypothesis": answers[i % len(answers)], "label": rng.choice(("yes", "no")), "judge_model": "gpt-4o-mini",
            }) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per figure")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else print

    from scratch import scratch_database

    bytecode_compiled()
    with scratch_database() as scratch:
        from annotation.services import campaign_create
        from items.models import ItemSet
        from judges.services import items_import_judged

        answers, source = long_answers()
        path = Path(tempfile.mkdtemp(dir=scratch.folder)) / "judged.jsonl"
        write_items(path, args.items, answers)
        items_import_judged(path=path, item_set_name="bench judged")
        users = annotators(("bench-a", "bench-b"), PASSWORD)
        campaign_create(slug="bench-judged", item_set=ItemSet.objects.get(name="bench judged"), annotators=users, seed=1)
        say(f"{scratch.vendor}: {args.items:,} judged items ({source}); gunicorn, 2 workers; load {load()}")
        figures = annotator_page_figures(scratch, slug="bench-judged", items=args.items, requests_per_figure=args.requests,
                                         username="bench-a", password=PASSWORD)
    result = {"items": args.items, "answers": source, "database": scratch.vendor, "server": "gunicorn, 2 workers",
              "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M %Z")} | figures
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(latency_line("Resume (302) + the long-answer item page", figures["resume_and_item_page"]))
    print(latency_line("long-answer item page, random position", figures["item_page"]))


if __name__ == "__main__":
    main()
