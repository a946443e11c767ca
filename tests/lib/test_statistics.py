"""The pure statistics module, against scikit-learn, statsmodels and hand-computed cases."""

import math
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from goldkey.lib import statistics as st

# The hand-computed 2x2 case: rater a says y on rows, rater b on columns.
#            b=y  b=n
#   a=y       20    5
#   a=n       10   15        n = 50
HAND_A = ["y"] * 25 + ["n"] * 25
HAND_B = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15


def random_pairs(rng: random.Random):
    categories = ["contradicts", "consistent", "cannot-tell", "other"][: rng.randint(2, 4)]
    n = rng.randint(5, 300)
    weights = [rng.random() + 0.05 for _ in categories]
    a = rng.choices(categories, weights, k=n)
    agree = rng.random()
    b = [x if rng.random() < agree else rng.choice(categories) for x in a]
    return a, b


def test_kappa_equals_scikit_learn_on_many_seeded_random_cases():
    rng = random.Random(20261129)
    checked = 0
    for _ in range(300):
        a, b = random_pairs(rng)
        expected = cohen_kappa_score(a, b)
        if math.isnan(expected):
            continue
        assert st.cohen_kappa(a, b) == pytest.approx(expected, abs=1e-12)
        checked += 1
    assert checked > 270


def test_confusion_matrix_equals_scikit_learn_on_seeded_random_cases():
    rng = random.Random(7)
    for _ in range(100):
        a, b = random_pairs(rng)
        cats, counts = st.confusion_matrix(a, b)
        assert counts == sk_confusion_matrix(a, b, labels=cats).tolist()


def test_analytic_standard_error_equals_statsmodels_on_seeded_random_cases():
    # statsmodels' cohens_kappa reports the Fleiss–Cohen–Everitt non-null standard error too.
    rng = random.Random(11)
    for _ in range(100):
        a, b = random_pairs(rng)
        cats, counts = st.confusion_matrix(a, b)
        result = sm_cohens_kappa(np.array(counts))
        if abs(result.var_kappa) < 1e-12:
            # a zero variance (perfect agreement, or one rater on a single category) rounds to a tiny
            # negative; statsmodels takes its square root (nan), we clip it to 0
            assert st.kappa_se(a, b) == pytest.approx(0.0, abs=1e-6)
            continue
        assert st.kappa_se(a, b) == pytest.approx(result.std_kappa, rel=1e-9)


def test_hand_computed_two_by_two_kappa_and_interval():
    # p_o = (20 + 15)/50 = 0.7; margins a (.5, .5), b (.6, .4); p_e = .5*.6 + .5*.4 = .5
    # kappa = (.7 - .5)/(1 - .5) = 0.4
    assert st.observed_agreement(HAND_A, HAND_B) == pytest.approx(0.7)
    assert st.cohen_kappa(HAND_A, HAND_B) == pytest.approx(0.4)
    # Fleiss–Cohen–Everitt: cells p = [[.4, .1], [.2, .3]], 1 - k = .6
    # diagonal: .4*(1 - (.5+.6)*.6)^2 + .3*(1 - (.5+.4)*.6)^2 = .04624 + .06348 = .10972
    # off-diagonal: (.6^2) * (.1*(.6+.5)^2 + .2*(.4+.5)^2) = .36 * .283 = .10188
    # correction: (k - p_e(1 - k))^2 = (.4 - .3)^2 = .01
    # var = (.10972 + .10188 - .01) / (50 * .5^2) = .2016 / 12.5 = .016128
    se = math.sqrt(0.016128)
    assert st.kappa_se(HAND_A, HAND_B) == pytest.approx(se)
    low, high = st.kappa_ci_analytic(HAND_A, HAND_B)
    assert low == pytest.approx(0.4 - 1.959963984540054 * se)
    assert high == pytest.approx(0.4 + 1.959963984540054 * se)


def test_hand_computed_pabak_and_gwet_ac1():
    # PABAK with 2 categories: 2*.7 - 1 = .4
    assert st.pabak(HAND_A, HAND_B) == pytest.approx(0.4)
    # AC1: pi_y = (.5 + .6)/2 = .55, pi_n = .45; p_e = (.55*.45 + .45*.55)/(2 - 1) = .495
    # AC1 = (.7 - .495)/(1 - .495) = .205/.505
    assert st.gwet_ac1(HAND_A, HAND_B) == pytest.approx(0.205 / 0.505)


def test_hand_computed_per_category_specific_agreement():
    # y: both 20, a used 25, b used 30 -> 2*20/55; n: both 15, a 25, b 20 -> 2*15/45
    per = st.per_category_agreement(HAND_A, HAND_B)
    assert per["y"]["both"] == 20 and per["y"]["either"] == 35
    assert per["y"]["specific"] == pytest.approx(40 / 55)
    assert per["n"]["specific"] == pytest.approx(30 / 45)


def test_hand_computed_three_category_case():
    # a: x x x y y z ; b: x x y y z z  -> agree 4/6
    # a margins x 3/6, y 2/6, z 1/6; b margins x 2/6, y 2/6, z 2/6
    # p_e = (3*2 + 2*2 + 1*2)/36 = 12/36 = 1/3; kappa = (2/3 - 1/3)/(2/3) = 0.5
    a = list("xxxyyz")
    b = list("xxyyzz")
    assert st.cohen_kappa(a, b) == pytest.approx(0.5)
    # PABAK with 3 categories: (3 * 2/3 - 1)/2 = 0.5
    assert st.pabak(a, b) == pytest.approx(0.5)


def test_bootstrap_interval_is_seeded_and_brackets_kappa():
    first = st.kappa_ci_bootstrap(HAND_A, HAND_B, seed=3)
    assert first == st.kappa_ci_bootstrap(HAND_A, HAND_B, seed=3)
    assert first != st.kappa_ci_bootstrap(HAND_A, HAND_B, seed=4)
    assert first[0] < 0.4 < first[1]


def test_bootstrap_interval_matches_resampling_items_by_hand():
    # The multinomial shortcut must agree with literally resampling items (to Monte-Carlo precision).
    rng = np.random.default_rng(5)
    n = len(HAND_A)
    kappas = []
    for _ in range(4000):
        idx = rng.integers(0, n, n)
        kappas.append(st.cohen_kappa([HAND_A[i] for i in idx], [HAND_B[i] for i in idx]))
    by_hand = np.percentile(kappas, [2.5, 97.5])
    low, high = st.kappa_ci_bootstrap(HAND_A, HAND_B, replicates=4000, seed=5)
    assert low == pytest.approx(by_hand[0], abs=0.03)
    assert high == pytest.approx(by_hand[1], abs=0.03)


def test_perfect_agreement_on_one_category_is_kappa_one_with_zero_width():
    a = b = ["consistent"] * 12
    assert st.cohen_kappa(a, b) == 1.0
    assert st.kappa_se(a, b) == 0.0
    assert st.kappa_ci_bootstrap(a, b) == (1.0, 1.0)
    assert st.pabak(a, b) == 1.0
    assert st.gwet_ac1(a, b) == 1.0
    assert st.fleiss_kappa(list(zip(a, b, strict=True))) == (1.0, 12)
    assert st.krippendorff_alpha_nominal([a, b]) == 1.0


def test_perfect_agreement_on_several_categories_is_kappa_one():
    a = ["x", "y", "z", "x", "y"]
    assert st.cohen_kappa(a, list(a)) == 1.0
    assert st.kappa_ci_analytic(a, list(a)) == (1.0, 1.0)


def test_raters_each_stuck_on_a_different_category_have_kappa_zero():
    # p_o = 0, p_e = 1*0 + 0*1 = 0 -> kappa 0 (scikit-learn agrees)
    a, b = ["x"] * 4, ["y"] * 4
    assert st.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_empty_input_gives_nan_everywhere_and_no_exception():
    assert math.isnan(st.cohen_kappa([], []))
    assert math.isnan(st.observed_agreement([], []))
    assert math.isnan(st.kappa_se([], []))
    assert all(math.isnan(x) for x in st.kappa_ci_bootstrap([], []))
    assert math.isnan(st.gwet_ac1([], []))
    assert math.isnan(st.fleiss_kappa([])[0])
    assert math.isnan(st.krippendorff_alpha_nominal([[], []]))
    summary = st.kappa_summary([], [])
    assert summary["n"] == 0 and math.isnan(summary["kappa"])


def test_unequal_lists_are_refused():
    with pytest.raises(ValueError):
        st.cohen_kappa(["x"], ["x", "y"])


def test_missing_labels_are_left_out_and_counted():
    summary = st.kappa_summary(["x", None, "y", "x"], ["x", "y", None, "y"])
    assert summary["n"] == 2 and summary["left_out"] == 2 and summary["agree"] == 1


def test_eligible_pairs_keep_only_items_with_both_labels_in_the_binary_set():
    binary = {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}
    a = ["PROCEED", "HEDGE", "PROCEED-WITH-CAVEAT", None, "TEMPLATE"]
    b = ["PROCEED", "TEMPLATE", "PROCEED", "HEDGE", "CONFAB-COMMIT"]
    ea, eb, counts = st.eligible_pairs(a, b, binary)
    assert ea == ["PROCEED", "WITHHOLD"] and eb == ["PROCEED", "WITHHOLD"]
    assert counts == {"n": 2, "missing": 1, "excluded": 2}


def test_fleiss_kappa_for_two_raters_uses_pooled_margins():
    # Fleiss: pooled shares y = (25+30)/100 = .55, n = .45 -> P_e = .55^2 + .45^2 = .505
    # P_o = .7 (two raters: an item's agreement is 1 or 0) -> (.7 - .505)/(1 - .505) = .195/.495
    kappa, used = st.fleiss_kappa(list(zip(HAND_A, HAND_B, strict=True)))
    assert used == 50
    assert kappa == pytest.approx(0.195 / 0.495)


def test_fleiss_kappa_leaves_out_items_with_a_missing_rating():
    ratings = [["x", "x", "y"], ["y", "y", "y"], ["x", None, "x"], ["x", "x", "x"]]
    _, used = st.fleiss_kappa(ratings)
    assert used == 3


def test_krippendorff_alpha_hand_computed_with_missing_value():
    # Two raters, items (x,x), (x,y), (y,y), and one item rated only by a (unpairable, ignored).
    # Pairable values: x x x y y y (n = 6). Observed disagreement: one disagreeing item of 2 values,
    # coincidences o_xy = o_yx = 1, D_o = 2/6. Expected: n_x = n_y = 3, D_e = 2*3*3/(6*5) = 18/30.
    # alpha = 1 - D_o/D_e = 1 - (1/3)/(3/5) = 1 - 5/9 = 4/9
    a = ["x", "x", "y", "x"]
    b = ["x", "y", "y", None]
    assert st.krippendorff_alpha_nominal([a, b]) == pytest.approx(4 / 9)


def test_two_rater_fleiss_and_krippendorff_from_pair_tables_equal_the_label_list_versions():
    rng = random.Random(19)
    for _ in range(30):
        a, b = random_pairs(rng)
        b = [None if rng.random() < 0.05 else y for y in b]
        pairs = st.pair_counts(a, b)
        assert st.fleiss_kappa_from_pairs(pairs) == pytest.approx(st.fleiss_kappa(list(zip(a, b, strict=True))), nan_ok=True)
        assert st.krippendorff_alpha_from_pairs(pairs) == pytest.approx(st.krippendorff_alpha_nominal([a, b]), nan_ok=True)


def test_kappa_summary_from_summed_pair_tables_equals_the_summary_of_the_union():
    rng = random.Random(23)
    a1, b1 = random_pairs(rng)
    a2, b2 = random_pairs(rng)
    summed = st.pair_counts(a1, b1) + st.pair_counts(a2, b2)
    assert st.kappa_summary_from_pairs(summed, seed=4) == st.kappa_summary(a1 + a2, b1 + b2, seed=4)


def test_json_safe_turns_undefined_figures_into_null_at_any_depth():
    assert st.json_safe({"kappa": float("nan"), "ci": [float("nan"), 0.5], "n": 3, "sub": ({"k": 1.0},)}) == {
        "kappa": None,
        "ci": [None, 0.5],
        "n": 3,
        "sub": [{"k": 1.0}],
    }


def test_json_safe_turns_an_infinite_figure_into_null_too():
    # A stratum read whole has an infinite effective size: JSON (and a key's manifest) cannot hold it.
    assert st.json_safe({"effective_n": float("inf"), "low": [float("-inf"), 2.0]}) == {"effective_n": None, "low": [None, 2.0]}


def test_fleiss_kappa_table_is_bit_for_bit_the_statsmodels_value():
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(7)
    for raters, cats, items in ((2, 2, 10), (2, 3, 200), (3, 4, 57), (5, 3, 1000), (2, 3, 100_000)):
        table = np.zeros((items, cats), dtype=np.int64)
        for row, labels in enumerate(rng.integers(0, cats, (items, raters))):
            for label in labels:
                table[row, label] += 1
        assert st._fleiss_table(table) == sm_fleiss(table, method="fleiss")


# ---------------------------------------------------------------------------------------------
# More than two raters: Fleiss' kappa with its interval, Krippendorff's alpha, Cohen's kappa per pair
# and per rater against a reference.


def random_raters(rng: random.Random, *, raters: int, items: int, missing: float):
    categories = ["contradicts", "consistent", "cannot-tell", "other"][: rng.randint(2, 4)]
    truth = rng.choices(categories, k=items)
    skill = [rng.random() for _ in range(raters)]
    return [
        [None if rng.random() < missing else (t if rng.random() < s else rng.choice(categories)) for t in truth]
        for s in skill
    ]


def test_fleiss_kappa_equals_statsmodels_on_aggregated_random_ratings():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = random.Random(29)
    for _ in range(40):
        raters = random_raters(rng, raters=rng.randint(2, 6), items=rng.randint(3, 150), missing=0)
        ratings = [list(r) for r in zip(*raters, strict=True)]
        if len({x for r in ratings for x in r}) < 2:
            continue
        table, _ = aggregate_raters(np.array(ratings, dtype=object))
        summary = st.fleiss_summary(ratings, seed=1)
        assert summary["kappa"] == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
        assert summary["n"] == len(ratings) and summary["raters_per_item"] == len(raters)


def test_fleiss_kappa_textbook_example_is_0_210():
    # Fleiss (1971) as reproduced on Wikipedia ("Fleiss' kappa", worked example): 10 subjects, 14
    # raters, 5 categories; P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    rows = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[category for category, n in enumerate(row) for _ in range(n)] for row in rows]
    summary = st.fleiss_summary(ratings)
    assert round(summary["kappa"], 3) == 0.210
    assert round(summary["observed"], 3) == 0.378
    low, high = summary["ci95_bootstrap"]
    assert low < summary["kappa"] < high


def test_fleiss_bootstrap_interval_is_seeded_and_matches_resampling_items_by_hand():
    rng = random.Random(31)
    ratings = [list(r) for r in zip(*random_raters(rng, raters=3, items=120, missing=0), strict=True)]
    first = st.fleiss_kappa_ci_bootstrap(ratings, replicates=3000, seed=2)
    assert first == st.fleiss_kappa_ci_bootstrap(ratings, replicates=3000, seed=2)
    assert first != st.fleiss_kappa_ci_bootstrap(ratings, replicates=3000, seed=3)
    draw = np.random.default_rng(8)
    kappas = [st.fleiss_kappa([ratings[i] for i in draw.integers(0, len(ratings), len(ratings))])[0] for _ in range(3000)]
    by_hand = np.percentile(kappas, [2.5, 97.5])
    assert first[0] == pytest.approx(by_hand[0], abs=0.03)
    assert first[1] == pytest.approx(by_hand[1], abs=0.03)


def test_fleiss_degenerate_cases_are_defined_or_say_why():
    one_category = [["x", "x", "x"]] * 5
    assert st.fleiss_summary(one_category)["kappa"] == 1.0
    assert st.fleiss_summary(one_category)["ci95_bootstrap"] == [1.0, 1.0]
    assert st.fleiss_summary([["x", "y", "x"]])["n"] == 1  # one item: defined (kappa < 0), no exception
    assert st.fleiss_summary([["x", "y", "x"]])["kappa"] == pytest.approx(-0.5)
    empty = st.fleiss_summary([])
    assert empty["n"] == 0 and math.isnan(empty["kappa"]) and math.isnan(empty["observed"])
    mixed = st.fleiss_summary([["x", "y"], ["x", "x", "y"]])  # unequal ratings per item: undefined, said so
    assert math.isnan(mixed["kappa"]) and mixed["raters_per_item"] is None


def test_krippendorff_alpha_equals_the_krippendorff_package_with_missing_values():
    import krippendorff

    rng = random.Random(37)
    checked = 0
    for _ in range(80):
        raters = random_raters(rng, raters=rng.randint(2, 6), items=rng.randint(2, 120), missing=rng.random() * 0.6)
        cats = st.categories_of(*raters)
        index = {c: i for i, c in enumerate(cats)}
        data = np.array([[np.nan if x is None else index[x] for x in r] for r in raters], dtype=float)
        pairable = [[r[u] for r in raters if r[u] is not None] for u in range(len(raters[0]))]
        if len({x for values in pairable if len(values) >= 2 for x in values}) < 2:
            continue  # the package refuses a single pairable category (ours: 1.0, tested below)
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=list(range(len(cats))))
        assert st.krippendorff_alpha_nominal(raters) == pytest.approx(expected, abs=1e-12)
        checked += 1
    assert checked > 50


def test_krippendorff_alpha_textbook_example_with_missing_values_is_0_743():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: 4 observers, 12
    # units, nominal data with missing values; alpha = 0.743 over 40 pairable values in 11 units.
    n = None
    raters = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    summary = st.krippendorff_alpha_summary(raters)
    assert round(summary["alpha"], 3) == 0.743
    assert (summary["n"], summary["values"]) == (11, 40)


def test_krippendorff_degenerate_cases_are_defined_or_nan_when_nothing_is_pairable():
    assert st.krippendorff_alpha_nominal([["x", "x"], ["x", "x"], ["x", None]]) == 1.0
    assert math.isnan(st.krippendorff_alpha_nominal([["x", None], [None, "y"]]))  # no item has two values
    one_item = st.krippendorff_alpha_summary([["x"], ["y"], ["x"]])
    # o_xx = 1, o_xy = o_yx = 1; n = 3, n_x = 2, n_y = 1: alpha = 1 - (n - 1)·2 / (9 - 5) = 0
    assert one_item["n"] == 1 and one_item["alpha"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="differ in length"):
        st.krippendorff_alpha_nominal([["x"], ["x", "y"]])


def test_pairwise_kappa_equals_scikit_learn_per_pair_on_the_shared_items():
    rng = random.Random(41)
    raters = dict(zip("ABCD", random_raters(rng, raters=4, items=90, missing=0.3), strict=True))
    rows = st.pairwise_kappa(raters, seed=5)
    assert [r["raters"] for r in rows] == [["A", "B"], ["A", "C"], ["A", "D"], ["B", "C"], ["B", "D"], ["C", "D"]]
    for row in rows:
        a, b = st.paired(raters[row["raters"][0]], raters[row["raters"][1]])
        assert row["n"] == len(a) and row["agree"] == sum(x == y for x, y in zip(a, b, strict=True))
        assert row["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        only_one = sum((x is None) != (y is None) for x, y in zip(raters[row["raters"][0]], raters[row["raters"][1]], strict=True))
        assert row["left_out"] == only_one


def test_agreement_with_reference_equals_scikit_learn_and_counts_percent_agreement():
    reference = ["x", "y", "x", "y", "x", "x", None]
    raters = {"A": ["x", "y", "x", "x", "x", None, "y"], "B": ["x", "x", "x", "y", "y", "x", "x"]}
    rows = {r["rater"]: r for r in st.agreement_with_reference(raters, reference)}
    assert (rows["A"]["n"], rows["A"]["agree"]) == (5, 4) and rows["A"]["observed"] == pytest.approx(0.8)
    assert rows["A"]["kappa"] == pytest.approx(cohen_kappa_score(["x", "y", "x", "x", "x"], ["x", "y", "x", "y", "x"]))
    assert (rows["B"]["n"], rows["B"]["agree"]) == (6, 4)
    assert rows["B"]["kappa"] == pytest.approx(cohen_kappa_score(raters["B"][:6], reference[:6]))


def test_many_rater_summary_from_profiles_equals_the_label_list_functions():
    rng = random.Random(43)
    for raters_n, missing in ((2, 0.0), (3, 0.0), (3, 0.2), (5, 0.4)):
        raters = random_raters(rng, raters=raters_n, items=200, missing=missing)
        reference = random_raters(rng, raters=1, items=200, missing=0.1)[0]
        names = [f"R{i}" for i in range(raters_n)]
        figures = st.many_rater_summary(st.rater_profiles(raters, reference), names, reference=True, seed=6)
        by_name = dict(zip(names, raters, strict=True))
        assert figures["pairs"] == st.pairwise_kappa(by_name, seed=6)
        assert figures["reference"] == st.agreement_with_reference(by_name, reference, seed=6)
        assert figures["krippendorff_alpha"] == pytest.approx(st.krippendorff_alpha_summary(raters))
        labels = [[x for x in item if x is not None] for item in zip(*raters, strict=True)]
        most = max(len(r) for r in labels)
        fleiss = st.fleiss_summary([r for r in labels if len(r) == most], seed=6)
        assert figures["fleiss"]["kappa"] == pytest.approx(fleiss["kappa"], abs=1e-12)
        assert figures["fleiss"]["n"] == fleiss["n"] and figures["fleiss"]["raters_per_item"] == most
        assert figures["fleiss"]["ci95_bootstrap"] == pytest.approx(fleiss["ci95_bootstrap"])
        assert figures["fleiss"]["left_out"] == sum(1 for r in labels if r and len(r) < most)


def test_a_rater_who_always_matches_a_one_category_reference_has_kappa_one_not_nan():
    rows = st.agreement_with_reference({"A": ["x"] * 4}, ["x"] * 4)
    assert rows[0]["kappa"] == 1.0 and rows[0]["observed"] == 1.0


# ---------------------------------------------------------------------------------------------
# Scoring statistics (PROTOCOL.md §10)


def test_wilson_interval_equals_statsmodels_on_every_count_up_to_80():
    from statsmodels.stats.proportion import proportion_confint

    for n in range(1, 81):
        for k in range(n + 1):
            low, high = st.wilson_interval(k, n, z=st.Z95)
            expected = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert (low, high) == pytest.approx(expected, abs=1e-12)
            # The protocol's z = 1.959964 differs from the exact quantile by 1.6e-8.
            assert st.wilson_interval(k, n) == pytest.approx(expected, abs=1e-7)


def test_wilson_interval_hand_cases():
    # 1 of 10: the textbook Wilson 95% interval 0.0179–0.4042 (Newcombe 1998, Table I).
    assert st.wilson_interval(1, 10) == pytest.approx((0.0179, 0.4042), abs=5e-5)
    assert st.wilson_interval(16, 38) == pytest.approx((0.278525, 0.578077), abs=1e-6)
    low, high = st.wilson_interval(0, 7)
    assert low == 0.0 and 0 < high < 1
    low, high = st.wilson_interval(7, 7)
    assert 0 < low < 1 and high == 1.0
    assert st.wilson_interval(0, 0) == (0.0, 0.0)
    with pytest.raises(ValueError):
        st.wilson_interval(5, 4)


def test_mcnemar_exact_equals_statsmodels_on_seeded_random_tables():
    from statsmodels.stats.contingency_tables import mcnemar

    rng = random.Random(13)
    for _ in range(300):
        b, c = rng.randint(0, 60), rng.randint(0, 60)
        if b + c == 0:
            continue
        table = [[rng.randint(0, 40), b], [c, rng.randint(0, 40)]]
        expected = mcnemar(table, exact=True).pvalue
        assert st.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_mcnemar_exact_hand_cases():
    # b=2, c=15: 2·(C(17,0) + C(17,1) + C(17,2)) / 2^17 = 2·154/131072.
    assert st.mcnemar_exact(2, 15) == 308 / 131072 == st.mcnemar_exact(15, 2)
    assert st.mcnemar_exact(0, 0) == 1.0
    assert st.mcnemar_exact(3, 3) == 1.0  # 2·P[X ≤ 3] > 1 is capped
    assert st.mcnemar_exact(0, 1) == 1.0
    assert st.mcnemar_exact(0, 10) == 2 / 1024
    with pytest.raises(ValueError):
        st.mcnemar_exact(-1, 2)


def test_mcnemar_beyond_the_exact_limit_agrees_with_exact_rational_arithmetic():
    from fractions import Fraction
    from math import comb

    for b, c in [(980, 1021), (1100, 1200), (1400, 1610), (2000, 2)]:
        n = b + c
        assert n > st.MCNEMAR_EXACT_LIMIT
        exact = min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(min(b, c) + 1)), 2**n))
        assert st.mcnemar_exact(b, c) == pytest.approx(float(exact), rel=1e-10, abs=1e-300)


def test_mcnemar_many_equals_the_one_at_a_time_function():
    rng = random.Random(17)
    b = np.array([rng.randint(0, 3000) for _ in range(60)])
    c = np.array([rng.randint(0, 3000) for _ in range(60)])
    b[:5], c[:5] = 0, 0
    got = st.mcnemar_exact_many(b, c)
    assert got.tolist() == [st.mcnemar_exact(int(x), int(y)) for x, y in zip(b, c, strict=True)]


def test_holm_equals_statsmodels_on_seeded_random_families():
    from statsmodels.stats.multitest import multipletests

    rng = random.Random(19)
    for _ in range(40):
        p = [rng.random() ** 3 for _ in range(rng.randint(1, 90))]
        if rng.random() < 0.3:
            p += p[: rng.randint(1, len(p))]  # ties
        expected = multipletests(p, method="holm")[1]
        assert st.holm_adjust(p) == pytest.approx(list(expected), abs=1e-15)


def test_holm_hand_case_keeps_input_order_and_is_monotone():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → running max 0.06.
    assert st.holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert st.holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert st.holm_adjust([]) == []


def literal_cluster_bootstrap(clusters, replicates, seed):
    """PROTOCOL.md §10 read literally: draw conversation ids, concatenate their items, take the mean."""
    rng = random.Random(seed)
    ids = sorted(clusters)
    means = []
    for _ in range(replicates):
        drawn = [x for _ in ids for x in clusters[rng.choice(ids)]]
        means.append(sum(drawn) / len(drawn))
    means.sort()
    return means[int(0.025 * replicates)], means[int(0.975 * replicates)]


def random_clusters(rng, n_clusters):
    rate = rng.random()
    return {f"conv-{rng.randint(0, 10**6)}": [int(rng.random() < rate) for _ in range(rng.randint(1, 12))] for _ in range(n_clusters)}


def test_cluster_bootstrap_is_the_protocol_procedure_read_literally():
    rng = random.Random(23)
    for _ in range(20):
        clusters = random_clusters(rng, rng.randint(1, 15))
        for seed in (7, 8):
            assert st.cluster_bootstrap(clusters, replicates=400, seed=seed) == literal_cluster_bootstrap(clusters, 400, seed)


def test_cluster_bootstrap_hand_cases():
    assert st.cluster_bootstrap({"a": [1, 1], "b": [1]}) == (1.0, 1.0)
    assert st.cluster_bootstrap({"a": [1, 0, 0, 1]}) == (0.5, 0.5)  # one conversation: always itself
    assert st.cluster_bootstrap({}) == (0.0, 0.0)
    low, high = st.cluster_bootstrap({"a": [1] * 5, "b": [0] * 5})
    # Two equal-size conversations: each replicate is 0, 0.5 or 1 with chances 1/4, 1/2, 1/4.
    assert (low, high) == (0.0, 1.0)


def test_cluster_bootstrap_depends_on_the_seed_and_defaults_to_seed_7():
    clusters = random_clusters(random.Random(29), 9)
    assert st.cluster_bootstrap(clusters) == st.cluster_bootstrap(clusters, seed=7, replicates=10_000)
    assert any(st.cluster_bootstrap(clusters, seed=s, replicates=300) != st.cluster_bootstrap(clusters, seed=7, replicates=300) for s in (1, 2, 3))


def test_bootstrap_draws_are_the_values_python_random_choice_yields():
    for n, seed in [(1, 7), (2, 7), (3, 0), (5, 7), (10, 11), (13, 7), (64, 3), (1000, 7), (2**20 + 3, 5)]:
        rng = random.Random(seed)
        expected = [[rng.choice(range(n)) for _ in range(n if n < 50 else 20)] for _ in range(30 if n < 50 else 5)]
        rows, width = len(expected), len(expected[0])
        draws = st.bootstrap_draws(n, replicates=rows * width // n + 1, seed=seed).ravel()[: rows * width]
        assert draws.tolist() == [x for row in expected for x in row]


def test_cluster_bootstrap_many_equals_the_plain_function_for_each_run():
    rng = random.Random(31)
    for n_clusters in (1, 2, 6, 17):
        sizes = [rng.randint(1, 9) for _ in range(n_clusters)]
        runs = [{f"c{i:03d}": [int(rng.random() < 0.7) for _ in range(s)] for i, s in enumerate(sizes)} for _ in range(5)]
        hits = [[sum(run[c]) for c in sorted(run)] for run in runs]
        got = st.cluster_bootstrap_many(sizes, np.array(hits), replicates=2000, seed=7)
        assert got.tolist() == [list(st.cluster_bootstrap(run, replicates=2000, seed=7)) for run in runs]


def literal_hierarchical_bootstrap(ingests, replicates, seed):
    rng = random.Random(seed)
    ids = sorted(set().union(*ingests))
    means = []
    for _ in range(replicates):
        drawn = []
        for _ in ids:
            ingest = ingests[rng.choice(range(len(ingests)))]
            drawn += ingest.get(rng.choice(ids), [])
        means.append(sum(drawn) / len(drawn))
    means.sort()
    return means[int(0.025 * replicates)], means[int(0.975 * replicates)]


def test_hierarchical_bootstrap_is_the_protocol_procedure_read_literally_and_defaults_to_seed_11():
    rng = random.Random(37)
    for _ in range(10):
        base = random_clusters(rng, rng.randint(2, 12))
        ingests = [{c: [int(rng.random() < 0.6) for _ in v] for c, v in base.items()} for _ in range(rng.randint(1, 3))]
        assert st.hierarchical_bootstrap(ingests, replicates=300, seed=11) == literal_hierarchical_bootstrap(ingests, 300, 11)
    assert st.hierarchical_bootstrap(ingests) == st.hierarchical_bootstrap(ingests, replicates=10_000, seed=11)


def test_hierarchical_bootstrap_spreads_over_disagreeing_ingests():
    clusters = [f"c{i}" for i in range(10)]
    right = {c: [1, 1] for c in clusters}
    wrong = {c: [0, 0] for c in clusters}
    assert st.hierarchical_bootstrap([right, right]) == (1.0, 1.0)
    low, high = st.hierarchical_bootstrap([right, wrong])
    assert 0.1 < low < 0.5 < high < 0.9  # each replicate is Binomial(10, 1/2)/10
    assert st.hierarchical_bootstrap([]) == (0.0, 0.0)


def test_bootstrap_draws_refuse_an_empty_set_of_clusters():
    with pytest.raises(ValueError):
        st.bootstrap_draws(0)


def test_a_shared_count_matrix_gives_the_same_intervals_as_drawing_afresh():
    counts = st.draw_counts(st.bootstrap_draws(4, replicates=500, seed=7), 4)
    sizes, hits = [3, 1, 2, 5], np.array([[1, 1, 2, 4], [0, 1, 1, 5]])
    assert st.cluster_bootstrap_many(sizes, hits, replicates=500, counts=counts).tolist() == (
        st.cluster_bootstrap_many(sizes, hits, replicates=500, seed=7).tolist()
    )


# --- designed samples -------------------------------------------------------------------------------


def test_wilson_half_width_equals_half_of_statsmodels_wilson_interval_at_an_even_split():
    from statsmodels.stats.proportion import proportion_confint

    for n in (2, 10, 50, 380, 382, 1000):
        low, high = proportion_confint(n // 2, n, alpha=0.05, method="wilson")
        assert st.wilson_half_width(0.5, n, z=st.Z95) == pytest.approx((high - low) / 2, abs=1e-9)


def test_wilson_sample_size_hand_case_and_finite_population():
    # At p = 1/2 the half width is z / (2 sqrt(n + z²)): n >= z²/(4h²) − z² = 380.3 for h = 0.05.
    assert st.wilson_sample_size(0.05) == 381
    # 381 / (1 + 380/2830) = 335.9
    assert st.wilson_sample_size(0.05, population=2830) == 336
    assert st.wilson_sample_size(0.01, population=50) == 50


def test_wilson_sample_size_is_the_smallest_n_that_reaches_the_half_width():
    for half_width in (0.2, 0.1, 0.07, 0.05, 0.03):
        for p in (0.5, 0.7, 0.9, 0.97):
            n = st.wilson_sample_size(half_width, p=p)
            assert st.wilson_half_width(p, n) <= half_width < st.wilson_half_width(p, n - 1)


def test_wilson_sample_size_refuses_an_impossible_half_width():
    with pytest.raises(ValueError):
        st.wilson_sample_size(0.0)
    with pytest.raises(ValueError):
        st.wilson_sample_size(0.6)


def test_allocate_hand_cases():
    # Proportional: 30 × (100, 10, 5)/115 = 26.09, 2.61, 1.30 -> 26, 3, 1 by largest remainders.
    assert st.allocate({"a": 100, "b": 10, "c": 5, "d": 0}, 30) == {"a": 26, "b": 3, "c": 1, "d": 0}
    # c weighted 10: its share 50 of 160 asks for 9.4 > 5, so it is taken whole; a and b share 25.
    assert st.allocate({"a": 100, "b": 10, "c": 5}, 30, weights={"c": 10}) == {"a": 23, "b": 2, "c": 5}
    # The minimum lifts a small stratum and the others share the rest.
    assert st.allocate({"a": 1000, "b": 1}, 10, minimum=1) == {"a": 9, "b": 1}
    assert st.allocate({"a": 100, "b": 10}, 500) == {"a": 100, "b": 10}


def test_allocate_always_sums_to_the_total_within_sizes_and_minimums():
    rng = random.Random(3)
    for _ in range(300):
        sizes = {f"s{i}": rng.randint(0, 60) for i in range(rng.randint(1, 12))}
        weights = {k: rng.choice([1.0, 2.0, 3.5]) for k in sizes}
        minimum = rng.randint(0, 2)
        floor = sum(min(v, minimum) for v in sizes.values())
        total = rng.randint(floor, sum(sizes.values()) + 10)
        allocation = st.allocate(sizes, total, weights=weights, minimum=minimum)
        assert sum(allocation.values()) == min(total, sum(sizes.values()))
        assert all(min(sizes[k], minimum) <= allocation[k] <= sizes[k] for k in sizes)


def test_allocate_refuses_a_total_below_the_minimums():
    with pytest.raises(ValueError):
        st.allocate({"a": 5, "b": 5, "c": 5}, 2, minimum=1)


def test_stratified_proportion_of_one_stratum_from_a_vast_population_is_the_wilson_interval():
    result = st.stratified_proportion({"only": (10**12, 40, 10)})
    assert result["estimate"] == 0.25
    assert result["ci95"] == pytest.approx(st.wilson_interval(10, 40), abs=1e-7)


def test_stratified_proportion_point_estimate_equals_the_horvitz_thompson_weighted_mean():
    from statsmodels.stats.weightstats import DescrStatsW

    strata = {"a": (1000, 40, 10), "b": (300, 60, 45), "c": (50, 10, 0)}
    values, weights = [], []
    for N, n, k in strata.values():
        values += [1] * k + [0] * (n - k)
        weights += [N / n] * n
    assert st.stratified_proportion(strata)["estimate"] == pytest.approx(DescrStatsW(values, weights=weights).mean)


def test_stratified_proportion_variance_hand_case():
    # W = (2/3, 1/3); p = (0.25, 0.9); var = (4/9)(0.6)(0.1875)/40 + (1/9)(0.8)(0.09)/10
    result = st.stratified_proportion({"a": (100, 40, 10), "b": (50, 10, 9)})
    assert result["estimate"] == pytest.approx(2 / 3 * 0.25 + 1 / 3 * 0.9)
    variance = 4 / 9 * 0.6 * 0.1875 / 40 + 1 / 9 * 0.8 * 0.09 / 10
    assert result["se"] == pytest.approx(math.sqrt(variance))
    assert result["effective_n"] == pytest.approx(result["estimate"] * (1 - result["estimate"]) / variance)


def test_stratified_proportion_of_a_census_has_no_width_and_an_unsampled_stratum_is_undefined():
    census = st.stratified_proportion({"a": (10, 10, 3), "b": (5, 5, 5)})
    assert census["ci95"] == (census["estimate"], census["estimate"]) == (8 / 15, 8 / 15)
    assert math.isnan(st.stratified_proportion({"a": (10, 4, 3), "b": (5, 0, 0)})["estimate"])


def test_stratified_domain_proportion_over_the_whole_population_is_the_stratified_proportion():
    strata = {"a": (100, 40, 10), "b": (50, 10, 9), "c": (7, 3, 1)}
    whole = st.stratified_proportion(strata)
    domain = st.stratified_domain_proportion({h: (N, n, n, k) for h, (N, n, k) in strata.items()})
    assert domain["estimate"] == pytest.approx(whole["estimate"])
    assert domain["se"] == pytest.approx(whole["se"])


def test_stratified_domain_proportion_is_the_weighted_ratio_and_a_census_domain_has_no_width():
    # Domain estimate: (100/40·6 + 50/10·2) / (100/40·20 + 50/10·5) = 25 / 75
    result = st.stratified_domain_proportion({"a": (100, 40, 20, 6), "b": (50, 10, 5, 2)})
    assert result["estimate"] == pytest.approx(25 / 75)
    assert 0 < result["ci95"][0] < 25 / 75 < result["ci95"][1] < 1
    census = st.stratified_domain_proportion({"a": (10, 10, 4, 1), "b": (5, 5, 0, 0)})
    assert census["ci95"] == (0.25, 0.25)
    assert math.isnan(st.stratified_domain_proportion({"a": (10, 4, 0, 0)})["estimate"])


def test_stratified_domain_proportion_in_one_vast_stratum_is_the_wilson_interval_of_the_domains_sample():
    # One stratum, no finite-population correction: the linearised variance is p(1 − p)/m, m the domain's
    # sampled units, so the interval is Wilson's for k of m.
    result = st.stratified_domain_proportion({"only": (10**12, 100, 40, 10)})
    assert result["estimate"] == 0.25
    assert result["effective_n"] == pytest.approx(40)
    assert result["ci95"] == pytest.approx(st.wilson_interval(10, 40), abs=1e-7)
