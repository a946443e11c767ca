"""Scoring 50 system runs against a synthetic 100,000-item Track B key, with bootstrap: prints the time.

    .venv/bin/python bench/score_bench.py [--items 100000] [--runs 50] [--conversations 500] [--check] [--json]

Builds a key (every gold type, 1–3 gold turn ids per item, histories either side of 620 turns) and N
runs (a prediction for every item, 0–5 cited ids best first, some extracted facts), then times
`scoring.metrics.score_report`: every figure of every run (CR, AS, HNS, Attr, GCR, fact-only, balanced
accuracy, Wilson intervals, the 620-turn strata), the conversation-clustered bootstrap of CR, AS and
HNS (10,000 replicates, seed 7) and exact McNemar on contradicting and hard-negative items for every
pair of runs, Holm over the family. Target: under 10 s. No database: scoring is pure.

--check also scores the first run on the plain reference path (`run_score`, one item and one
replicate at a time) and the first three runs' McNemar family (`mcnemar_family`), asserts both equal
the report, and prints how long they took.
"""

import argparse
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scoring.metrics import KeyItem, Prediction, mcnemar_family, run_score, score_report  # noqa: E402

TYPES = ("contradicting", "aligned", "hard_negative")


def build_key(n: int, conversations: int, seed: int) -> list[KeyItem]:
    rng = random.Random(seed)
    history = {f"conv-{c}": rng.choice((369, 419, 509, 568, 629, 663, 689)) for c in range(conversations)}
    entries = []
    for i in range(n):
        conversation = f"conv-{i % conversations}"
        evidence = tuple(f"D{rng.randint(1, 30)}:{rng.randint(1, 25)}" for _ in range(rng.randint(1, 3)))
        entries.append(KeyItem(item_id=f"{conversation}:s{i}", gold=TYPES[i % 3], conversation=conversation,
                               evidence=evidence, history_turns=history[conversation]))
    return entries


def build_runs(entries: list[KeyItem], runs: int, seed: int) -> dict[str, dict[str, Prediction]]:
    """Drawn with numpy and built from a pool of citation tuples: building 5,000,000 predictions one
    random call at a time takes longer than scoring them."""
    rng = np.random.default_rng(seed)
    n = len(entries)
    contradicting = np.array([e.gold == "contradicting" for e in entries])
    pool = [tuple(f"D{rng.integers(1, 31)}:{rng.integers(1, 26)}" for _ in range(rng.integers(0, 5))) for _ in range(997)]
    facts = [(f"fact:{i}",) for i in range(97)]
    ids = [e.item_id for e in entries]
    gold_first = [e.evidence[:1] for e in entries]
    out = {}
    for r in range(runs):
        recall, specificity, grounding = rng.uniform(0.3, 1.0), rng.uniform(0.4, 1.0), rng.uniform(0.2, 0.9)
        draw = rng.random(n)
        flagged = np.where(contradicting, draw < recall, draw > specificity)
        grounded = (contradicting & flagged & (rng.random(n) < grounding)).tolist()
        fact_only = (rng.random(n) < 0.03).tolist()
        which = rng.integers(0, len(pool), n).tolist()
        aligned = (~flagged).tolist()
        out[f"system-{r:02d}"] = {
            ids[j]: Prediction(
                aligned=aligned[j],
                evidence=facts[which[j] % 97] if fact_only[j] else (gold_first[j] + pool[which[j]] if grounded[j] else pool[which[j]]),
            )
            for j in range(n)
        }
    return out


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic data (the bootstrap's is 7)")
    parser.add_argument("--check", action="store_true", help="also run the plain reference path and compare")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    (entries, runs), build_wall, _ = timed(lambda: (lambda e: (e, build_runs(e, args.runs, args.seed)))(
        build_key(args.items, args.conversations, args.seed)))
    report, wall, cpu = timed(lambda: score_report(key_version="BENCH-v1.0", key_sha256="0" * 64, entries=entries,
                                                   runs=runs, replicates=args.replicates))
    figures = {
        "items": args.items, "runs": args.runs, "conversations": args.conversations, "replicates": args.replicates,
        "mcnemar_tests": report["family_size"], "build_s": round(build_wall, 2),
        "score_report_wall_s": round(wall, 3), "score_report_cpu_s": round(cpu, 3), "target_s": 10,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_average": [round(x, 1) for x in os.getloadavg()], "cpus": os.cpu_count(),
    }
    first = next(iter(runs))
    if args.check:
        plain, plain_wall, _ = timed(lambda: run_score(entries=entries, predictions=runs[first], replicates=args.replicates))
        assert plain == report["runs"][first], "the batch path differs from the plain reference"
        three = dict(list(runs.items())[:3])
        family, family_wall, _ = timed(lambda: mcnemar_family(entries=entries, runs=three))
        batch_three = score_report(key_version="BENCH-v1.0", key_sha256="0" * 64, entries=entries, runs=three, bootstrap=False)
        assert family["tests"] == batch_three["mcnemar"], "the batch McNemar family differs from the plain one"
        figures["plain_run_score_one_run_s"] = round(plain_wall, 2)
        figures["plain_mcnemar_three_runs_s"] = round(family_wall, 2)
        figures["check"] = "batch == plain"
    if args.json:
        print(json.dumps({"figures": figures, "sample": {first: {m: report["runs"][first][m] for m in ("CR", "AS", "HNS", "Attr", "GCR")}}}, indent=1))
        return
    print(f"built a {args.items:,}-item key over {args.conversations} conversations and {args.runs} runs in {build_wall:.1f} s")
    print(f"score_report: {wall:.2f} s wall, {cpu:.2f} s CPU (target < 10 s): {args.runs} runs × 3 bootstraps × "
          f"{args.replicates:,} replicates, {report['family_size']:,} McNemar tests with Holm")
    sample = report["runs"][first]
    print(f"{first}: " + ", ".join(
        f"{m} {sample[m]['value']:.3f} ({sample[m]['k']}/{sample[m]['n']})" for m in ("CR", "AS", "HNS", "Attr", "GCR")))
    print(f"  CR wilson [{sample['CR']['wilson'][0]:.4f}, {sample['CR']['wilson'][1]:.4f}], "
          f"bootstrap [{sample['CR']['bootstrap'][0]:.4f}, {sample['CR']['bootstrap'][1]:.4f}]")
    if args.check:
        print(f"check: batch == plain (plain run_score of one run {figures['plain_run_score_one_run_s']} s, "
              f"plain McNemar of three runs {figures['plain_mcnemar_three_runs_s']} s)")
    print(f"peak RSS {figures['peak_rss_mb']} MB; load average {' '.join(map(str, figures['load_average']))} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
