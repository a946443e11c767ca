"""LongMemEval's nine released runs imported whole, as a user would: `manage.py judged_import SET --questions
FILE --eval-results FILE...` as a process on a throw-away database (bench/scratch.py: SQLite, or PostgreSQL
when DATABASE_URL names a server), then the same call again (idempotent: nothing new written).

    .venv/bin/python bench/lme_import_bench.py [--repeat 3] [--json]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/lme_import_bench.py

Reads ../shared/data/longmemeval (never copied). The bar the issue sets: 2,830 judged answers (4 x 500 +
5 x 166) in well under a minute on either database.

`--oracle-shaped`: the released question-only file cannot show the cost of the official oracle file
(`longmemeval_oracle.json`, ~14 MB, not available here), whose every question carries its dated evidence
sessions. The bench then writes a file in that shape from the 500 released questions (the same ids,
types, questions, answers and dates) with synthetic sessions of the oracle's size (~14 MB: 3 sessions of
20 turns, ~440 characters a turn, one session marked as the answer's) into the scratch folder, and passes
it as `--questions`.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from common import load  # noqa: E402
from scratch import scratch_database  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "longmemeval"


SESSIONS, TURNS, WORDS = 3, 20, "we talked about the trip the booking the garden and what to cook this week".split()


def oracle_shaped(folder: Path) -> Path:
    """The released questions in the official oracle shape, each with synthetic dated sessions of the
    oracle's size (see the module's docstring)."""
    import random

    rng = random.Random(7)
    questions = json.loads((DATA / "longmemeval_questions.json").read_text(encoding="utf-8"))
    records = []
    for q in questions:
        ids = [f"{q['question_id']}_s{n}" for n in range(SESSIONS)]
        sessions = [[{"role": ("user", "assistant")[t % 2],
                      "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 110))),
                      **({"has_answer": True} if n == 0 and t == 0 else {})} for t in range(TURNS)]
                    for n in range(SESSIONS)]
        records.append({**q, "haystack_session_ids": ids, "haystack_dates": [q["question_date"]] * SESSIONS,
                        "haystack_sessions": sessions, "answer_session_ids": ids[:1]})
    path = folder / "longmemeval_oracle_shaped.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _import(env: dict, item_set: str, questions: Path) -> tuple[float, dict]:
    runs = sorted(str(p) for p in DATA.glob("*.eval-results-*"))
    command = [sys.executable, str(ROOT / "manage.py"), "judged_import", item_set,
               "--questions", str(questions), "--eval-results", *runs, "--json"]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return time.perf_counter() - start, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh item sets imported (default 3)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--oracle-shaped", action="store_true",
                        help="import with a ~14 MB question file in the official oracle shape (sessions included)")
    options = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"no released data at {DATA} (see shared/data/README.md)")
    rows = []
    with scratch_database() as scratch:
        questions = oracle_shaped(Path(scratch.folder)) if options.oracle_shaped else DATA / "longmemeval_questions.json"
        size_mb = round(questions.stat().st_size / 1e6, 1)
        for n in range(options.repeat):
            seconds, report = _import(scratch.env, f"lme-{n}", questions)
            again, second = _import(scratch.env, f"lme-{n}", questions)
            rows.append({"vendor": scratch.vendor, "questions_mb": size_mb, "import_s": round(seconds, 2),
                         "created": report["created"], "again_s": round(again, 2),
                         "again_unchanged": second["unchanged"], "load": load()})
            if not options.json:
                print(f"{scratch.vendor}, {questions.name} ({size_mb} MB): {report['created']} answers in "
                      f"{seconds:.2f} s; again (unchanged {second['unchanged']}) {again:.2f} s; load {load()}", flush=True)
    if options.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    main()
