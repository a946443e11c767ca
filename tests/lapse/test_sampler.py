from collections import Counter

import pytest

from lapse.sampler import sample_plan, tiered_sample_plan
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


# ---------------------------------------------------------------------------------------------
# The authors' four tiers (tiered_sample_plan)

ARMS = ("behavioral", "e2", "l2e2")


def tiered_pool():
    """A main pool: mostly cascade = judge = PROCEED, some non-PROCEED cascade labels, and PROCEED items
    the judge disagrees with; and a new-shape pool with carriers and components."""
    main, n = [], 0
    for arm in ARMS:
        for form in FORMS:
            for gap in GAPS:
                for _ in range(8):
                    n += 1
                    cascade = "HEDGE" if n % 11 == 0 else "PROCEED-WITH-CAVEAT" if n % 23 == 0 else "PROCEED"
                    judge = "TEMPLATE" if n % 5 == 0 else "PROCEED-WITH-CAVEAT" if n % 7 == 0 else cascade
                    main.append({"id": f"m{n:03d}", "task": arm, "form": form, "gap": gap, "cascade": cascade, "judge": judge})
    shapes = [
        {"id": f"s{k:03d}", "task": "behavioral", "form": "prog", "gap": "stale", "carrier": f"c{k % 5}",
         "component": f"comp{k % 3}", "cascade": "HEDGE" if k % 9 == 0 else "PROCEED", "judge": ""}
        for k in range(60)
    ]
    return main, shapes


def tiers_of(plan):
    by_tier = {}
    for unit_id, tier in plan["selected"]:
        by_tier.setdefault(tier, []).append(unit_id)
    return by_tier


def test_tier_a_is_every_item_the_cascade_did_not_label_proceed():
    main, shapes = tiered_pool()
    plan = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=20260813)
    assert set(tiers_of(plan)["A_forced_label"]) == {u["id"] for u in main if u["cascade"] != "PROCEED"}


def test_tier_b_takes_disagreements_round_robin_over_judge_label_and_form_up_to_the_cap():
    main, shapes = tiered_pool()
    plan = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=1, cap_b=6)
    by_id = {u["id"]: u for u in main}
    b = tiers_of(plan)["B_disagreement"]
    assert len(b) == 6
    assert all(by_id[i]["cascade"] == "PROCEED" and by_id[i]["judge"] != "PROCEED" for i in b)
    strata = Counter((by_id[i]["judge"], by_id[i]["form"]) for i in b)
    # 2 judge labels x 3 forms = 6 strata: one from each before any stratum gives a second.
    assert len(strata) == 6 and set(strata.values()) == {1}


def test_tier_c_takes_every_non_proceed_new_shape_then_fills_to_the_quota():
    main, shapes = tiered_pool()
    plan = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=2, quota_c=20)
    c = set(tiers_of(plan)["C_new_shapes"])
    assert len(c) == 20 and {u["id"] for u in shapes if u["cascade"] != "PROCEED"} <= c
    assert c <= {u["id"] for u in shapes}


def test_tier_d_fills_from_agreeing_proceed_evenly_over_form_gap_and_arm():
    main, shapes = tiered_pool()
    plan = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=3)
    by_id = {u["id"]: u for u in main}
    d = tiers_of(plan)["D_fill"]
    assert len(plan["selected"]) == 150 and len(d) == 150 - sum(len(v) for t, v in tiers_of(plan).items() if t != "D_fill")
    assert all(by_id[i]["cascade"] == by_id[i]["judge"] == "PROCEED" for i in d)
    counts = Counter((by_id[i]["form"], by_id[i]["gap"], by_id[i]["task"]) for i in d)
    assert len(counts) == len(FORMS) * len(GAPS) * len(ARMS) and max(counts.values()) - min(counts.values()) <= 1


def test_the_tiered_manifest_records_seed_tier_sizes_and_source_hashes():
    main, shapes = tiered_pool()
    plan = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=20260813, sources={"main": "v1", "new_shapes": "v2"})
    m = plan["manifest"]
    assert m["seed"] == 20260813 and m["n_total"] == 150
    assert m["tiers"] == {tier: len(ids) for tier, ids in tiers_of(plan).items()}
    assert sum(m["tiers"].values()) == 150
    assert m["sources"]["main"]["item_set"] == "v1" and m["sources"]["new_shapes"]["item_set"] == "v2"
    assert all(len(s["sha16"]) == 16 for s in m["sources"].values())
    changed = [dict(u, cascade="HEDGE") if u["id"] == "m001" else u for u in main]
    assert tiered_sample_plan(changed, new_shapes=shapes, size=150, seed=20260813)["manifest"]["sources"]["main"]["sha16"] != m["sources"]["main"]["sha16"]


def test_the_tiered_draw_is_reproducible_and_presented_shuffled():
    main, shapes = tiered_pool()
    first = tiered_sample_plan(main, new_shapes=shapes, size=150, seed=5)["selected"]
    assert first == tiered_sample_plan(list(reversed(main)), new_shapes=shapes, size=150, seed=5)["selected"]
    assert first != tiered_sample_plan(main, new_shapes=shapes, size=150, seed=6)["selected"]
    tiers_in_order = [tier for _, tier in first]
    assert tiers_in_order != sorted(tiers_in_order)  # not grouped by tier


def test_a_sample_smaller_than_the_forced_tiers_is_refused():
    main, shapes = tiered_pool()
    with pytest.raises(ValueError, match="tiers A-C already hold"):
        tiered_sample_plan(main, new_shapes=shapes, size=10, seed=1)
