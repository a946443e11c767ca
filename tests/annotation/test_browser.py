"""Real Chromium: an annotator works through a small campaign with the keyboard only."""

import json
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.services import campaign_create
from tests.annotation.conftest import enrollment_of, make_twist_items
from tests.conftest import browser_login, save_screenshot, screenshot_folder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _answer_with_key(page, key):
    page.keyboard.press(key)
    expect(page.locator("#save-status")).to_have_text("saved")


def test_annotator_answers_by_keyboard_resumes_after_reload_finishes_phase1_and_exports(page, annotator_a, annotator_b):
    item_set = make_twist_items(4, name="browser set", conversation_id="conv-b")
    campaign = campaign_create(slug="small", item_set=item_set, annotators=[annotator_a, annotator_b], seed=2)
    browser_login(page, annotator_a)
    page.goto("/annotate/small/")
    expect(page).to_have_url(f"{page.url.split('/annotate/')[0]}/annotate/small/item/1/")
    # three items, keyboard only: a verdict key, then j for the next item
    for position, key in enumerate(("1", "2", "3"), start=1):
        _answer_with_key(page, key)
        page.keyboard.press("j")
        page.wait_for_url(f"**/annotate/small/item/{position + 1}/")
    # '?' opens the conventions, Escape closes them
    page.keyboard.press("?")
    expect(page.locator("#conventions")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#conventions")).to_be_hidden()
    # reload from the campaign entry: resume at the first unanswered item
    page.goto("/annotate/small/")
    assert page.url.endswith("/annotate/small/item/4/")
    page.keyboard.press("p")  # previous: p, as on the adjudication pages
    page.wait_for_url("**/annotate/small/item/3/")
    expect(page.locator('button.choice[data-value="cannot-tell"]')).to_have_class("choice selected")
    page.keyboard.press("j")
    page.wait_for_url("**/annotate/small/item/4/")
    # the last Phase 1 answer (with a note, typed after 'n') locks nothing: the page offers the review
    page.keyboard.press("n")
    page.keyboard.type("typed in the browser")
    page.keyboard.press("Escape")
    _answer_with_key(page, "2")
    expect(page.locator("#phase-ready")).to_be_visible()
    expect(page.locator("#phase-ready")).to_contain_text("review and finish Phase 1")
    assert page.locator('[data-question="q2"], [data-question="q3"]').count() == 0
    assert enrollment_of(campaign, annotator_a).phase1_completed_at is None
    page.click("#phase-ready a")
    page.wait_for_url("**/annotate/small/review/")
    expect(page.locator("#review-answered")).to_contain_text("4 of 4 items answered")
    expect(page.locator('#review-counts [data-choice="cannot-tell"]')).to_have_text("1")
    page.check("#confirm")
    page.click("#finish-phase1")
    page.wait_for_url("**/annotate/small/item/1/")
    expect(page.locator(".itembar")).to_contain_text("Phase 2 · item 1 of 4")
    assert page.locator('[data-question="q2"], [data-question="q3"]').count() >= 1
    expect(page.locator("text=Your Phase 1 verdict (locked)")).to_be_visible()
    # export from "my work"
    page.goto("/annotate/")
    with page.expect_download() as download:
        page.click("a.export")
    data = json.loads(Path(download.value.path()).read_text())
    enrollment = enrollment_of(campaign, annotator_a)
    # not yet submitted: the file names items by their position, never by id
    assert data["annotator"] == "A" and data["keyed_by"] == "position"
    assert [data["answers"][p]["q1"] for p in "1234"] == ["contradicts", "consistent", "cannot-tell", "consistent"]
    assert data["answers"]["4"]["q1note"] == "typed in the browser"
    assert enrollment.phase1_completed_at is not None
    answer = enrollment.assignments.get(position=0).answer
    assert answer.time_on_item_ms > 0


@pytest.mark.realdata
def test_real_twist_item_page_in_the_browser_shows_excerpts_and_hides_gold(page, twist_corpus, annotator_a, annotator_b):
    campaign = campaign_create(slug="twist-v1", name="TWIST Track B v1", item_set=twist_corpus,
                               annotators=[annotator_a, annotator_b], seed=2026)
    assignment = enrollment_of(campaign, annotator_a).assignments.select_related("item").get(position=0)
    browser_login(page, annotator_a)
    page.goto("/annotate/twist-v1/item/1/")
    content = page.content()
    item = assignment.item
    assert item.draft in content or item.draft.replace("'", "&#x27;") in content
    assert item.rationale not in content and item.family not in content
    assert page.locator(".excerpts li").count() == item.evidence.count()
    if screenshot_folder():
        _answer_with_key(page, "2")
        save_screenshot(page, "annotate-item")


# ----- nothing lost ------------------------------------------------------------------------------------

def _one_item_campaign(annotator_a, annotator_b, slug="notes"):
    item_set = make_twist_items(2, name=f"{slug} set", conversation_id=f"conv-{slug}")
    return campaign_create(slug=slug, item_set=item_set, annotators=[annotator_a, annotator_b], seed=3)


def _saved_values(campaign, user, position=0):
    from annotation.models import Answer

    answer = Answer.objects.filter(assignment__enrollment__campaign=campaign, assignment__enrollment__annotator=user,
                                   assignment__position=position).first()
    return answer.values if answer else {}


def _eventually(check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_a_note_typed_and_the_final_choice_pressed_at_once_are_both_saved(page, annotator_a, annotator_b):
    campaign = _one_item_campaign(annotator_a, annotator_b)
    browser_login(page, annotator_a)
    page.goto("/annotate/notes/item/1/")
    page.click('button.choice[data-value="consistent"]')
    expect(page.locator("#save-status")).to_have_text("saved")
    page.goto("/annotate/notes/item/2/")
    page.click("textarea[data-key]")
    page.keyboard.type("the last note, typed fast")
    # at once: the click blurs the note (its save) and gives the final verdict (its save)
    page.click('button.choice[data-value="contradicts"]')
    expect(page.locator("#save-status")).to_have_text("saved")
    assert _saved_values(campaign, annotator_a, 1) == {"q1note": "the last note, typed fast", "q1": "contradicts"}
    assert enrollment_of(campaign, annotator_a).phase1_completed_at is None


def test_a_note_typed_just_before_a_reload_comes_back(page, annotator_a, annotator_b):
    campaign = _one_item_campaign(annotator_a, annotator_b, slug="reload")
    browser_login(page, annotator_a)
    page.goto("/annotate/reload/item/1/")
    page.click("textarea[data-key]")
    page.keyboard.type("typed right before the reload")
    page.reload()  # well inside the 500 ms the note waits for more typing
    expect(page.locator("textarea[data-key]")).to_have_value("typed right before the reload")
    assert _eventually(lambda: _saved_values(campaign, annotator_a) == {"q1note": "typed right before the reload"})
    expect(page.locator("#save-status")).to_have_text("saved")
    # a second reload shows it from the server, and there is one revision of it
    page.reload()
    expect(page.locator("textarea[data-key]")).to_have_value("typed right before the reload")
    from annotation.models import AnswerRevision

    assert AnswerRevision.objects.filter(answer__assignment__enrollment__campaign=campaign).count() == 1


def test_two_tabs_on_one_item_the_stale_tab_is_told_and_shows_what_the_other_saved(page, annotator_a, annotator_b):
    campaign = _one_item_campaign(annotator_a, annotator_b, slug="tabs")
    browser_login(page, annotator_a)
    page.goto("/annotate/tabs/item/1/")
    other = page.context.new_page()
    other.goto("/annotate/tabs/item/1/")
    # tab one writes the note; tab two still shows the empty one
    page.click("textarea[data-key]")
    page.keyboard.type("from tab one")
    page.keyboard.press("Escape")
    expect(page.locator("#save-status")).to_have_text("saved")
    other.click("textarea[data-key]")
    other.keyboard.type("from tab two")
    other.keyboard.press("Escape")
    expect(other.locator("#conflict")).to_be_visible()
    expect(other.locator("#conflict")).to_contain_text("item 1 of 2: this item was changed in another tab")
    expect(other.locator("#conflict")).to_contain_text("from tab two")  # what it could not save is still shown
    expect(other.locator("textarea[data-key]")).to_have_value("from tab one")
    expect(other.locator("#save-status")).to_have_text("not saved: changed elsewhere")
    assert "conv-tabs" not in other.content()
    assert _saved_values(campaign, annotator_a) == {"q1note": "from tab one"}
    # told, the stale tab now writes over the current answer, and the choice made there is kept too
    other.click("textarea[data-key]")
    other.keyboard.type(" + two")
    other.keyboard.press("Escape")
    other.keyboard.press("2")
    expect(other.locator("#save-status")).to_have_text("saved")
    assert _saved_values(campaign, annotator_a) == {"q1note": "from tab one + two", "q1": "consistent"}
    other.close()
