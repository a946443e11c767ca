from django import template

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
