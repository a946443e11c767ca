"""Agreement statistics: one small, pure module (label lists in, numbers out). No Django imports.

Every figure Goldkey reports (campaign agreement, council pairwise kappa, scorer validation) comes
from here; views and exports only format the results.

Conventions: a label list holds one label per item; `None` is a missing label. Two-rater functions
take two equally long lists that are already paired (use `paired` / `eligible_pairs` first: they say
how many items were left out and why). Undefined figures are `nan`, never an exception.
"""

import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

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
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def categories_of(*label_lists: Iterable, categories: Sequence | None = None) -> list:
    """The given categories, followed by any other label seen (sorted), so nothing is dropped."""
    seen = {x for labels in label_lists for x in labels if x is not None}
    known = list(categories or [])
    return known + sorted(seen - set(known), key=str)


def confusion_matrix(a: Sequence, b: Sequence, categories: Sequence | None = None) -> tuple[list, list[list[int]]]:
    """(categories, counts) with counts[i][j] = items rater a put in categories[i] and rater b in [j]."""
    _check(a, b)
    cats = categories_of(a, b, categories=categories)
    index = {c: i for i, c in enumerate(cats)}
    counts = [[0] * len(cats) for _ in cats]
    for x, y in zip(a, b, strict=True):
        counts[index[x]][index[y]] += 1
    return cats, counts


def _kappa_from_table(table: np.ndarray) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    p = table / n
    po = float(np.trace(p))
    pe = float(p.sum(axis=1) @ p.sum(axis=0))
    if pe >= 1.0 - 1e-15:
        return 1.0 if po >= 1.0 - 1e-15 else float("nan")
    return (po - pe) / (1 - pe)


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa for two raters, nominal labels. Perfect agreement on a single category is 1.0
    (scikit-learn returns nan there; we define it as perfect agreement); an empty input is nan."""
    n = _check(a, b)
    if n == 0:
        return float("nan")
    po = observed_agreement(a, b)
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if pe == 1.0:
        return 1.0 if po == 1.0 else float("nan")
    return (po - pe) / (1 - pe)


def kappa_se(a: Sequence, b: Sequence) -> float:
    """Large-sample standard error of Cohen's kappa, NOT assuming kappa = 0: Fleiss, Cohen & Everitt
    (1969), "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72(5),
    eq. 13 (as in Fleiss, Levin & Paik 2003, eq. 18.15):

        var(k) = [ sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2
                   + (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
                   - (k - p_e (1 - k))^2 ] / (n (1 - p_e)^2)

    nan when kappa is undefined or n = 0; 0 when the chance agreement is 1 (one category)."""
    cats, counts = confusion_matrix(a, b)
    n = len(a)
    if n == 0:
        return float("nan")
    p = np.asarray(counts, dtype=float) / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    pe = float(rows @ cols)
    if pe >= 1.0 - 1e-15:
        return 0.0
    k = cohen_kappa(a, b)
    diag = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in range(len(cats)))
    off = sum(
        p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(len(cats)) for j in range(len(cats)) if i != j
    )
    var = (diag + (1 - k) ** 2 * off - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    return math.sqrt(max(var, 0.0))


def kappa_ci_analytic(a: Sequence, b: Sequence, z: float = Z95) -> tuple[float, float]:
    """kappa ± z·SE (Fleiss–Cohen–Everitt), clipped to [-1, 1]."""
    k, se = cohen_kappa(a, b), kappa_se(a, b)
    if math.isnan(k) or math.isnan(se):
        return (float("nan"), float("nan"))
    return (max(-1.0, k - z * se), min(1.0, k + z * se))


def kappa_ci_bootstrap(
    a: Sequence, b: Sequence, *, replicates: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Seeded percentile bootstrap over items. Resampling n items with replacement is the same as
    drawing the confusion table from a multinomial(n, observed cell shares), so each replicate costs
    O(categories²) whatever n (100,000 items bootstrap as fast as 100)."""
    n = len(a)
    if n == 0 or replicates < 1:
        return (float("nan"), float("nan"))
    cats, counts = confusion_matrix(a, b)
    k = len(cats)
    shares = np.asarray(counts, dtype=float).ravel() / n
    tables = np.random.default_rng(seed).multinomial(n, shares, size=replicates).reshape(replicates, k, k)
    p = tables / n
    po = np.trace(p, axis1=1, axis2=2)
    pe = np.einsum("ri,ri->r", p.sum(axis=2), p.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(pe >= 1.0 - 1e-15, np.where(po >= 1.0 - 1e-15, 1.0, np.nan), (po - pe) / (1 - pe))
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return (float(low), float(high))


def per_category_agreement(a: Sequence, b: Sequence, categories: Sequence | None = None) -> dict:
    """Per category: `both` (items both raters put there), `either` (items at least one put there), and
    the specific agreement 2·n_kk / (n_k. + n_.k) (Fleiss 1975; nan when nobody used the category)."""
    cats, counts = confusion_matrix(a, b, categories)
    out = {}
    for i, cat in enumerate(cats):
        row, col = sum(counts[i]), sum(r[i] for r in counts)
        both = counts[i][i]
        out[cat] = {
            "both": both,
            "either": row + col - both,
            "rater_a": row,
            "rater_b": col,
            "specific": (2 * both / (row + col)) if row + col else float("nan"),
        }
    return out


def pabak(a: Sequence, b: Sequence, n_categories: int | None = None) -> float:
    """Prevalence- and bias-adjusted kappa (Byrt, Bishop & Carlin 1993): (k·p_o − 1)/(k − 1) with k
    categories (default: the categories seen). With one category it is 1 when the raters agree."""
    po = observed_agreement(a, b)
    k = n_categories or len(categories_of(a, b))
    if math.isnan(po):
        return po
    if k < 2:
        return 1.0 if po == 1.0 else float("nan")
    return (k * po - 1) / (k - 1)


def gwet_ac1(a: Sequence, b: Sequence, n_categories: int | None = None) -> float:
    """Gwet's AC1 (Gwet 2008): chance agreement p_e = 1/(K−1) · Σ_k π_k (1 − π_k), π_k the mean of the
    two raters' shares of category k; AC1 = (p_o − p_e)/(1 − p_e). K defaults to the categories seen."""
    n = _check(a, b)
    if n == 0:
        return float("nan")
    cats = categories_of(a, b)
    k = n_categories or len(cats)
    po = observed_agreement(a, b)
    if k < 2:
        return 1.0 if po == 1.0 else float("nan")
    ca, cb = Counter(a), Counter(b)
    pi = [(ca[c] + cb[c]) / (2 * n) for c in cats]
    pe = sum(x * (1 - x) for x in pi) / (k - 1)
    return (po - pe) / (1 - pe)


def fleiss_kappa(ratings: Sequence[Sequence]) -> tuple[float, int]:
    """Fleiss' kappa for any number of raters (statsmodels' inter_rater). `ratings` holds one label list
    per item; items with a missing label (None) are left out, since every item needs the same number
    of ratings. Returns (kappa, items used)."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rows = [list(r) for r in ratings if r and all(x is not None for x in r)]
    if not rows or len({len(r) for r in rows}) != 1:
        return (float("nan"), len(rows))
    cats = categories_of(*rows)
    if len(cats) == 1:
        return (1.0, len(rows))
    index = {c: i for i, c in enumerate(cats)}
    table, _ = aggregate_raters(np.array([[index[x] for x in r] for r in rows]), n_cat=len(cats))
    return (float(sm_fleiss(table, method="fleiss")), len(rows))


def krippendorff_alpha_nominal(raters: Sequence[Sequence]) -> float:
    """Krippendorff's alpha, nominal (the `krippendorff` package). `raters` holds one label list per
    rater, aligned by item; None marks a missing label (alpha uses every pairable value)."""
    import krippendorff

    cats = categories_of(*raters)
    if not cats:
        return float("nan")
    if len(cats) == 1:
        return 1.0
    index = {c: float(i) for i, c in enumerate(cats)}
    data = np.array([[np.nan if x is None else index[x] for x in r] for r in raters], dtype=float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def kappa_summary(
    a: Sequence, b: Sequence, *, categories: Sequence | None = None, replicates: int = 2000, seed: int = 0
) -> dict:
    """Everything about two raters on one question. Missing labels (None) are left out and counted."""
    total = _check(a, b)
    pa, pb = paired(a, b)
    kappa = cohen_kappa(pa, pb)
    cats, counts = confusion_matrix(pa, pb, categories)
    return {
        "n": len(pa),
        "left_out": total - len(pa),
        "agree": sum(x == y for x, y in zip(pa, pb, strict=True)),
        "observed": observed_agreement(pa, pb),
        "kappa": kappa,
        "se": kappa_se(pa, pb),
        "ci95": list(kappa_ci_analytic(pa, pb)),
        "ci95_bootstrap": list(kappa_ci_bootstrap(pa, pb, replicates=replicates, seed=seed)),
        "pabak": pabak(pa, pb, len(cats) if categories else None),
        "ac1": gwet_ac1(pa, pb, len(cats) if categories else None),
        "per_category": per_category_agreement(pa, pb, cats),
        "confusion": {"categories": cats, "counts": counts},
    }
