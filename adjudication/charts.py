"""Server-rendered SVG pictures for the agreement page (no JavaScript libraries). Pure: figures in,
markup out; every label is escaped."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def _x(value: float, left: float, width: float, lo: float, hi: float) -> float:
    return left + (min(max(value, lo), hi) - lo) / (hi - lo) * width


def kappa_forest(rows: list[dict], *, bar: float | None = None, title: str = "Cohen's kappa with 95% interval") -> SafeString:
    """One row per group: {"label", "kappa", "ci95": [low, high], "n"}; kappa None is drawn as n/a."""
    label_w, plot_w, right_w, row_h, top = 280, 420, 110, 26, 34
    height = top + row_h * len(rows) + 30
    width = label_w + plot_w + right_w
    lo, hi = -0.2, 1.0
    if any(r.get("kappa") is not None and r["kappa"] < lo for r in rows):
        lo = -1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart forest" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in [t / 10 for t in range(int(lo * 10), 11, 2)]:
        x = _x(tick, label_w, plot_w, lo, hi)
        parts.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{tick:.1f}</text>')
    if bar is not None:
        x = _x(bar, label_w, plot_w, lo, hi)
        parts.append(f'<line x1="{x:.1f}" y1="{top - 14}" x2="{x:.1f}" y2="{height - 24}" class="bar-line"/>')
        parts.append(f'<text x="{x:.1f}" y="{top - 18}" class="tick" text-anchor="middle">bar {bar:g}</text>')
    for i, row in enumerate(rows):
        y = top + i * row_h + row_h / 2
        parts.append(f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end" class="label">{escape(row["label"])}</text>')
        kappa, ci = row.get("kappa"), row.get("ci95") or [None, None]
        if kappa is None:
            parts.append(f'<text x="{label_w + 6}" y="{y + 4:.1f}" class="na">n/a (n={row.get("n", 0)})</text>')
            continue
        if ci[0] is not None:
            x1, x2 = _x(ci[0], label_w, plot_w, lo, hi), _x(ci[1], label_w, plot_w, lo, hi)
            parts.append(f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" class="ci"/>')
            parts.append(f'<line x1="{x1:.1f}" y1="{y - 5:.1f}" x2="{x1:.1f}" y2="{y + 5:.1f}" class="ci"/>')
            parts.append(f'<line x1="{x2:.1f}" y1="{y - 5:.1f}" x2="{x2:.1f}" y2="{y + 5:.1f}" class="ci"/>')
        cx = _x(kappa, label_w, plot_w, lo, hi)
        parts.append(f'<circle cx="{cx:.1f}" cy="{y:.1f}" r="5" class="point"><title>{kappa:.3f}</title></circle>')
        parts.append(
            f'<text x="{label_w + plot_w + 8}" y="{y + 4:.1f}" class="value">{kappa:.3f} (n={row.get("n", 0)})</text>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped above


def confusion_svg(categories: list[str], counts: list[list[int]], *, rater_a: str, rater_b: str) -> SafeString:
    """A shaded grid: rows rater a, columns rater b, each cell its count; the diagonal is outlined."""
    cell, left, top = 64, 150, 110
    k = len(categories)
    width, height = left + cell * k + 90, top + cell * k + 10
    peak = max((c for row in counts for c in row), default=0) or 1
    title = f"Confusion matrix: {rater_a} (rows) by {rater_b} (columns)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart confusion" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left + cell * k / 2:.1f}" y="14" text-anchor="middle" class="axis">{escape(rater_b)}</text>',
        f'<text x="10" y="{top - 8}" class="axis">{escape(rater_a)}</text>',
    ]
    for j, cat in enumerate(categories):
        x = left + j * cell + cell / 2
        parts.append(
            f'<text x="{x:.1f}" y="{top - 8}" transform="rotate(-35 {x:.1f} {top - 8})" class="label">{escape(cat)}</text>'
        )
    for i, cat in enumerate(categories):
        y = top + i * cell
        parts.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4:.1f}" text-anchor="end" class="label">{escape(cat)}</text>')
        for j in range(k):
            value = counts[i][j]
            shade = 0.08 + 0.8 * value / peak if value else 0
            cls = "cell diag" if i == j else "cell"
            parts.append(
                f'<rect x="{left + j * cell}" y="{y}" width="{cell}" height="{cell}" class="{cls}" '
                f'fill-opacity="{shade:.2f}"><title>{escape(cat)} / {escape(categories[j])}: {value}</title></rect>'
            )
            parts.append(
                f'<text x="{left + j * cell + cell / 2}" y="{y + cell / 2 + 5}" text-anchor="middle" class="count">{value}</text>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped above


def _shade(kappa: float | None) -> str:
    """A cell colour for a kappa: white at 0 or below, the page's accent at 1; n/a is hatched grey."""
    if kappa is None:
        return "background:#eee"
    strength = min(max(kappa, 0.0), 1.0)
    return f"background:rgba(31,111,178,{0.08 + 0.72 * strength:.2f});color:{'#fff' if strength > 0.6 else 'inherit'}"


def pair_matrix(annotators: list[str], pairs: list[dict]) -> SafeString:
    """Cohen's kappa per annotator pair as a heat table (rows and columns the annotators, each cell the
    pair's kappa and shared items); the diagonal is empty."""
    by_pair = {}
    for row in pairs:
        a, b = row["raters"]
        by_pair[(a, b)] = by_pair[(b, a)] = row
    head = "".join(f'<th scope="col">{escape(a)}</th>' for a in annotators)
    body = []
    for a in annotators:
        cells = []
        for b in annotators:
            row = by_pair.get((a, b))
            if a == b or row is None:
                cells.append('<td class="diag"></td>')
                continue
            kappa = row.get("kappa")
            text = "n/a" if kappa is None else f"{kappa:.3f}"
            cells.append(
                f'<td style="{_shade(kappa)}" data-testid="pair-{escape(a)}-{escape(b)}" '
                f'title="{escape(a)} and {escape(b)}: kappa {text} on {row.get("n", 0)} shared items">'
                f'{text}<br><span class="n">n={row.get("n", 0)}</span></td>'
            )
        body.append(f'<tr><th scope="row">{escape(a)}</th>{"".join(cells)}</tr>')
    return mark_safe(  # noqa: S308 - every interpolated label is escaped above
        '<table class="figures heat" aria-label="Cohen\'s kappa per annotator pair">'
        f'<thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def gold_bars(rows: list[dict], *, title: str = "Each annotator against the adjudicated gold") -> SafeString:
    """One bar per annotator: the share agreeing with gold (0–100%), with kappa and n written beside it."""
    label_w, plot_w, right_w, row_h, top = 90, 360, 190, 24, 26
    height = top + row_h * len(rows) + 22
    width = label_w + plot_w + right_w
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart bars" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_w + plot_w * tick / 100
        parts.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 20}" class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 6}" class="tick" text-anchor="middle">{tick}%</text>')
    for i, row in enumerate(rows):
        y = top + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" class="label">{escape(row["rater"])}</text>')
        observed, kappa = row.get("observed"), row.get("kappa")
        if observed is None:
            parts.append(f'<text x="{label_w + 6}" y="{y + 15}" class="na">n/a (n={row.get("n", 0)})</text>')
            continue
        parts.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{plot_w * observed:.1f}" height="{row_h - 8}" class="point">'
            f'<title>{escape(row["rater"])}: {100 * observed:.1f}%</title></rect>'
        )
        kappa_text = "n/a" if kappa is None else f"{kappa:.3f}"
        parts.append(
            f'<text x="{label_w + plot_w + 8}" y="{y + 15}" class="value">{100 * observed:.1f}% · κ {kappa_text} (n={row.get("n", 0)})</text>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped above
