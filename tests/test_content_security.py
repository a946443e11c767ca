"""The Content-Security-Policy and what it relies on: no page carries inline script, and the API docs are
served from Goldkey's own static files."""

import re
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
EVENT_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)
ASSET = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)="([^"]+)\"""", re.I)


def _policy(response) -> dict[str, list[str]]:
    parts = [p.strip().split() for p in response["Content-Security-Policy"].split(";") if p.strip()]
    return {name: values for name, *values in parts}


def _templates() -> list[Path]:
    return sorted(Path(settings.BASE_DIR, "templates").rglob("*.html"))


def test_every_page_template_is_checked():
    assert len(_templates()) > 20


@pytest.mark.parametrize("template", _templates(), ids=lambda p: str(p.relative_to(settings.BASE_DIR)))
def test_no_template_has_inline_script_or_event_handlers(template):
    text = template.read_text()
    assert not INLINE_SCRIPT.search(text), "move the script to static/ (the CSP refuses inline scripts)"
    assert not EVENT_HANDLER.search(text), "bind the handler in a static script (the CSP refuses onclick=…)"


def test_pages_allow_scripts_and_styles_from_goldkey_only(client):
    policy = _policy(client.get("/accounts/login/"))
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]


def test_the_api_is_under_the_policy_too(client):
    assert "script-src 'self'" in client.get("/api/schema/")["Content-Security-Policy"]


def _assets(html: str) -> list[str]:
    return ASSET.findall(html)


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_the_api_docs_reference_only_goldkey_assets(client, url):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assets = _assets(html)
    assert any(a.endswith(".js") for a in assets)
    assert all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    assert not INLINE_SCRIPT.search(html)
    assert "<style" not in html
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_swagger_ui_is_the_packaged_copy(client):
    assets = _assets(client.get("/api/docs/").content.decode())
    assert any("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in a for a in assets)


def test_the_swagger_start_up_script_is_served_as_javascript(client):
    response = client.get("/api/docs/?script=")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in response.content.decode()


def test_only_the_redoc_page_allows_its_generated_styles(client):
    assert "'unsafe-inline'" in _policy(client.get("/api/redoc/"))["style-src"]
    assert "'unsafe-inline'" not in _policy(client.get("/api/docs/"))["style-src"]
