import html

from django import template
from django.template.defaultfilters import date
from django.utils import timezone
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def fmt3(value) -> str:
    """A figure at three decimals; undefined figures as n/a."""
    if value is None or value == "":
        return "n/a"
    try:
        return f"{float(value):.3f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pct(value) -> str:
    if value is None:
        return "n/a"
    return f"{100 * float(value):.1f}%"


@register.filter
def get(mapping, key):
    return (mapping or {}).get(key, "")


@register.simple_tag
def queue_rows(entries, *, first_number: int, show_gold: bool, show_band: bool, reason_help: dict) -> str:
    """The queue table's rows (`pages.queue_page_view` entries). Written here rather than as a template
    loop: a page's 50 rows of a dozen variables, filters and two inner loops were more than half of the
    queue page's server time in the template engine (and format_html per cell still a third). Every
    value goes through `_text`, the escape Django's own `escape` applies (html.escape of str)."""
    reasons_html: dict[tuple, str] = {}  # a page repeats a few reason lists
    rows = []
    for number, e in enumerate(entries, start=first_number + 1):
        key = tuple(e.reasons)
        if key not in reasons_html:
            reasons_html[key] = "".join(f'<span class="reason" title="{_text(reason_help.get(r, ""))}">{_text(r)}</span> '
                                        for r in key)
        d = e.decision
        if d is not None:
            by = (d.decided_by.username if d.decided_by_id else "") or "import"
            relabel = f" → {_text(d.new_gold)}" if d.new_gold else ""
            when = date(timezone.localtime(d.decided_at), "Y-m-d H:i")
            decision = f'<strong>{_text(d.action)}</strong>{relabel} <span class="muted">by {_text(by)}, {_text(when)}</span>'
        else:
            decision = '<span class="muted">undecided</span>'
        href = _text(e.href)
        gold = f"<td>{_text(e.item.gold_label)}</td>" if show_gold else ""
        band = f'<td class="band" data-testid="band">{_text(e.band or "—")}</td>' if show_band else ""
        suggestion = _text(e.suggestion)
        rows.append(
            f'<tr data-href="{href}" data-item="{int(e.item.id)}" class="{"decided" if d is not None else "undecided"}">'
            f'<td>{int(number)}</td><td><a href="{href}">{_text(e.item.external_id)}</a></td>{gold}'
            f'<td>{reasons_html[key]}</td>{band}<td class="suggest-{suggestion}">{suggestion}</td><td>{decision}</td></tr>'
        )
    return mark_safe("\n".join(rows))  # every value above is escaped


def _text(value) -> str:
    return html.escape(str(value))
