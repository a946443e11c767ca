"""Agreement statistics: one small, pure module (label lists in, numbers out). No Django imports.

Every figure Goldkey reports (campaign agreement, council pairwise kappa, scorer validation) comes
from here; views and exports only format the results.
"""

from collections import Counter
from collections.abc import Sequence


def paired(a: Sequence, b: Sequence, exclude: set | None = None) -> tuple[list, list]:
    """Keep the positions where both raters gave a label (None = missing) not in `exclude`."""
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length ({len(a)} vs {len(b)})")
    exclude = exclude or set()
    keep = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None and x not in exclude and y not in exclude]
    return [x for x, _ in keep], [y for _, y in keep]


def observed_agreement(a: Sequence, b: Sequence) -> float:
    if not a:
        return float("nan")
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa for two raters, nominal labels. Perfect agreement on a single category is 1.0
    (scikit-learn returns nan there; we define it as perfect agreement); an empty input is nan."""
    n = len(a)
    if n != len(b):
        raise ValueError(f"label lists differ in length ({n} vs {len(b)})")
    if n == 0:
        return float("nan")
    po = observed_agreement(a, b)
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if pe == 1.0:
        return 1.0 if po == 1.0 else float("nan")
    return (po - pe) / (1 - pe)


def cohen_kappa_interval(
    a: Sequence, b: Sequence, *, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval for Cohen's kappa (items resampled with replacement, seeded so
    the same labels always give the same interval). Empty input: (nan, nan)."""
    import numpy as np

    n = len(a)
    if n != len(b):
        raise ValueError(f"label lists differ in length ({n} vs {len(b)})")
    if n == 0:
        return float("nan"), float("nan")
    categories = {label: index for index, label in enumerate(sorted(set(a) | set(b), key=str))}
    x = np.array([categories[v] for v in a])
    y = np.array([categories[v] for v in b])
    k = len(categories)
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, n, size=(resamples, n))
    xs, ys = x[samples], y[samples]
    po = (xs == ys).mean(axis=1)
    offsets = (np.arange(resamples) * k)[:, None]
    ca = np.bincount((xs + offsets).ravel(), minlength=resamples * k).reshape(resamples, k)
    cb = np.bincount((ys + offsets).ravel(), minlength=resamples * k).reshape(resamples, k)
    pe = (ca * cb).sum(axis=1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(pe == 1.0, np.where(po == 1.0, 1.0, np.nan), (po - pe) / (1 - pe))
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return float(low), float(high)
