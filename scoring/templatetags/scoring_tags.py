"""The key page's line on who ran the runs against it. A template tag, so that the key page can show it
while the keys app does not import scoring (scores cite keys; keys do not know scores)."""

from django import template

from scoring.selectors import INDEPENDENT_SYSTEMS_NEEDED, run_authorship

register = template.Library()


@register.inclusion_tag("scoring/_run_authorship.html")
def run_authorship_line(key):
    return {"key": key, "authorship": run_authorship(key), "needed": INDEPENDENT_SYSTEMS_NEEDED}
