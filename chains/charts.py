"""A Track C run's figures as a small forest plot, server-rendered SVG the way the other score pages draw theirs
(`scoring.charts`): one row per metric, the Wilson interval around the rate; resolution responsiveness, a
difference of two rates, on its own panel from −1 to 1 with Newcombe's interval. Pure: a report in, markup out;
every label is escaped."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from scoring.charts import interval_mark, x_at

RATES, DIFFERENCE = (0.0, 1.0), (-1.0, 1.0)


def run_forest(report: dict, *, title: str) -> SafeString:
    """`report` is one run's (`chains.scores.run_report`)."""
    label_w, panel_w, gap, row_h, top = 330, 260, 40, 26, 40
    rows = list(report["metrics"].items())
    width = label_w + 2 * panel_w + gap
    height = top + row_h * len(rows) + 28
    panels = ((RATES, label_w, "rate, Wilson 95%"), (DIFFERENCE, label_w + panel_w + gap, "difference, Newcombe 95%"))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart forest scores" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for domain, left, name in panels:
        parts.append(f'<text x="{left + panel_w / 2:.1f}" y="16" text-anchor="middle" class="axis metric">{name}</text>')
        low, high = domain
        for tick in (low, (low + high) / 2, high):
            x = x_at(tick, left, panel_w, domain)
            parts.append(f'<line x1="{x:.1f}" y1="{top - 12}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>')
            parts.append(f'<text x="{x:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{tick:g}</text>')
    for i, (name, figure) in enumerate(rows):
        y = top + i * row_h + row_h / 2 - 3
        parts.append(f'<text x="{label_w - 10}" y="{y + 4:.1f}" text-anchor="end" class="label">{escape(figure["label"])}</text>')
        difference = "newcombe" in figure
        domain, left = (DIFFERENCE, label_w + panel_w + gap) if difference else (RATES, label_w)
        pair = figure["newcombe"] if difference else figure["wilson"]
        if figure["rate"] is None or pair is None:
            parts.append(f'<text x="{left + 4}" y="{y + 4:.1f}" class="na">n/a</text>')
            continue
        interval_mark(parts, pair, y, left, panel_w, "ci wilson", domain=domain)
        counts = "" if difference else f" ({figure['k']}/{figure['n']})"
        tip = f"{figure['label']}: {figure['rate']:.3f}{counts} [{pair[0]:.3f}, {pair[1]:.3f}]"
        parts.append(f'<circle cx="{x_at(figure["rate"], left, panel_w, domain):.1f}" cy="{y:.1f}" r="4.5" class="point" '
                     f'data-metric="{escape(name)}"><title>{escape(tip)}</title></circle>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped above
