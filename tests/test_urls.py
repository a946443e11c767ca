"""URL names follow one style (kebab-case), and templates build every URL with {% url %} or {% static %}."""

import re
from pathlib import Path

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# Django's admin names its URLs app_model_action; that is Django's scheme, not ours.
FOREIGN_NAMESPACES = {"admin"}
HARD_CODED = re.compile(r'(?:href|action|src|data-[a-z-]+)="/')


def _names(patterns, namespace=None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            if inner in FOREIGN_NAMESPACES:
                continue
            yield from _names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield namespace, pattern.name


def test_every_url_name_is_kebab_case():
    names = list(_names(get_resolver().url_patterns))
    assert len(names) > 20
    assert [f"{ns}:{name}" if ns else name for ns, name in names if not KEBAB.match(name)] == []


def test_no_template_hard_codes_a_path():
    found = [
        f"{path.relative_to(settings.BASE_DIR)}:{number}"
        for path in sorted((Path(settings.BASE_DIR) / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if HARD_CODED.search(line)
    ]
    assert found == []
