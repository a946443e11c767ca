"""Real Chromium: an annotator works through a small campaign with the keyboard only."""

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.services import campaign_create
from tests.annotation.conftest import enrollment_of, make_twist_items
from tests.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "annotate-item.png"


def _answer_with_key(page, key):
    page.keyboard.press(key)
    expect(page.locator("#save-status")).to_have_text("saved")


def test_annotator_answers_by_keyboard_resumes_after_reload_unlocks_phase2_and_exports(page, annotator_a, annotator_b):
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
    page.keyboard.press("k")
    page.wait_for_url("**/annotate/small/item/3/")
    expect(page.locator('button.choice[data-value="cannot-tell"]')).to_have_class("choice selected")
    page.keyboard.press("j")
    page.wait_for_url("**/annotate/small/item/4/")
    # the last Phase 1 answer (with a note, typed after 'n') completes Phase 1: Phase 2 unlocks
    page.keyboard.press("n")
    page.keyboard.type("typed in the browser")
    page.keyboard.press("Escape")
    _answer_with_key(page, "2")
    expect(page.locator("#unlocked")).to_be_visible()
    assert page.locator('[data-question="q2"], [data-question="q3"]').count() == 0
    page.click("#unlocked a")
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
    order = list(enrollment.assignments.order_by("position").values_list("item__external_id", flat=True))
    assert data["annotator"] == "A"
    assert [data["answers"][i]["q1"] for i in order] == ["contradicts", "consistent", "cannot-tell", "consistent"]
    assert data["answers"][order[3]]["q1note"] == "typed in the browser"
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
    if os.environ.get("GOLDKEY_SCREENSHOTS"):
        _answer_with_key(page, "2")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
