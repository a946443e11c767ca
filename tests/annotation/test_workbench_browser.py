"""Real Chromium, keyboard only: the annotator's workbench (guidelines, item list, filters, jump, skip,
undo, the guidelines dialog), the single-key shortcuts setting, and the progress labels across the
Phase 1 / Phase 2 boundary."""


import pytest
from playwright.sync_api import expect

from annotation.models import Preferences, Skip
from annotation.services import campaign_create, campaign_guidelines_set
from tests.annotation.conftest import enrollment_of, make_twist_items
from tests.conftest import browser_login, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUIDELINES = "# Read the whole draft\n\nA *draft* that repeats an excerpt word for word is **consistent**."


def _campaign(slug, n, annotator_a, annotator_b, author=None):
    item_set = make_twist_items(n, name=f"{slug} set", conversation_id=f"conv-{slug}")
    campaign = campaign_create(slug=slug, item_set=item_set, annotators=[annotator_a, annotator_b], seed=5)
    if author is not None:
        campaign_guidelines_set(campaign=campaign, guidelines=GUIDELINES, user=author)
    return campaign


def _tab_to(page, selector, limit=60):
    """Press Tab until the element matching `selector` has the focus (keyboard only, as a user would)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def _focused_inside(page, selector) -> bool:
    return page.evaluate("(s) => !!document.activeElement.closest(s)", selector)


def _bar(page) -> str:
    return page.evaluate("document.getElementById('phase-progress').style.width")


def _answer(page, key):
    page.keyboard.press(key)
    expect(page.locator("#save-status")).to_have_text("saved")


def test_annotator_reads_the_guidelines_filters_jumps_skips_and_undoes_by_keyboard(
        page, annotator_a, annotator_b, author):
    campaign = _campaign("bench", 5, annotator_a, annotator_b, author)
    browser_login(page, annotator_a)
    # first visit: the guidelines, rendered from Markdown; Start has the focus
    page.goto("/annotate/bench/")
    page.wait_for_url("**/annotate/bench/guidelines/")
    expect(page.locator("#guidelines h1")).to_have_text("Read the whole draft")
    expect(page.locator("#guidelines strong")).to_have_text("consistent")
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/bench/item/1/")
    # answer item 1, then skip item 2
    _answer(page, "1")
    page.keyboard.press("j")
    page.wait_for_url("**/annotate/bench/item/2/")
    page.keyboard.press("s")
    page.wait_for_url("**/annotate/bench/item/3/")
    # answer item 3, then take it back
    _answer(page, "2")
    page.keyboard.press("z")
    page.wait_for_url("**/annotate/bench/item/3/")
    expect(page.locator(".messages")).to_contain_text("Undone: item 3")
    expect(page.locator('button.choice.selected')).to_have_count(0)
    expect(page.locator("#save-status")).to_have_text("")
    # the guidelines again from "?": a modal dialog that holds the focus, then gives it back
    _tab_to(page, "[data-help]")
    page.keyboard.press("Enter")
    dialog = page.locator("#conventions [role=dialog]")
    expect(dialog).to_be_visible()
    expect(dialog).to_have_attribute("aria-modal", "true")
    expect(dialog.locator(".guidelines h1")).to_have_text("Read the whole draft")
    assert _focused_inside(page, "#conventions")
    for _ in range(12):  # Tab cycles inside the dialog and never reaches the page behind it
        page.keyboard.press("Tab")
        assert _focused_inside(page, "#conventions")
    page.keyboard.press("Shift+Tab")
    assert _focused_inside(page, "#conventions")
    save_screenshot(page, "annotate-guidelines")
    page.keyboard.press("Escape")
    expect(page.locator("#conventions")).to_be_hidden()
    assert page.evaluate("document.activeElement.matches('[data-help]')")
    page.keyboard.press("?")
    expect(page.locator("#conventions")).to_be_visible()
    page.keyboard.press("Escape")
    # the item list: the row it was opened from is current and focused
    page.keyboard.press("q")
    page.wait_for_url("**/annotate/bench/items/?at=3")
    current = page.locator("#item-list tr[aria-current=true]")
    expect(current).to_have_attribute("data-position", "3")
    assert page.evaluate("document.activeElement.dataset.position") == "3"
    page.keyboard.press("p")
    assert page.evaluate("document.activeElement.dataset.position") == "2"
    expect(page.locator("#item-list tr[aria-current=true]")).to_have_attribute("data-position", "2")
    # filter: unanswered (the skipped item says so), by Tab and Enter
    _tab_to(page, 'a[data-filter="unanswered"]')
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/bench/items/?show=unanswered")
    positions = page.locator("#item-list tbody tr").evaluate_all("rows => rows.map(r => r.dataset.position)")
    assert positions == ["2", "3", "4", "5"]
    expect(page.locator('#item-list tr[data-position="2"]')).to_contain_text("skipped · unanswered")
    save_screenshot(page, "annotate-list")
    _tab_to(page, 'a[data-filter="answered"]')
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/bench/items/?show=answered")
    expect(page.locator("#item-list tbody tr")).to_have_count(1)
    # jump to item 4 by its number
    _tab_to(page, "#jump")
    page.keyboard.type("4")
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/bench/item/4/")
    # and the list's own keys: Enter opens the current row
    page.keyboard.press("q")
    page.wait_for_url("**/annotate/bench/items/?at=4")
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/bench/item/5/")
    assert "conv-bench" not in page.content()
    enrollment = enrollment_of(campaign, annotator_a)
    assert Skip.objects.filter(assignment__enrollment=enrollment).values_list("assignment__position", flat=True).get() == 1
    assert enrollment.phase1_done_count == 1


def test_single_key_shortcuts_turned_off_do_nothing_and_stay_off_after_a_reload(page, annotator_a, annotator_b):
    campaign = _campaign("keys", 3, annotator_a, annotator_b)
    browser_login(page, annotator_a)
    page.goto("/annotate/keys/item/1/")
    page.keyboard.press("?")
    expect(page.locator("#conventions")).to_be_visible()
    _tab_to(page, "#pref-shortcuts")
    page.keyboard.press("Space")
    expect(page.locator("#pref-status")).to_have_text("saved")
    page.keyboard.press("Escape")
    expect(page.locator("#conventions")).to_be_hidden()
    for _ in range(2):  # now, and after a reload
        for key in ("1", "2", "j", "p", "s", "z", "n", "q", "?", "x"):
            page.keyboard.press(key)
        page.wait_for_timeout(300)
        assert page.url.endswith("/annotate/keys/item/1/")
        expect(page.locator("button.choice.selected")).to_have_count(0)
        expect(page.locator("#conventions")).to_be_hidden()
        expect(page.locator("textarea[data-key]")).to_have_value("")
        expect(page.locator("#save-status")).to_have_text("")
        page.reload()
        expect(page.locator("body")).to_have_attribute("data-single-key-shortcuts", "off")
    assert not Preferences.objects.get(user=annotator_a).single_key_shortcuts
    assert not enrollment_of(campaign, annotator_a).phase1_done_count
    # buttons and Tab still reach everything
    _tab_to(page, 'button.choice[data-value="consistent"]')
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_have_text("saved")
    # turned on again: the keys work again
    _tab_to(page, "[data-help]")
    page.keyboard.press("Enter")
    _tab_to(page, "#pref-shortcuts")
    page.keyboard.press("Space")
    expect(page.locator("#pref-status")).to_have_text("saved")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.wait_for_url("**/annotate/keys/item/2/")


def test_auto_advance_moves_on_after_the_choice(page, annotator_a, annotator_b):
    campaign = _campaign("advance", 3, annotator_a, annotator_b)
    browser_login(page, annotator_a)
    page.goto("/annotate/advance/item/1/")
    page.keyboard.press("?")
    _tab_to(page, "#pref-advance")
    page.keyboard.press("Space")
    expect(page.locator("#pref-status")).to_have_text("saved")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    page.wait_for_url("**/annotate/advance/item/2/")
    page.keyboard.press("3")
    page.wait_for_url("**/annotate/advance/item/3/")
    assert enrollment_of(campaign, annotator_a).phase1_done_count == 2


def test_progress_labels_stay_right_across_the_phase_boundary(page, annotator_a, annotator_b):
    _campaign("bound", 2, annotator_a, annotator_b)
    browser_login(page, annotator_a)
    page.goto("/annotate/bound/item/1/")
    expect(page.locator(".itembar")).to_contain_text("Phase 1 · item 1 of 2")
    expect(page.locator("#save-status")).to_have_text("")
    _answer(page, "2")
    expect(page.locator("#progress-text")).to_have_text("1 of 2 answered in Phase 1")
    page.keyboard.press("j")
    page.wait_for_url("**/annotate/bound/item/2/")
    _answer(page, "2")
    expect(page.locator("#progress-text")).to_have_text("2 of 2 answered in Phase 1")
    assert _bar(page) == "100%"
    # a second tab stays on the Phase 1 page while the first finishes Phase 1
    stale = page.context.new_page()
    stale.goto("/annotate/bound/item/2/")
    page.click("#phase-ready a")
    page.check("#confirm")
    page.click("#finish-phase1")
    page.wait_for_url("**/annotate/bound/item/1/")
    expect(page.locator(".itembar")).to_contain_text("Phase 2 · item 1 of 2")
    expect(page.locator("#save-status")).to_have_text("")  # nothing of Phase 2 is answered yet
    expect(page.locator("#progress-text")).to_have_text("0 of 2 answered in Phase 2")
    assert _bar(page) == "0%"
    # the stale Phase 1 page saves (the same verdict again: no change, so nothing refuses it): its bar
    # keeps Phase 1's progress under its Phase 1 header and it says the work moved on
    stale.keyboard.press("2")
    expect(stale.locator("#phase-moved")).to_be_visible()
    expect(stale.locator(".itembar")).to_contain_text("Phase 1 · item 2 of 2")
    assert _bar(stale) == "100%"
    expect(stale.locator("#progress-text")).to_have_text("2 of 2 answered in Phase 1")
    expect(stale.locator("#phase-ready")).to_be_hidden()
    stale.close()
    # My work: Phase 2 is under way, nothing says "ready"
    page.goto("/annotate/")
    expect(page.locator("td.status")).to_have_text("Phase 2")
