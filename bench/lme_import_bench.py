"""LongMemEval's nine released runs imported whole, as a user would: `manage.py judged_import SET --questions
FILE --eval-results FILE...` as a process on a throw-away database (bench/scratch.py: SQLite, or PostgreSQL
when DATABASE_URL names a server), then the same call again (idempotent: nothing new written).

    .venv/bin/python bench/lme_import_bench.py [--repeat 3] [--json]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/lme_import_bench.py

Reads ../shared/data/longmemeval (never copied). The bar the issue sets: 2,830 judged answers (4 x 500 +
5 x 166) in well under a minute on either database.
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


def _import(env: dict, item_set: str) -> tuple[float, dict]:
    runs = sorted(str(p) for p in DATA.glob("*.eval-results-*"))
    command = [sys.executable, str(ROOT / "manage.py"), "judged_import", item_set,
               "--questions", str(DATA / "longmemeval_questions.json"), "--eval-results", *runs, "--json"]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return time.perf_counter() - start, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh item sets imported (default 3)")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"no released data at {DATA} (see shared/data/README.md)")
    rows = []
    with scratch_database() as scratch:
        for n in range(options.repeat):
            seconds, report = _import(scratch.env, f"lme-{n}")
            again, second = _import(scratch.env, f"lme-{n}")
            rows.append({"vendor": scratch.vendor, "import_s": round(seconds, 2), "created": report["created"],
                         "again_s": round(again, 2), "again_unchanged": second["unchanged"], "load": load()})
            if not options.json:
                print(f"{scratch.vendor}: {report['created']} answers in {seconds:.2f} s; again (unchanged "
                      f"{second['unchanged']}) {again:.2f} s; load {load()}", flush=True)
    if options.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    main()
