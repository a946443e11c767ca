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

`tiered_sample_plan` is the option that draws the way the authors' own sampler did (PROTOCOL §11; their
`tools/sample_gold.py`, seed 20260813, N 250 → tiers A 99 / B 24 / C 35 / D 92):
  A_forced_label   every item of the main pool the cascade did not label PROCEED;
  B_disagreement   cascade–judge disagreements not in A, stratified by (judge label, form), cap 40;
  C_new_shapes     from a second pool of new-shape outputs: every one the cascade did not label PROCEED,
                   then a stratified take by (carrier, component) up to the quota (35) — the non-PROCEED
                   ones are all taken even past the quota, as the authors' sampler does;
  D_fill           the main pool's items with cascade = judge = PROCEED, stratified by (form, gap, arm),
                   up to the sample size.
A stratified take shuffles each stratum and goes round-robin over the strata in sorted order, so every
stratum gives one item before any gives a second. The final list is shuffled (presentation order must
not track tier or source); ids are assigned in that order by the caller.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

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


TIERED_SAMPLER_VERSION = "goldkey-lapse-tiered-sampler-1"
TIERS = ("A_forced_label", "B_disagreement", "C_new_shapes", "D_fill")
CAP_B = 40
QUOTA_C = 35
# Judge labels that are no label: such an item has no cascade–judge comparison (as in the authors' sampler).
NO_JUDGE = ("", "UNPARSED", "UNREACHABLE")


def stratified_take(units: Sequence[dict], key, n: int, rng: random.Random) -> list[dict]:
    """Up to n units: shuffle each stratum (strata in sorted order, so the draw does not depend on the
    input order), then round-robin over the strata in sorted order, one unit from each per round."""
    strata: dict[tuple, list[dict]] = defaultdict(list)
    for unit in sorted(units, key=lambda u: u["id"]):
        strata[key(unit)].append(unit)
    order = sorted(strata, key=str)
    for stratum in order:
        rng.shuffle(strata[stratum])
    out: list[dict] = []
    while len(out) < n and any(strata[s] for s in order):
        for stratum in order:
            if strata[stratum] and len(out) < n:
                out.append(strata[stratum].pop())
    return out


def tiered_sample_plan(
    units: Sequence[dict],
    *,
    size: int,
    seed: int,
    new_shapes: Sequence[dict] = (),
    cap_b: int = CAP_B,
    quota_c: int = QUOTA_C,
    sources: dict | None = None,
) -> dict:
    """The four-tier draw (module docstring). `units` is the main pool, `new_shapes` the new-shape pool
    (each unit: {"id", "task" (the arm), "form", "gap", "carrier", "component", "cascade", "judge"}; ids
    unique across both). Returns {"selected": [(id, tier)] in presentation order, "manifest": {...}}: seed,
    tier sizes, caps, distributions and each source's hash (`sources` names them: {"main": name,
    "new_shapes": name}). Raises ValueError when tiers A–C alone exceed the size."""
    if size < 1:
        raise ValueError("sample size must be at least 1")
    rng = random.Random(seed)
    main = sorted(units, key=lambda u: u["id"])
    extra = sorted(new_shapes, key=lambda u: u["id"])
    picked: dict[str, str] = {}  # id -> tier, in the order taken

    def add(chosen: Iterable[dict], tier: str) -> None:
        for unit in chosen:
            picked.setdefault(unit["id"], tier)

    def judged(unit: dict) -> bool:
        return unit.get("judge", "") not in NO_JUDGE

    add((u for u in main if u.get("cascade") != "PROCEED"), "A_forced_label")
    disagreeing = [u for u in main if judged(u) and u["judge"] != u.get("cascade") and u["id"] not in picked]
    add(stratified_take(disagreeing, lambda u: (u["judge"], u.get("form", "")), cap_b, rng), "B_disagreement")
    add((u for u in extra if u.get("cascade") != "PROCEED"), "C_new_shapes")
    room = quota_c - sum(1 for tier in picked.values() if tier == "C_new_shapes")
    rest = [u for u in extra if u["id"] not in picked]
    add(stratified_take(rest, lambda u: (u.get("carrier", ""), u.get("component", "")), max(room, 0), rng), "C_new_shapes")
    if len(picked) > size:
        raise ValueError(f"tiers A-C already hold {len(picked)} items, more than the sample size {size}")
    fill = [u for u in main if u.get("cascade") == "PROCEED" and u.get("judge") == "PROCEED" and u["id"] not in picked]
    add(stratified_take(fill, lambda u: (u.get("form", ""), u.get("gap", ""), u.get("task", "")), size - len(picked), rng), "D_fill")

    presented = list(picked.items())
    rng.shuffle(presented)
    by_id = {u["id"]: u for u in (*main, *extra)}
    chosen = [by_id[i] for i, _ in presented]

    def dist(key):
        return dict(sorted(Counter(str(u.get(key, "")) for u in chosen).items()))

    names = sources or {}
    source_of = {u["id"]: "new_shapes" for u in extra}
    tiers = Counter(tier for _, tier in presented)
    manifest = {
        "sampler": TIERED_SAMPLER_VERSION,
        "design": "tiers",
        "seed": seed,
        "n_requested": size,
        "n_total": len(presented),
        "n_pool": len(main) + len(extra),
        "caps": {"B_disagreement": cap_b, "C_new_shapes": quota_c},
        "tiers": {tier: tiers.get(tier, 0) for tier in TIERS},
        "sources": {
            role: {"item_set": names.get(role, role), "n_outputs": len(pool), "sha16": pool_hash(pool)[:16]}
            for role, pool in (("main", main), ("new_shapes", extra)) if pool or role == "main"
        },
        "cascade_label_dist": dist("cascade"),
        "judge_label_dist": dist("judge"),
        "form_dist": dist("form"),
        "arm_dist": dist("task"),
        "gap_dist": dist("gap"),
        "source_dist": dict(sorted(Counter(source_of.get(u["id"], "main") for u in chosen).items())),
        "pool_sha256": pool_hash([*main, *extra]),
    }
    return {"selected": presented, "manifest": manifest}
