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


def test_fleiss_kappa_table_is_bit_for_bit_the_statsmodels_value():
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(7)
    for raters, cats, items in ((2, 2, 10), (2, 3, 200), (3, 4, 57), (5, 3, 1000), (2, 3, 100_000)):
        table = np.zeros((items, cats), dtype=np.int64)
        for row, labels in enumerate(rng.integers(0, cats, (items, raters))):
            for label in labels:
                table[row, label] += 1
        assert st._fleiss_table(table) == sm_fleiss(table, method="fleiss")
