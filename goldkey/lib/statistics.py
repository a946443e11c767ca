"""Agreement statistics: one small, pure module (label lists in, numbers out). No Django imports.

Every figure Goldkey reports (campaign agreement, council pairwise kappa, scorer validation) comes
from here; views and exports only format the results.

Conventions: a label list holds one label per item; `None` is a missing label. Two-rater functions
take two equally long lists that are already paired (use `paired` / `eligible_pairs` first: they say
how many items were left out and why). Undefined figures are `nan`, never an exception.
"""

import math
import operator
import random
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

# _REPRODUCIBLE: a figure that goes into a sealed release is the same float on every machine. A product
# of non-integer vectors is never written `a @ b` here: NumPy hands it to BLAS, whose kernel (chosen for
# the CPU: AVX2, AVX-512, ...) sums in its own order, and the last bits of a kappa then differ between
# two machines freezing the same trail. An elementwise product and NumPy's own sum reduce in one order
# everywhere (tests/lib/test_statistics_reproducible.py runs them under another BLAS kernel). Products
# of whole counts stay `@`: integers sum exactly in any order.

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def paired(a: Sequence, b: Sequence, exclude: set | None = None) -> tuple[list, list]:
    """Keep the positions where both raters gave a label (None = missing) not in `exclude`."""
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length ({len(a)} vs {len(b)})")
    exclude = exclude or set()
    keep = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None and x not in exclude and y not in exclude]
    return [x for x, _ in keep], [y for _, y in keep]


def eligible_pairs(a: Sequence, b: Sequence, mapping: dict) -> tuple[list, list, dict]:
    """Restrict to the items where BOTH labels are keys of `mapping`, and map them (e.g. Lapse binary:
    {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}). Returns the mapped lists and
    the counts: {"n": eligible, "missing": a label absent, "excluded": a label outside the mapping}."""
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length ({len(a)} vs {len(b)})")
    out_a, out_b = [], []
    missing = excluded = 0
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            missing += 1
        elif x not in mapping or y not in mapping:
            excluded += 1
        else:
            out_a.append(mapping[x])
            out_b.append(mapping[y])
    return out_a, out_b, {"n": len(out_a), "missing": missing, "excluded": excluded}


def _check(a: Sequence, b: Sequence) -> int:
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length ({len(a)} vs {len(b)})")
    return len(a)


def observed_agreement(a: Sequence, b: Sequence) -> float:
    if not _check(a, b):
        return float("nan")
    return sum(map(operator.eq, a, b)) / len(a)


def pair_counts(a: Sequence, b: Sequence) -> Counter:
    """{(label_a, label_b): count}: every two-rater statistic below is a function of this table, so a
    large campaign is counted once (in C) and each figure then costs O(categories²)."""
    _check(a, b)
    return Counter(zip(a, b, strict=True))


def categories_of(*label_lists: Iterable, categories: Sequence | None = None) -> list:
    """The given categories, followed by any other label seen (sorted), so nothing is dropped."""
    seen = set()
    for labels in label_lists:
        seen.update(labels)
    seen.discard(None)
    known = list(categories or [])
    return known + sorted(seen - set(known), key=str)


def _categories_of_pairs(pairs: Counter, categories: Sequence | None = None) -> list:
    return categories_of([x for x, _ in pairs], [y for _, y in pairs], categories=categories)


def _matrix(pairs: Counter, cats: list) -> np.ndarray:
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)), dtype=float)
    for (x, y), count in pairs.items():
        table[index[x], index[y]] += count
    return table


def confusion_matrix(a: Sequence, b: Sequence, categories: Sequence | None = None) -> tuple[list, list[list[int]]]:
    """(categories, counts) with counts[i][j] = items rater a put in categories[i] and rater b in [j]."""
    pairs = pair_counts(a, b)
    cats = _categories_of_pairs(pairs, categories)
    return cats, _matrix(pairs, cats).astype(int).tolist()


def _kappa_from_table(table: np.ndarray) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    p = table / n
    po = float(np.trace(p))
    pe = float(np.sum(p.sum(axis=1) * p.sum(axis=0)))  # not `@`: see _REPRODUCIBLE
    if pe >= 1.0 - 1e-15:
        return 1.0 if po >= 1.0 - 1e-15 else float("nan")
    return (po - pe) / (1 - pe)


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa for two raters, nominal labels. Perfect agreement on a single category is 1.0
    (scikit-learn returns nan there; we define it as perfect agreement); an empty input is nan."""
    pairs = pair_counts(a, b)
    return _kappa_from_table(_matrix(pairs, _categories_of_pairs(pairs)))


def _se_from_table(table: np.ndarray) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    pe = float(np.sum(rows * cols))
    if pe >= 1.0 - 1e-15:
        return 0.0
    k = _kappa_from_table(table)
    diagonal = np.diag(p)
    diag = float(np.sum(diagonal * (1 - (rows + cols) * (1 - k)) ** 2))
    weights = (cols[:, None] + rows[None, :]) ** 2  # (p_.i + p_j.)^2 for cell (i, j)
    off = float(np.sum(p * weights) - np.sum(diagonal * np.diag(weights)))
    var = (diag + (1 - k) ** 2 * off - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    return math.sqrt(max(var, 0.0))


def kappa_se(a: Sequence, b: Sequence) -> float:
    """Large-sample standard error of Cohen's kappa, NOT assuming kappa = 0: Fleiss, Cohen & Everitt
    (1969), "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72(5),
    eq. 13 (as in Fleiss, Levin & Paik 2003, eq. 18.15):

        var(k) = [ sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2
                   + (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
                   - (k - p_e (1 - k))^2 ] / (n (1 - p_e)^2)

    nan when n = 0; 0 when the chance agreement is 1 (one category)."""
    pairs = pair_counts(a, b)
    return _se_from_table(_matrix(pairs, _categories_of_pairs(pairs)))


def _ci_analytic(table: np.ndarray, z: float = Z95) -> tuple[float, float]:
    k, se = _kappa_from_table(table), _se_from_table(table)
    if math.isnan(k) or math.isnan(se):
        return (float("nan"), float("nan"))
    return (max(-1.0, k - z * se), min(1.0, k + z * se))


def kappa_ci_analytic(a: Sequence, b: Sequence, z: float = Z95) -> tuple[float, float]:
    """kappa ± z·SE (Fleiss–Cohen–Everitt), clipped to [-1, 1]."""
    pairs = pair_counts(a, b)
    return _ci_analytic(_matrix(pairs, _categories_of_pairs(pairs)), z)


def _ci_bootstrap(table: np.ndarray, replicates: int, seed: int, level: float) -> tuple[float, float]:
    n = int(table.sum())
    if n == 0 or replicates < 1:
        return (float("nan"), float("nan"))
    k = table.shape[0]
    shares = table.ravel() / n
    tables = np.random.default_rng(seed).multinomial(n, shares, size=replicates).reshape(replicates, k, k)
    p = tables / n
    po = np.trace(p, axis1=1, axis2=2)
    pe = (p.sum(axis=2) * p.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(pe >= 1.0 - 1e-15, np.where(po >= 1.0 - 1e-15, 1.0, np.nan), (po - pe) / (1 - pe))
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return (float(low), float(high))


def kappa_ci_bootstrap(
    a: Sequence, b: Sequence, *, replicates: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Seeded percentile bootstrap over items. Resampling n items with replacement is the same as
    drawing the confusion table from a multinomial(n, observed cell shares), so each replicate costs
    O(categories²) whatever n (100,000 items bootstrap as fast as 100)."""
    pairs = pair_counts(a, b)
    return _ci_bootstrap(_matrix(pairs, _categories_of_pairs(pairs)), replicates, seed, level)


def _per_category(table: np.ndarray, cats: list) -> dict:
    out = {}
    for i, cat in enumerate(cats):
        row, col, both = int(table[i].sum()), int(table[:, i].sum()), int(table[i, i])
        out[cat] = {
            "both": both,
            "either": row + col - both,
            "rater_a": row,
            "rater_b": col,
            "specific": (2 * both / (row + col)) if row + col else float("nan"),
        }
    return out


def per_category_agreement(a: Sequence, b: Sequence, categories: Sequence | None = None) -> dict:
    """Per category: `both` (items both raters put there), `either` (items at least one put there), and
    the specific agreement 2·n_kk / (n_k. + n_.k) (Fleiss 1975; nan when nobody used the category)."""
    pairs = pair_counts(a, b)
    cats = _categories_of_pairs(pairs, categories)
    return _per_category(_matrix(pairs, cats), cats)


def _pabak(table: np.ndarray, k: int) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    po = float(np.trace(table) / n)
    if k < 2:
        return 1.0 if po == 1.0 else float("nan")
    return (k * po - 1) / (k - 1)


def pabak(a: Sequence, b: Sequence, n_categories: int | None = None) -> float:
    """Prevalence- and bias-adjusted kappa (Byrt, Bishop & Carlin 1993): (k·p_o − 1)/(k − 1) with k
    categories (default: the categories seen). With one category it is 1 when the raters agree."""
    pairs = pair_counts(a, b)
    cats = _categories_of_pairs(pairs)
    return _pabak(_matrix(pairs, cats), n_categories or len(cats))


def _ac1(table: np.ndarray, k: int) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    po = float(np.trace(table) / n)
    if k < 2:
        return 1.0 if po == 1.0 else float("nan")
    pi = (table.sum(axis=1) + table.sum(axis=0)) / (2 * n)
    pe = float(np.sum(pi * (1 - pi)) / (k - 1))
    return (po - pe) / (1 - pe)


def gwet_ac1(a: Sequence, b: Sequence, n_categories: int | None = None) -> float:
    """Gwet's AC1 (Gwet 2008): chance agreement p_e = 1/(K−1) · Σ_k π_k (1 − π_k), π_k the mean of the
    two raters' shares of category k; AC1 = (p_o − p_e)/(1 − p_e). K defaults to the categories seen."""
    pairs = pair_counts(a, b)
    cats = _categories_of_pairs(pairs)
    return _ac1(_matrix(pairs, cats), n_categories or len(cats))


def fleiss_kappa(ratings: Sequence[Sequence]) -> tuple[float, int]:
    """Fleiss' kappa for any number of raters (as statsmodels' inter_rater computes it). `ratings` holds one label list
    per item; items with a missing label (None) are left out, since every item needs the same number
    of ratings. Returns (kappa, items used)."""

    # Items with the same multiset of labels are the same row of the subjects x categories table:
    # count the distinct compositions once (fast for 100,000 items), then expand.
    return _fleiss_from_compositions(_ratings_compositions(ratings))


def fleiss_kappa_from_pairs(pairs: Counter) -> tuple[float, int]:
    """fleiss_kappa for two raters from a pair_counts table."""
    compositions: Counter = Counter()
    for (x, y), count in pairs.items():
        if x is not None and y is not None:
            compositions[tuple(sorted((str(x), str(y))))] += count
    return _fleiss_from_compositions(compositions)


def _fleiss_table(table: np.ndarray) -> float:
    """statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss"), the same numpy operations in
    the same order (so the same float, bit for bit; tests compare the two): importing statsmodels pulls
    in scipy.stats, a second of CPU at the first freeze or agreement page of a process."""
    table = 1.0 * np.asarray(table)
    n_sub, _ = table.shape
    n_total = table.sum()
    n_rat = table.sum(1).max()
    if n_total != n_sub * n_rat:
        raise ValueError("every item needs the same number of ratings")
    p_cat = table.sum(0) / n_total
    p_rat = ((table * table).sum(1) - n_rat) / (n_rat * (n_rat - 1.0))
    p_mean = p_rat.mean()
    p_mean_exp = (p_cat * p_cat).sum()
    return (p_mean - p_mean_exp) / (1 - p_mean_exp)


def _fleiss_from_compositions(compositions: Counter) -> tuple[float, int]:
    used = sum(compositions.values())
    if not compositions or len({len(c) for c in compositions}) != 1:
        return (float("nan"), used)
    cats = sorted({x for c in compositions for x in c})
    if len(cats) == 1:
        return (1.0, used)
    index = {c: i for i, c in enumerate(cats)}
    rows = np.zeros((len(compositions), len(cats)), dtype=np.int64)
    for n, composition in enumerate(compositions):
        for label in composition:
            rows[n, index[label]] += 1
    table = np.repeat(rows, list(compositions.values()), axis=0)
    return (float(_fleiss_table(table)), used)


def _coincidences(compositions: Mapping[tuple, int]) -> tuple[Counter, int]:
    """Krippendorff's coincidence table {(c, k): o_ck} from {item's pairable labels (sorted): items}:
    an item with m ≥ 2 values adds n_c·(n_k − [c = k]) / (m − 1) to cell (c, k). Returns the table and
    the items that counted (m ≥ 2)."""
    table: Counter = Counter()
    used = 0
    for composition, items in compositions.items():
        m = len(composition)
        if m < 2:
            continue
        used += items
        counts = Counter(composition)
        for c, n_c in counts.items():
            for k, n_k in counts.items():
                table[(c, k)] += items * n_c * (n_k - (c == k)) / (m - 1)
    return table, used


def _alpha_from_compositions(compositions: Mapping[tuple, int]) -> float:
    """Nominal alpha = 1 − D_o/D_e = 1 − (n − 1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k (Krippendorff 2011,
    "Computing Krippendorff's alpha-reliability", §A). One category among the pairable values: 1.0
    (every pair agrees and nothing else could be seen), as cohen_kappa; no pairable value: nan."""
    table, _ = _coincidences(compositions)
    n_c: Counter = Counter()
    for (c, _k), o in table.items():
        n_c[c] += o
    n = sum(n_c.values())
    if n == 0:
        return float("nan")
    expected = n * n - sum(v * v for v in n_c.values())  # Σ_{c≠k} n_c n_k
    if expected <= 1e-12:
        return 1.0
    observed = n - sum(o for (c, k), o in table.items() if c == k)  # Σ_{c≠k} o_ck
    return 1.0 - (n - 1) * observed / expected


def _rater_compositions(raters: Sequence[Sequence]) -> Counter:
    lengths = {len(r) for r in raters}
    if len(lengths) > 1:
        raise ValueError(f"label lists differ in length ({', '.join(map(str, sorted(lengths)))})")
    return Counter(tuple(sorted((x for x in labels if x is not None), key=str)) for labels in zip(*raters, strict=True))


def krippendorff_alpha_from_pairs(pairs: Counter) -> float:
    """krippendorff_alpha_nominal for two raters from a pair_counts table (items with one label are not
    pairable and do not count, as in alpha itself)."""
    compositions: Counter = Counter()
    for (x, y), count in pairs.items():
        compositions[tuple(sorted((v for v in (x, y) if v is not None), key=str))] += count
    return _alpha_from_compositions(compositions)


def krippendorff_alpha_nominal(raters: Sequence[Sequence]) -> float:
    """Krippendorff's alpha for nominal labels, from first principles (tested against the
    `krippendorff` package). `raters` holds one label list per rater, aligned by item; None marks a
    missing label, so items may be rated by any subset of raters (an item with one value is not
    pairable and does not count)."""
    return _alpha_from_compositions(_rater_compositions(raters))


def krippendorff_alpha_summary(raters: Sequence[Sequence]) -> dict:
    """Alpha with what it was computed on: `n` pairable items (two or more labels), `values` the
    pairable labels (alpha's own n)."""
    compositions = _rater_compositions(raters)
    pairable = {c: n for c, n in compositions.items() if len(c) >= 2}
    return {
        "alpha": _alpha_from_compositions(pairable),
        "n": sum(pairable.values()),
        "values": sum(len(c) * n for c, n in pairable.items()),
    }


def _fleiss_rows(compositions: Counter) -> tuple[np.ndarray, np.ndarray]:
    """(distinct compositions × categories) counts and each composition's number of items."""
    cats = sorted({x for c in compositions for x in c})
    index = {c: i for i, c in enumerate(cats)}
    rows = np.zeros((len(compositions), len(cats)), dtype=np.int64)
    for n, composition in enumerate(compositions):
        for label in composition:
            rows[n, index[label]] += 1
    return rows, np.fromiter(compositions.values(), dtype=np.int64, count=len(compositions))


def _fleiss_ci_bootstrap(compositions: Counter, replicates: int, seed: int, level: float) -> tuple[float, float]:
    """Seeded percentile bootstrap over items: resampling N items with replacement draws how often
    each distinct composition occurs from a multinomial(N, composition shares), so a replicate costs
    O(compositions × categories) whatever N. A replicate that sees one category only is kappa 1, as
    fleiss_kappa."""
    used = sum(compositions.values())
    if not compositions or replicates < 1 or len({len(c) for c in compositions}) != 1:
        return (float("nan"), float("nan"))
    rows, weights = _fleiss_rows(compositions)
    r = rows.sum(axis=1)[0]
    if r < 2:
        return (float("nan"), float("nan"))
    draws = np.random.default_rng(seed).multinomial(used, weights / used, size=replicates).astype(float)
    p_item = ((rows * rows).sum(axis=1) - r) / (r * (r - 1.0))  # each composition's agreement P_i
    p_cat = (draws @ rows) / (used * r)  # whole counts: exact in any order
    p_mean = (draws * p_item).sum(axis=1) / used
    p_exp = (p_cat * p_cat).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(p_exp >= 1.0 - 1e-15, 1.0, (p_mean - p_exp) / (1 - p_exp))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return (float(low), float(high))


def _ratings_compositions(ratings: Sequence[Sequence]) -> Counter:
    return Counter(tuple(sorted(map(str, r))) for r in ratings if r and None not in r)


def fleiss_kappa_ci_bootstrap(
    ratings: Sequence[Sequence], *, replicates: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of fleiss_kappa over items (seeded). A bootstrap rather than the
    large-sample variance of Fleiss (1971): that variance holds under kappa = 0 only (a test of no
    agreement, not an interval around an observed kappa)."""
    return _fleiss_ci_bootstrap(_ratings_compositions(ratings), replicates, seed, level)


def fleiss_summary(ratings: Sequence[Sequence], *, replicates: int = 2000, seed: int = 0) -> dict:
    """Fleiss' kappa with the items it used, the ratings per item, the mean per-item agreement P̄
    (the observed agreement Fleiss' kappa corrects) and its seeded bootstrap interval."""
    compositions = _ratings_compositions(ratings)
    kappa, used = _fleiss_from_compositions(compositions)
    sizes = {len(c) for c in compositions}
    observed = float("nan")
    if used and len(sizes) == 1 and (r := sizes.pop()) >= 2:
        rows, weights = _fleiss_rows(compositions)
        p_item = ((rows * rows).sum(axis=1) - r) / (r * (r - 1.0))
        observed = float(np.sum(p_item * weights) / used)
    else:
        r = None
    return {
        "kappa": kappa,
        "n": used,
        "left_out": len(ratings) - used,
        "raters_per_item": r,
        "observed": observed,
        "ci95_bootstrap": list(_fleiss_ci_bootstrap(compositions, replicates, seed, 0.95)),
    }


BRIEF_KEYS = ("n", "left_out", "agree", "observed", "kappa", "ci95", "ci95_bootstrap")


def pairwise_kappa(raters: Mapping[str, Sequence], *, categories: Sequence | None = None, seed: int = 0) -> list[dict]:
    """Cohen's kappa for every pair of raters on the items both labelled: {"raters": [a, b], "n", "agree",
    "observed", "kappa", "ci95", "ci95_bootstrap", "left_out"}, pairs in the raters' order. `raters` maps
    a rater to one label list, aligned by item, None where the rater gave no label; `left_out` counts
    the items only one of the two labelled."""
    names = list(raters)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs = pair_counts(raters[a], raters[b])
            shared = Counter({k: n for k, n in pairs.items() if k[0] is not None or k[1] is not None})
            summary = kappa_summary_from_pairs(shared, categories=categories, seed=seed)
            out.append({"raters": [a, b], **{k: summary[k] for k in BRIEF_KEYS}})
    return out


def agreement_with_reference(
    raters: Mapping[str, Sequence], reference: Sequence, *, categories: Sequence | None = None, seed: int = 0
) -> list[dict]:
    """Each rater against a reference labelling (the adjudicated gold), on the items both have a label
    for: {"rater", "n", "agree", "observed" (the % agreement), "kappa", "ci95", "ci95_bootstrap"}."""
    out = []
    for name, labels in raters.items():
        pairs = Counter({k: n for k, n in pair_counts(labels, reference).items() if None not in k})
        summary = kappa_summary_from_pairs(pairs, categories=categories, seed=seed)
        out.append({"rater": name, **{k: summary[k] for k in BRIEF_KEYS if k != "left_out"}})
    return out


def kappa_summary(
    a: Sequence, b: Sequence, *, categories: Sequence | None = None, replicates: int = 2000, seed: int = 0
) -> dict:
    """Everything about two raters on one question. Missing labels (None) are left out and counted."""
    _check(a, b)
    return kappa_summary_from_pairs(pair_counts(a, b), categories=categories, replicates=replicates, seed=seed)


def kappa_summary_from_pairs(
    pairs: Counter, *, categories: Sequence | None = None, replicates: int = 2000, seed: int = 0
) -> dict:
    """kappa_summary from a {(label_a, label_b): count} table (see pair_counts): a caller that stratifies
    a large campaign counts the items once and sums the small tables."""
    total = sum(pairs.values())
    pairs = Counter({key: count for key, count in pairs.items() if None not in key})
    cats = _categories_of_pairs(pairs, categories)
    table = _matrix(pairs, cats)
    n = int(table.sum())
    agree = int(np.trace(table))
    k = len(cats) if categories else len(_categories_of_pairs(pairs))
    return {
        "n": n,
        "left_out": total - n,
        "agree": agree,
        "observed": agree / n if n else float("nan"),
        "kappa": _kappa_from_table(table),
        "se": _se_from_table(table),
        "ci95": list(_ci_analytic(table)),
        "ci95_bootstrap": list(_ci_bootstrap(table, replicates, seed, 0.95)),
        "pabak": _pabak(table, k),
        "ac1": _ac1(table, k),
        "per_category": _per_category(table, cats),
        "confusion": {"categories": cats, "counts": table.astype(int).tolist()},
    }


def rater_profiles(raters: Sequence[Sequence], reference: Sequence | None = None) -> Counter:
    """{(rater 1's label, …, rater k's label[, the reference label]): items}: the many-rater figures
    below are functions of this table, so a large campaign is counted once (Counter over zip, in C) and
    each figure then costs O(distinct profiles)."""
    columns = [*raters, *([reference] if reference is not None else [])]
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"label lists differ in length ({', '.join(map(str, sorted(lengths)))})")
    return Counter(zip(*columns, strict=True))


def _labelled(profiles: Counter, k: int) -> Counter:
    """{the sorted labels of the first k raters: items} from a rater_profiles table."""
    labelled: Counter = Counter()
    for profile, n in profiles.items():
        labelled[tuple(sorted(str(x) for x in profile[:k] if x is not None))] += n
    return labelled


def _fleiss_of_labelled(labelled: Counter, seed: int) -> dict:
    full = max((len(c) for c in labelled), default=0)
    complete = Counter({c: n for c, n in labelled.items() if len(c) == full and full >= 2})
    kappa, used = _fleiss_from_compositions(complete)
    observed = float("nan")
    if used:
        rows, weights = _fleiss_rows(complete)
        observed = float(np.sum((((rows * rows).sum(axis=1) - full) / (full * (full - 1.0))) * weights) / used)
    return {
        "kappa": kappa,
        "n": used,
        "left_out": sum(n for c, n in labelled.items() if c) - used,
        "raters_per_item": full if used else None,
        "observed": observed,
        "ci95_bootstrap": list(_fleiss_ci_bootstrap(complete, 2000, seed, 0.95)),
    }


def fleiss_summary_from_profiles(profiles: Counter, k: int, *, seed: int = 0) -> dict:
    """The `fleiss` figure of many_rater_summary alone (the first k positions of each profile are raters)."""
    return _fleiss_of_labelled(_labelled(profiles, k), seed)


def many_rater_summary(
    profiles: Counter, names: Sequence[str], *, reference: bool = False, categories: Sequence | None = None, seed: int = 0
) -> dict:
    """From a rater_profiles table (with the reference last when `reference`): Fleiss' kappa (fleiss_summary)
    over the items with the most ratings any item has (the others are `left_out`: an assigned rater gave
    no label), Krippendorff's alpha (krippendorff_alpha_summary), Cohen's kappa per pair (pairwise_kappa)
    and, with a reference, each rater against it (agreement_with_reference)."""
    k = len(names)
    labelled = _labelled(profiles, k)
    pairable = {c: n for c, n in labelled.items() if len(c) >= 2}
    result = {
        "fleiss": _fleiss_of_labelled(labelled, seed),
        "krippendorff_alpha": {
            "alpha": _alpha_from_compositions(pairable),
            "n": sum(pairable.values()),
            "values": sum(len(c) * n for c, n in pairable.items()),
        },
        "pairs": [],
    }
    for i in range(k):
        for j in range(i + 1, k):
            table: Counter = Counter()
            for profile, n in profiles.items():
                if profile[i] is not None or profile[j] is not None:
                    table[(profile[i], profile[j])] += n
            summary = kappa_summary_from_pairs(table, categories=categories, seed=seed)
            result["pairs"].append({"raters": [names[i], names[j]], **{key: summary[key] for key in BRIEF_KEYS}})
    if reference:
        result["reference"] = []
        for i in range(k):
            table = Counter()
            for profile, n in profiles.items():
                if profile[i] is not None and profile[-1] is not None:
                    table[(profile[i], profile[-1])] += n
            summary = kappa_summary_from_pairs(table, categories=categories, seed=seed)
            result["reference"].append({"rater": names[i], **{key: summary[key] for key in BRIEF_KEYS if key != "left_out"}})
    return result


def json_safe(value):
    """JSON has no NaN nor infinity: an undefined figure (kappa with no variation, an empty set, the
    effective size of a stratum read whole) becomes None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# Scoring statistics (PROTOCOL.md §10): proportions with Wilson intervals, exact McNemar, Holm, and
# the conversation-clustered bootstraps. Plain reference functions first; the batch functions after
# them compute the same numbers for many runs at once and are tested against the plain ones.

WILSON_Z = 1.959964  # the z the protocol prints; every published Wilson interval used this rounding
BOOTSTRAP_REPLICATES = 10_000
BOOTSTRAP_SEED = 7
HIERARCHICAL_SEED = 11
MCNEMAR_EXACT_LIMIT = 2000  # above this many discordant pairs, exact integer sums get slow (big ints)


def wilson_interval(k: int, n: int, *, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval for k successes of n, no continuity correction, clipped to [0, 1].
    0 of 0 is (0, 0): a class the key does not hold has no interval to show."""
    if n == 0:
        return (0.0, 0.0)
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, n], got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_difference_interval(k1: int, n1: int, k2: int, n2: int, *, z: float = WILSON_Z) -> tuple[float, float]:
    """Newcombe's hybrid score interval (his method 10) for the difference of two independent proportions
    k1/n1 - k2/n2, built from each one's Wilson interval; clipped to [-1, 1]. Either n zero: (0, 0)."""
    if n1 == 0 or n2 == 0:
        return (0.0, 0.0)
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z=z)
    l2, u2 = wilson_interval(k2, n2, z=z)
    d = p1 - p2
    return (max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            min(1.0, d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p: min(1, 2·P[X ≤ min(b, c)]) for X ~ Binomial(b + c, 1/2); 1 when b + c = 0.
    Exact integer arithmetic up to MCNEMAR_EXACT_LIMIT discordant pairs; beyond, the regularized
    incomplete beta (scipy.special.bdtr, ~1e-14 relative), since the big-int sums grow quadratically."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    low = min(b, c)
    if n <= MCNEMAR_EXACT_LIMIT:
        total = term = 1
        for i in range(1, low + 1):
            term = term * (n - i + 1) // i
            total += term
        return min(1.0, 2 * total / 2**n)
    return min(1.0, 2 * float(_bdtr()(low, n, 0.5)))


def _bdtr():
    # scipy.special alone (not scipy.stats): 0.2 s, paid only by a pair with > 2000 discordant items.
    from scipy.special import bdtr

    return bdtr


def mcnemar_exact_many(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """mcnemar_exact over arrays of counts (the same two paths, elementwise)."""
    b, c = np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64)
    out = np.ones(b.shape, dtype=float)
    large = (b + c) > MCNEMAR_EXACT_LIMIT
    if large.any():
        out[large] = np.minimum(1.0, 2 * _bdtr()(np.minimum(b, c)[large], (b + c)[large], 0.5))
    for index in zip(*np.nonzero(~large), strict=True):
        out[index] = mcnemar_exact(int(b[index]), int(c[index]))
    return out


def holm_adjust(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjustment over the whole family: sort by p, (m − rank)·p with rank from 0,
    a running maximum, capped at 1. Returned in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def _percentile_pair(sorted_values: Sequence[float]) -> tuple[float, float]:
    b = len(sorted_values)
    return (float(sorted_values[int(0.025 * b)]), float(sorted_values[int(0.975 * b)]))


def cluster_bootstrap(
    clusters: Mapping[Hashable, Sequence[int]], *, replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """Conversation-clustered percentile bootstrap of a mean of 0/1 outcomes (PROTOCOL.md §10).

    `clusters` maps a conversation id to its items' outcomes (1 = correct). A fresh random.Random(seed);
    the conversations in sorted-id order; each replicate draws as many conversations as there are, with
    replacement, one `choice` at a time, and takes the mean outcome over all drawn items. The interval
    is the sorted replicates at indices ⌊0.025·B⌋ and ⌊0.975·B⌋. No items: (0, 0), as Wilson."""
    groups = [(sum(clusters[c]), len(clusters[c])) for c in sorted(clusters) if len(clusters[c])]
    if not groups or replicates < 1:
        return (0.0, 0.0)
    rng = random.Random(seed)
    means = []
    for _ in range(replicates):
        hits = size = 0
        for _ in groups:
            h, s = rng.choice(groups)
            hits += h
            size += s
        means.append(hits / size)
    means.sort()
    return _percentile_pair(means)


def hierarchical_bootstrap(
    ingests: Sequence[Mapping[Hashable, Sequence[int]]], *, replicates: int = BOOTSTRAP_REPLICATES, seed: int = HIERARCHICAL_SEED
) -> tuple[float, float]:
    """Conversation × ingest bootstrap for a system run on several ingests (PROTOCOL.md §10): per
    replicate, for each conversation slot pick an ingest (of those with per-item outputs), then a
    conversation, and add that conversation's outcomes under that ingest; the mean over the drawn items.
    random.Random(seed), conversations in sorted-id order, percentiles as cluster_bootstrap. A
    conversation absent from an ingest contributes no items when that ingest is drawn."""
    if not ingests or replicates < 1:
        return (0.0, 0.0)
    conversations = sorted(set().union(*ingests))
    cells = [[(sum(g.get(c, ())), len(g.get(c, ()))) for c in conversations] for g in ingests]
    if not conversations or not any(s for row in cells for _, s in row):
        return (0.0, 0.0)
    rng = random.Random(seed)
    slots = range(len(conversations))
    ingest_ids = range(len(ingests))
    means = []
    for _ in range(replicates):
        hits = size = 0
        for _ in slots:
            g = rng.choice(ingest_ids)
            h, s = cells[g][rng.choice(slots)]
            hits += h
            size += s
        # A replicate that drew only empty cells has no mean; it cannot happen when every ingest holds
        # every conversation, and otherwise counts as 0 rather than vanishing from the B replicates.
        means.append(hits / size if size else 0.0)
    means.sort()
    return _percentile_pair(means)


def bootstrap_draws(n_clusters: int, *, replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """The (replicates × n_clusters) cluster indices cluster_bootstrap draws, row by row: exactly the
    values `random.Random(seed).choice` yields, computed in numpy. Python's random is MT19937 and
    choice(seq) is getrandbits(k) (the top k bits of one 32-bit output, k = len(seq).bit_length())
    rejected while ≥ len(seq); numpy's MT19937 started from the same state gives the same outputs."""
    k = n_clusters.bit_length()
    if n_clusters < 1 or k > 32:
        raise ValueError(f"need 1 ≤ clusters < 2**32, got {n_clusters}")
    state = random.Random(seed).getstate()[1]
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937", "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]}}
    needed = replicates * n_clusters
    accepted: list[np.ndarray] = []
    have = 0
    while have < needed:
        # Acceptance is n / 2**k > 1/2: ask for a little over twice the remainder at most.
        want = int((needed - have) * (2**k / n_clusters) * 1.02) + 64
        candidates = (generator.random_raw(want) >> np.uint64(32 - k)).astype(np.int64)
        kept = candidates[candidates < n_clusters]
        accepted.append(kept)
        have += kept.size
    # Raw outputs drawn past the last accepted one are simply never used: the generator is local.
    return np.concatenate(accepted)[:needed].reshape(replicates, n_clusters)


def draw_counts(draws: np.ndarray, n_clusters: int) -> np.ndarray:
    """(replicates × n_clusters) how often each cluster was drawn in each replicate, as float64 (so a
    matrix product with per-cluster counts is a BLAS call and still exact: every value is an integer
    far below 2**53)."""
    replicates = draws.shape[0]
    flat = draws + (np.arange(replicates, dtype=np.int64) * n_clusters)[:, None]
    return np.bincount(flat.ravel(), minlength=replicates * n_clusters).reshape(replicates, n_clusters).astype(float)


def cluster_bootstrap_many(
    sizes: Sequence[int], hits: np.ndarray, *, replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED, counts: np.ndarray | None = None
) -> np.ndarray:
    """cluster_bootstrap for many runs over the same clusters at once: `sizes` holds each cluster's item
    count and `hits` (runs × clusters) each run's correct items per cluster, clusters in sorted-id order
    and all non-empty. Returns (runs × 2) intervals, equal to cluster_bootstrap row by row: with a fresh
    generator per run, every run draws the same clusters, so one count matrix serves them all.
    `counts` (from draw_counts) may be passed to share it between calls with the same shape and seed."""
    hits = np.atleast_2d(np.asarray(hits, dtype=float))
    sizes = np.asarray(sizes, dtype=float)
    if sizes.size == 0 or replicates < 1:
        return np.zeros((hits.shape[0], 2))
    if counts is None:
        counts = draw_counts(bootstrap_draws(sizes.size, replicates=replicates, seed=seed), sizes.size)
    means = (counts @ hits.T) / (counts @ sizes)[:, None]  # (replicates × runs)
    means.sort(axis=0)
    return np.stack([means[int(0.025 * replicates)], means[int(0.975 * replicates)]], axis=1)


# ---------------------------------------------------------------------------------------------
# Designed samples (a human key over a stratified sample of a large population of answers): the size
# a Wilson half-width asks for, the allocation over strata, and the population figure weighted back.


def wilson_half_width(p: float, n: int, *, z: float = WILSON_Z) -> float:
    """Half the width of the Wilson interval at an observed proportion p of n (unclipped)."""
    if n <= 0:
        return math.inf
    z2 = z * z
    return z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)


def wilson_sample_size(half_width: float, *, p: float = 0.5, z: float = WILSON_Z, population: int | None = None) -> int:
    """The smallest n whose Wilson interval at proportion p is at most ±half_width (p = 0.5, the widest,
    when nothing is known). With a finite population the finite-population correction n / (1 + (n − 1)/N)
    is applied, and the answer never exceeds N."""
    if not 0 < half_width < 0.5:
        raise ValueError(f"half_width must lie in (0, 0.5), got {half_width}")
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p}")
    high = 1
    while wilson_half_width(p, high, z=z) > half_width:
        high *= 2
    low = high // 2  # the half width falls as n grows: the smallest n is in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if wilson_half_width(p, middle, z=z) > half_width else (low, middle)
    if population is None:
        return high
    if population < 1:
        raise ValueError(f"population must be positive, got {population}")
    return min(population, math.ceil(high / (1 + (high - 1) / population)))


def allocate(sizes: Mapping[Hashable, int], total: int, *, weights: Mapping[Hashable, float] | None = None,
             minimum: int = 1) -> dict:
    """Split `total` draws over strata in proportion to size × weight (a weight above 1 oversamples its
    stratum), every non-empty stratum at least `minimum` (or all of it), none above its size; whole draws
    by largest remainders (ties: the strata's order). The allocations sum to min(total, Σ sizes)."""
    if total < 0 or minimum < 0:
        raise ValueError("total and minimum must be non-negative")
    weights = weights or {}
    keys = [k for k in sizes if sizes[k] > 0]
    total = min(total, sum(sizes[k] for k in keys))
    floor_of = {k: min(sizes[k], minimum) for k in keys}
    if sum(floor_of.values()) > total:
        raise ValueError(f"{total} draws cannot give {len(keys)} strata at least {minimum} each")
    # The real-valued allocation: strata pushed to a bound (their minimum or their size) are fixed there,
    # the others share what is left in proportion; repeat until no stratum crosses a bound.
    fixed: dict = {}
    while True:
        free = [k for k in keys if k not in fixed]
        left = total - sum(fixed.values())
        whole = sum(sizes[k] * float(weights.get(k, 1.0)) for k in free)
        ideal = {k: left * sizes[k] * float(weights.get(k, 1.0)) / whole if whole else 0.0 for k in free}
        crossed = {k: sizes[k] for k in free if ideal[k] > sizes[k]}
        if not crossed:
            crossed = {k: floor_of[k] for k in free if ideal[k] < floor_of[k]}
        if not crossed:
            break
        fixed.update(crossed)
    ideal.update(fixed)
    allocation = {k: math.floor(ideal[k]) for k in keys}
    short = total - sum(allocation.values())
    order = sorted(keys, key=lambda k: (-(ideal[k] - allocation[k]), keys.index(k)))
    for k in order[:short]:
        allocation[k] += 1
    return {k: allocation.get(k, 0) for k in sizes}


def stratified_proportion(strata: Mapping[Hashable, tuple[int, int, int]], *, z: float = WILSON_Z) -> dict:
    """A population proportion from a stratified random sample, weighted back (Horvitz–Thompson: each
    sampled unit of stratum h stands for N_h / n_h units). `strata`: h -> (N_h, n_h, k_h), population
    size, sampled and positive. The variance is Σ W_h² (1 − n_h/N_h) p_h (1 − p_h) / n_h; the interval is
    Wilson's at the effective sample size p (1 − p) / variance (the plain Wilson interval for one stratum
    drawn from an unbounded population; a census has no width). A stratum with n_h = 0 cannot be
    estimated: it makes the figure undefined (nan) rather than silently dropped."""
    return stratified_domain_proportion({h: (N, n, n, k) for h, (N, n, k) in strata.items()}, z=z)


def stratified_domain_proportion(strata: Mapping[Hashable, tuple[int, int, int, int]], *, z: float = WILSON_Z) -> dict:
    """The proportion within a domain (a part of the population: one run, one type) from a stratified
    random sample whose strata cut across it. `strata`: h -> (N_h, n_h, m_h, k_h): the stratum's
    population and sample sizes, the sampled units in the domain and the positive ones among them. The
    ratio estimator Σ w_h k_h / Σ w_h m_h (w_h = N_h / n_h) with its linearised variance
    Σ N_h² (1 − n_h/N_h) s²_h / n_h, s²_h the variance of z = x (y − p) / X̂ over the stratum's sample;
    with the whole population as the domain (m_h = n_h) this is stratified_proportion. Undefined (nan)
    when no sampled unit is in the domain or a non-empty stratum was not sampled at all."""
    sampled = sum(m for _, _, m, _ in strata.values())
    for key, (N, n, m, k) in strata.items():
        if not 0 <= k <= m <= n <= N:
            raise ValueError(f"stratum {key!r}: need 0 <= k <= m <= n <= N, got N={N}, n={n}, m={m}, k={k}")
    domain_weight = sum(N / n * m for N, n, m, _ in strata.values() if n)
    if not domain_weight or any(n == 0 and N > 0 for N, n, _, _ in strata.values()):
        return {"estimate": math.nan, "se": math.nan, "ci95": (math.nan, math.nan), "n": sampled,
                "effective_n": math.nan}
    estimate = sum(N / n * k for N, n, _, k in strata.values() if n) / domain_weight
    variance, census = 0.0, True
    for N, n, m, k in strata.values():
        if n == 0 or m == 0:
            continue
        census = census and n == N
        mean = (k - m * estimate) / (domain_weight * n)
        square = (k * (1 - estimate) ** 2 + (m - k) * estimate**2) / (domain_weight**2 * n)
        variance += N * N * (1 - n / N) * max(0.0, square - mean * mean) / n
    estimate = min(1.0, max(0.0, estimate))
    if variance <= 1e-18:
        effective = math.inf if census else float(sampled)
    else:
        effective = estimate * (1 - estimate) / variance
    if math.isinf(effective):
        interval = (estimate, estimate)
    else:
        # Wilson's interval at a non-integer n: the same formula with k = p·n.
        half = wilson_half_width(estimate, effective, z=z)
        centre = (estimate + z * z / (2 * effective)) / (1 + z * z / effective)
        interval = (max(0.0, centre - half), min(1.0, centre + half))
    return {"estimate": estimate, "se": math.sqrt(variance), "ci95": interval, "n": sampled, "effective_n": effective}
