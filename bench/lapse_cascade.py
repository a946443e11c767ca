"""Timings for the Lapse scorers (prints figures; not a test).

    .venv/bin/python bench/lapse_cascade.py [../shared/data/lapse-gold/gold_battery.jsonl]

Reports: rule-cascade throughput over the released battery (repeated), stimulus build + pair-gate
time, and the stratified sampler on a synthetic pool of 50,000 outputs.
"""

import json
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lapse.cascade import label_record  # noqa: E402
from lapse.pair_gate import build_with_gate  # noqa: E402
from lapse.sampler import sample_plan  # noqa: E402


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared/data/lapse-gold/gold_battery.jsonl")
    rows = [json.loads(line) for line in path.open()] if path.exists() else []
    if rows:
        repeats = 20
        start = time.perf_counter()
        for _ in range(repeats):
            for row in rows:
                label_record(row)
        elapsed = time.perf_counter() - start
        n = repeats * len(rows)
        print(f"cascade: {n} labels in {elapsed:.2f}s = {n / elapsed:,.0f} labels/s ({1e6 * elapsed / n:.0f} µs each)")
    else:
        print(f"cascade: battery not found at {path}; skipped")

    start = time.perf_counter()
    build = build_with_gate(eval_date=date(2026, 8, 25))
    print(f"build + pair gate: {len(build.stimuli)} stimuli, {build.pairs_checked} pairs in {time.perf_counter() - start:.2f}s")

    labels = ("PROCEED",) * 20 + ("HEDGE", "TEMPLATE", "PROCEED-WITH-CAVEAT", "CONFAB-COMMIT")
    pool = [
        {"id": f"o{i:06d}", "task": "behavioral", "frame": f"f{i % 8}", "form": ("prog", "simple", "bound")[i % 3],
         "gap": f"g{i % 6}", "cascade": labels[i % len(labels)], "judge": labels[(i * 7) % len(labels)]}
        for i in range(50_000)
    ]
    start = time.perf_counter()
    plan = sample_plan(pool, size=250, seed=20260813)
    print(f"sampler: 250 of {len(pool)} in {time.perf_counter() - start:.2f}s (tiers {plan['manifest']['tiers']})")


if __name__ == "__main__":
    main()
