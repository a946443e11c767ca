"""A long judged answer in real Chromium: the annotator reads the question, its date, the gold answer, the
per-type rule and a ~3,800-character hypothesis in a region of its own that scrolls, opens the dated evidence
sessions with a key, and labels it from the keyboard; the page source never holds the run, the judge's
label or model, the question id or a session id."""

import json
from pathlib import Path

import pytest

from annotation.models import Answer, Assignment
from annotation.services import campaign_create
from items.models import Item, ItemSet
from judges.services import answer_external_id, judged_release_import
from protocols import judged
from tests.conftest import browser_login, save_screenshot
from tests.judges.test_browser import mentions

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TINY = Path(__file__).parent / "files" / "longmemeval_oracle_tiny.json"
RUN = "tiny.json_testlog_SECRETRUN_top50context"
MODEL = "gpt-4o-mini-SECRET-2024"
# A reasoning transcript as LongMemEval's reader writes them, as long as the longest released one.
LONG = "\n".join(f"Step {n}: the user mentioned painting the shed on a weekend in May; going through note {n}."
                 for n in range(1, 48)) + "\nAnswer: sage green."


def test_a_long_answer_is_readable_scrollable_and_blind_with_sessions_on_request(page, tmp_path, annotator_a, annotator_b):
    run = tmp_path / f"{RUN}.jsonl.eval-results-gpt-4o-mini"
    run.write_text("".join(json.dumps({"question_id": q, "hypothesis": h, "autoeval_label": {"model": MODEL, "label": label}}) + "\n"
                           for q, h, label in (("tiny0001", LONG, False), ("tiny0002", "Three times.", True))))
    judged_release_import(questions=TINY, runs=[run], item_set_name="tiny")
    assert len(LONG) > 3_700
    campaign = campaign_create(slug="long", item_set=ItemSet.objects.get(name="tiny"), annotators=[annotator_a, annotator_b], seed=1)
    item = Item.objects.get(external_id=answer_external_id("tiny0001", RUN))
    assignment = Assignment.objects.get(enrollment__campaign=campaign, enrollment__annotator=annotator_a, item=item)

    browser_login(page, annotator_a)
    page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
    source = page.content()
    for hidden in (RUN, "SECRETRUN", MODEL, "tiny0001", item.external_id, "answer_tiny_1", "tiny_filler_1"):
        assert hidden not in source, f"{hidden!r} reached the annotator"
    for word in ("judge", "judge_model", "question_id", "autoeval_label", "session_id"):
        assert not mentions(source, word), f"{word!r} is on the annotator's page"
    assert page.locator("[data-testid=question-date]").inner_text() == "2023/05/20 (Sat) 10:15"
    assert page.locator("[data-testid=rule]").inner_text().endswith(judged.rule_for("single-session-user", False))
    answer = page.locator("[data-testid=hypothesis]")
    assert answer.inner_text() == LONG  # whole, line breaks kept
    height, scrolled = answer.evaluate("e => [e.clientHeight, e.scrollHeight]")
    assert scrolled > height  # the answer scrolls in its own region, the question and rule stay in view
    answer.focus()
    page.keyboard.press("PageDown")
    # Reached and scrolled from the keyboard (the browser may scroll smoothly: waited for, not timed).
    page.wait_for_function("() => document.querySelector('[data-testid=hypothesis]').scrollTop > 0")

    sessions = page.locator("[data-testid=evidence-sessions]")
    assert not sessions.evaluate("e => e.open")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("e")
    assert sessions.evaluate("e => e.open")
    assert "Session of 2023/05/02 (Tue) 18:40" in sessions.inner_text()
    assert "sage green" in sessions.inner_text() and "breakfast" not in sessions.inner_text()  # the evidence only
    save_screenshot(page, "judged-long-answer")

    incorrect = page.locator("button.choice[data-value='incorrect']")
    page.keyboard.press(incorrect.get_attribute("data-shortcut"))
    page.wait_for_selector("#save-status.saved")
    assert Answer.objects.get(assignment=assignment).values["verdict"] == "incorrect"
