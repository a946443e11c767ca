"""An author works through the queue by keyboard in real Chromium, and the retained-set figures appear."""

import pytest
from playwright.sync_api import expect

from adjudication.models import Decision
from tests.conftest import browser_login

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_author_adjudicates_three_queued_items_by_keyboard_and_retained_statistics_update(page, small_campaign, author):
    browser_login(page, author)
    page.goto(f"/adjudicate/{small_campaign.slug}/")
    assert "3 queued items still undecided" in page.locator("#retained").inner_text()
    assert page.locator("[data-testid=retained-n]").count() == 0

    page.keyboard.press("Enter")  # opens the highlighted (first undecided) row: the drop suggestion
    page.wait_for_url("**/items/**")
    assert page.locator("h1").inner_text() == "conv-1:v1c4"
    page.keyboard.press("d")
    assert page.evaluate("document.activeElement.id") == "note"
    page.keyboard.type("both say the claim is not in the excerpts")
    page.keyboard.press("Control+Enter")

    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    page.keyboard.press("k")  # keep, saved at once

    expect(page.locator("h1")).to_have_text("conv-1:v1b5")
    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.id") == "new_gold"
    page.keyboard.press("a")  # the first option starting with "a": aligned
    page.keyboard.press("Tab")
    page.keyboard.type("only one verdict; the draft is consistent")
    page.keyboard.press("Control+Enter")

    page.wait_for_url(f"**/adjudicate/{small_campaign.slug}/")
    assert page.locator("[data-testid=queue-counts]").inner_text() == "3 of 3 queued items decided"
    assert page.locator("[data-testid=retained-n]").inner_text() == "4"
    assert page.locator("[data-testid=retained-kappa]").inner_text() != "n/a"
    decisions = {d.item.external_id: (d.action, d.new_gold, d.decided_by_id) for d in Decision.objects.select_related("item")}
    assert decisions == {
        "conv-1:v1c4": ("drop", "", author.id),
        "conv-1:v1b3": ("keep", "", author.id),
        "conv-1:v1b5": ("relabel", "aligned", author.id),
    }
