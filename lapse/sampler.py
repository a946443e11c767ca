"""Seeded, stratified gold-set sampler for Lapse behaviour outputs (pure: dicts in, a plan out).

Its only product is the item list of a new annotation campaign: it runs before anyone labels and
never reads answers, decisions or agreement. The units come from `lapse.services.lapse_sample_create`,
which reads the outputs' scorer labels.

Design (after the Lapse authors' released `gold_manifest_v1.json`):
  A_forced_label   every automatic label (cascade or judge) gets a floor of items, so rare labels
                   are covered even when the pool is dominated by PROCEED;
  B_disagreement   items where the cascade and the judge disagree are oversampled;
  C_fill           the rest round-robins over strata (task × frame × form × gap), so every cell is
                   represented before any cell gets a second item.
Same pool + same seed + same size = same sample, in the same order.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from protocols.lapse import LABELS

SAMPLER_VERSION = "goldkey-lapse-sampler-1"
STRATA = ("task", "frame", "form", "gap", "disagreement")


def unit_disagrees(unit: dict) -> bool:
    return bool(unit.get("cascade")) and bool(unit.get("judge")) and unit["cascade"] != unit["judge"]


def pool_hash(units: Sequence[dict]) -> str:
    body = json.dumps(
        sorted([u["id"], u.get("response_sha", ""), u.get("cascade", ""), u.get("judge", "")] for u in units),
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _stratum(unit: dict) -> tuple:
    return tuple(str(unit.get(key, "")) for key in ("task", "frame", "form", "gap"))


def sample_plan(
    units: Sequence[dict],
    *,
    size: int,
    seed: int,
    forced_per_label: int | None = None,
    disagreement_share: float = 0.1,
) -> dict:
    """Pick `size` units. Each unit: {"id", "task", "frame", "form", "gap", "cascade", "judge"}.
    Returns {"selected": [(id, tier)], "manifest": {...}} — the manifest records seed, strata,
    tier sizes, distributions and the pool hash."""
    if size < 1:
        raise ValueError("sample size must be at least 1")
    rng = random.Random(seed)
    pool = sorted(units, key=lambda u: u["id"])
    size = min(size, len(pool))
    chosen: dict[str, str] = {}  # id -> tier, insertion-ordered

    def take(candidates: list[dict], limit: int, tier: str) -> int:
        free = [u for u in candidates if u["id"] not in chosen]
        rng.shuffle(free)
        taken = 0
        for unit in free:
            if taken >= limit or len(chosen) >= size:
                break
            chosen[unit["id"]] = tier
            taken += 1
        return taken

    if forced_per_label is None:
        forced_per_label = max(1, size // 12)
    tiers = Counter()
    for label in LABELS:
        with_label = [u for u in pool if label in (u.get("cascade"), u.get("judge"))]
        tiers["A_forced_label"] += take(with_label, forced_per_label, "A_forced_label")
    disagreeing = [u for u in pool if unit_disagrees(u)]
    tiers["B_disagreement"] += take(disagreeing, math.ceil(size * disagreement_share), "B_disagreement")

    by_stratum: dict[tuple, list[dict]] = defaultdict(list)
    for unit in pool:
        if unit["id"] not in chosen:
            by_stratum[_stratum(unit)].append(unit)
    for members in by_stratum.values():
        rng.shuffle(members)
    order = sorted(by_stratum)
    while len(chosen) < size and any(by_stratum[s] for s in order):
        for stratum in order:
            if len(chosen) >= size:
                break
            if by_stratum[stratum]:
                chosen[by_stratum[stratum].pop()["id"]] = "C_fill"
                tiers["C_fill"] += 1

    by_id = {u["id"]: u for u in pool}
    picked = [by_id[i] for i in chosen]
    # Present items in a seeded order that does not reveal the tier they came from.
    presented = list(chosen.items())
    rng.shuffle(presented)

    def dist(key):
        return dict(sorted(Counter(str(u.get(key, "")) for u in picked).items()))

    missing_labels = [
        label for label in LABELS
        if not any(label in (u.get("cascade"), u.get("judge")) for u in picked)
        and any(label in (u.get("cascade"), u.get("judge")) for u in pool)
    ]
    manifest = {
        "sampler": SAMPLER_VERSION,
        "seed": seed,
        "n_requested": size,
        "n_total": len(picked),
        "n_pool": len(pool),
        "strata": list(STRATA),
        "forced_per_label": forced_per_label,
        "disagreement_share": disagreement_share,
        "tiers": {k: tiers.get(k, 0) for k in ("A_forced_label", "B_disagreement", "C_fill")},
        "cascade_label_dist": dist("cascade"),
        "judge_label_dist": dist("judge"),
        "task_dist": dist("task"),
        "frame_dist": dist("frame"),
        "form_dist": dist("form"),
        "gap_dist": dist("gap"),
        "disagreement": {"sampled": sum(unit_disagrees(u) for u in picked), "pool": len(disagreeing)},
        "labels_uncovered": missing_labels,
        "pool_sha256": pool_hash(pool),
    }
    return {"selected": presented, "manifest": manifest}
