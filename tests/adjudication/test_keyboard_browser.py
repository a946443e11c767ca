"""Real Chromium: the adjudication pages honour the user's single-key shortcuts setting (WCAG 2.1.4), and
the queue's current row is focused and aria-current as the keys move it."""

import pytest
from playwright.sync_api import expect

from adjudication.models import Decision
from annotation.models import Preferences
from tests.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _current(page) -> str:
    return page.locator("#queue tbody tr[aria-current=true]").evaluate("r => r.dataset.href")


def test_with_single_key_shortcuts_off_the_queue_and_item_pages_ignore_letters(page, small_campaign, author):
    Preferences.objects.create(user=author, single_key_shortcuts=False)
    browser_login(page, author)
    page.goto(f"/adjudicate/{small_campaign.slug}/")
    expect(page.locator("body")).to_have_attribute("data-single-key-shortcuts", "off")
    first = _current(page)
    for key in ("j", "j", "u", "p"):
        page.keyboard.press(key)
    assert _current(page) == first
    page.goto(first)
    for key in ("k", "d", "r", "j", "q"):
        page.keyboard.press(key)
    page.wait_for_timeout(300)
    assert page.url.endswith(first) and not Decision.objects.exists()


def test_with_single_key_shortcuts_on_the_queue_row_moves_focused_and_aria_current(page, small_campaign, author):
    browser_login(page, author)
    page.goto(f"/adjudicate/{small_campaign.slug}/")
    rows = page.locator("#queue tbody tr")
    first = _current(page)
    page.keyboard.press("j")
    moved = _current(page)
    assert moved != first
    assert page.evaluate("document.activeElement.getAttribute('aria-current')") == "true"
    assert page.evaluate("document.activeElement.dataset.href") == moved
    expect(rows.locator("xpath=self::*[@aria-current='true']")).to_have_count(1)
    page.keyboard.press("p")
    assert _current(page) == first
