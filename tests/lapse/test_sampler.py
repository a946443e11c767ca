from collections import Counter

import pytest

from lapse.sampler import sample_plan
from protocols.lapse import LABELS

FRAMES = ("lodging", "workplace", "vehicle", "class")
FORMS = ("prog", "simple", "bound")
GAPS = ("fresh", "stale")


def pool():
    """A PROCEED-heavy pool with rare labels and a few cascade–judge disagreements."""
    units = []
    n = 0
    for frame in FRAMES:
        for form in FORMS:
            for gap in GAPS:
                for _ in range(6):
                    n += 1
                    cascade = "PROCEED"
                    if n % 17 == 0:
                        cascade = "HEDGE"
                    if n % 41 == 0:
                        cascade = "TEMPLATE"
                    if n == 77:
                        cascade = "CONFAB-COMMIT"
                    if n == 88:
                        cascade = "PROCEED-WITH-CAVEAT"
                    judge = "HEDGE" if n % 13 == 0 else cascade
                    units.append({"id": f"o{n:03d}", "task": "behavioral", "frame": frame, "form": form, "gap": gap,
                                  "cascade": cascade, "judge": judge})
    return units


def test_same_pool_and_seed_give_the_same_sample_in_the_same_order():
    assert sample_plan(pool(), size=40, seed=3)["selected"] == sample_plan(pool(), size=40, seed=3)["selected"]


def test_a_different_seed_gives_a_different_sample():
    first = {i for i, _ in sample_plan(pool(), size=40, seed=3)["selected"]}
    second = {i for i, _ in sample_plan(pool(), size=40, seed=4)["selected"]}
    assert first != second


def test_every_label_present_in_the_pool_is_covered_even_in_a_small_sample():
    units = pool()
    plan = sample_plan(units, size=12, seed=1)
    by_id = {u["id"]: u for u in units}
    covered = {by_id[i]["cascade"] for i, _ in plan["selected"]} | {by_id[i]["judge"] for i, _ in plan["selected"]}
    assert set(LABELS) <= covered
    assert plan["manifest"]["labels_uncovered"] == []


def test_cascade_judge_disagreements_are_oversampled():
    units = pool()
    share_in_pool = sum(u["cascade"] != u["judge"] for u in units) / len(units)
    plan = sample_plan(units, size=40, seed=2)
    assert plan["manifest"]["disagreement"]["sampled"] / 40 > share_in_pool


def test_fill_covers_every_stratum_before_repeating_one():
    units = [dict(u, cascade="PROCEED", judge="PROCEED") for u in pool()]
    plan = sample_plan(units, size=len(FRAMES) * len(FORMS) * len(GAPS), seed=9, forced_per_label=0, disagreement_share=0)
    by_id = {u["id"]: u for u in units}
    cells = Counter((by_id[i]["frame"], by_id[i]["form"], by_id[i]["gap"]) for i, _ in plan["selected"])
    assert set(cells.values()) == {1}


def test_manifest_records_seed_strata_tiers_and_pool_hash():
    manifest = sample_plan(pool(), size=30, seed=5)["manifest"]
    assert manifest["seed"] == 5 and manifest["n_total"] == 30
    assert manifest["strata"] == ["task", "frame", "form", "gap", "disagreement"]
    assert sum(manifest["tiers"].values()) == 30
    assert len(manifest["pool_sha256"]) == 64


def test_pool_hash_changes_when_a_label_changes():
    units = pool()
    before = sample_plan(units, size=5, seed=1)["manifest"]["pool_sha256"]
    units[0]["judge"] = "TEMPLATE"
    assert sample_plan(units, size=5, seed=1)["manifest"]["pool_sha256"] != before


def test_size_larger_than_the_pool_takes_the_whole_pool():
    assert sample_plan(pool()[:7], size=50, seed=1)["manifest"]["n_total"] == 7


def test_size_below_one_is_refused():
    with pytest.raises(ValueError):
        sample_plan(pool(), size=0, seed=1)
