"""The leaderboard's forest plot, server-rendered SVG (no JavaScript). Pure: report figures in, markup out;
every label is escaped.

CR, AS and HNS are drawn side by side for every run, never one alone: a system that flags everything
has a perfect CR and an empty HNS, and the picture has to show both at once. Each panel draws the
Wilson interval (solid) and the conversation-clustered bootstrap interval (dashed, just below it)
around the point estimate."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PANELS = ("CR", "AS", "HNS")


def x_at(value: float, left: float, width: float, domain: tuple[float, float] = (0.0, 1.0)) -> float:
    """Where `value` falls on a panel `width` wide from `left` spanning `domain` (clamped to it)."""
    low, high = domain
    return left + (min(max(value, low), high) - low) / (high - low) * width


def interval_mark(parts: list, pair, y: float, left: float, width: float, css: str, dash: str = "",
                  domain: tuple[float, float] = (0.0, 1.0)) -> None:
    """An interval as a line with end ticks, appended to `parts` (every score page draws its intervals so)."""
    x1, x2 = x_at(pair[0], left, width, domain), x_at(pair[1], left, width, domain)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    parts.append(f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" class="{css}"{extra}/>')
    for x in (x1, x2):
        parts.append(f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x:.1f}" y2="{y + 4:.1f}" class="{css}"/>')


def score_forest(runs: dict[str, dict], *, title: str) -> SafeString:
    """`runs` maps a run's name to its figures (the report's "runs"): one row per run, one panel per
    metric of CR, AS and HNS."""
    label_w, panel_w, gap, row_h, top = 220, 230, 44, 30, 46
    width = label_w + len(PANELS) * (panel_w + gap)
    height = top + row_h * max(len(runs), 1) + 28
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart forest scores" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for p, metric in enumerate(PANELS):
        left = label_w + p * (panel_w + gap)
        parts.append(f'<text x="{left + panel_w / 2:.1f}" y="16" text-anchor="middle" class="axis metric">{metric}</text>')
        for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
            x = x_at(tick, left, panel_w)
            parts.append(f'<line x1="{x:.1f}" y1="{top - 12}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>')
            parts.append(f'<text x="{x:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{tick:g}</text>')
    parts.append(f'<text x="{label_w}" y="32" class="tick">solid: Wilson 95% · dashed: conversation-clustered bootstrap 95%</text>')
    for i, (name, figures) in enumerate(runs.items()):
        y = top + i * row_h + row_h / 2 - 3
        parts.append(f'<text x="{label_w - 10}" y="{y + 4:.1f}" text-anchor="end" class="label">{escape(name)}</text>')
        for p, metric in enumerate(PANELS):
            left = label_w + p * (panel_w + gap)
            figure = figures[metric]
            if not figure["n"]:
                parts.append(f'<text x="{left + 4}" y="{y + 4:.1f}" class="na">n/a (n=0)</text>')
                continue
            interval_mark(parts, figure["wilson"], y, left, panel_w, "ci wilson")
            if figure.get("bootstrap"):
                interval_mark(parts, figure["bootstrap"], y + 8, left, panel_w, "ci bootstrap", dash="3 2")
            tip = f"{name} {metric} {figure['value']:.3f} ({figure['k']}/{figure['n']})"
            parts.append(
                f'<circle cx="{x_at(figure["value"], left, panel_w):.1f}" cy="{y:.1f}" r="4.5" class="point">'
                f"<title>{escape(tip)}</title></circle>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped above
