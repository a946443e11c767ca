"""The API docs render in a real browser with every request off the machine refused (no CDN, no fonts)."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def offline_page(page, live_server):
    outside = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(live_server.url) or url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            outside.append(url)
            request_route.abort()

    page.route("**/*", route)
    yield page
    assert outside == [], "the docs asked for something off the machine"


def test_swagger_ui_renders_offline(offline_page):
    offline_page.goto("/api/docs/")
    assert "Goldkey API" in offline_page.locator(".swagger-ui .info .title").inner_text()
    assert offline_page.locator(".opblock").count() > 10  # the operations came from /api/schema/


def test_redoc_renders_offline(offline_page):
    offline_page.goto("/api/redoc/")
    heading = offline_page.locator("h1", has_text="Goldkey API")
    heading.wait_for()
    assert offline_page.locator("[data-section-id]").count() > 10
    # The bundle always shows Redocly's logo from their CDN; the policy refuses it, which is the point.
    logo = [m for m in offline_page.csp_refusals if "cdn.redoc.ly/redoc/logo-mini.svg" in m]
    assert len(logo) == len(offline_page.csp_refusals) <= 1
    offline_page.csp_refusals.clear()
