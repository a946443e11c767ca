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
