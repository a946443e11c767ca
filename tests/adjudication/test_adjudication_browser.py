"""An author works through the queue by keyboard in real Chromium, and the retained-set figures appear."""

import pytest
from playwright.sync_api import expect

from adjudication.models import Decision
from tests.adjudication.conftest import rated_campaign
from tests.conftest import browser_login, save_screenshot

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_author_adjudicates_three_queued_items_by_keyboard_and_retained_statistics_update(page, small_campaign, author):
    browser_login(page, author)
    page.goto(f"/adjudicate/{small_campaign.slug}/")
    assert "3 queued items still undecided" in page.locator("#retained").inner_text()
    assert page.locator("[data-testid=retained-n]").count() == 0
    save_screenshot(page, "adjudicate-queue")

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


@pytest.mark.django_db(transaction=True)
def test_author_reads_fleiss_alpha_pairs_and_each_annotator_against_gold_for_three_annotators(
    page, author, annotator_a, annotator_b, annotator_c
):
    from adjudication.agreement import campaign_agreement

    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=2)
    figures = campaign_agreement(campaign)["raters"]
    browser_login(page, author)
    page.goto(f"/adjudicate/{campaign.slug}/agreement/")
    assert page.locator("[data-testid=fleiss-kappa]").inner_text() == f"{figures['fleiss']['kappa']:.3f}"
    assert page.locator("[data-testid=alpha]").inner_text() == f"{figures['krippendorff_alpha']['alpha']:.3f}"
    assert page.locator("[data-testid=pair-row]").count() == 3
    pair = figures["pairs"][1]  # A and C
    assert page.locator("[data-testid=pair-A-C]").inner_text().startswith(f"{pair['kappa']:.3f}")
    assert page.locator("[data-testid=pair-C-A]").inner_text() == page.locator("[data-testid=pair-A-C]").inner_text()
    for row in figures["gold"]["by_annotator"]:
        assert page.locator(f"[data-testid=gold-kappa-{row['rater']}]").inner_text() == f"{row['kappa']:.3f}"
    expect(page.locator("svg.bars")).to_be_visible()
    page.locator("#raters").scroll_into_view_if_needed()
    save_screenshot(page, "adjudicate-agreement-raters")
