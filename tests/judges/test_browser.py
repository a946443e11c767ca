"""The judge audit end to end in real Chromium: two annotators label the demo's judged answers blind (no
judge verdict, judge model, run or question_id in their page source), the author adjudicates the two
disagreements from the keyboard, and the agreement page shows human–human and human–judge figures per
question type, with the judge's decoy calibration beside them."""

import re

import pytest
from playwright.sync_api import expect

from adjudication.models import Decision
from adjudication.templatetags.adjudication_tags import fmt3
from annotation.models import Answer, Assignment, Enrollment
from annotation.services import campaign_close, campaign_create, enrollment_submit
from council.services import council_member_add
from judges.selectors import judge_audit
from judges.services import judge_calibration_run
from protocols import judged
from tests.conftest import browser_login, save_screenshot
from tests.judges.conftest import FLIP, FLIPPED, TRUTH

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The page minus what an annotator is meant to read as fixed vocabulary: the verdict buttons, the
# rubric (LongMemEval's, which says "answer yes … otherwise no") and the guideline overlay.
WITHOUT_VOCABULARY = """() => {
  const copy = document.documentElement.cloneNode(true);
  copy.querySelectorAll("button.choice, #conventions, [data-testid=rubric]").forEach((node) => node.remove());
  return copy.outerHTML;
}"""


def mentions(source: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", source, flags=re.IGNORECASE) is not None


def assert_blind(page, item) -> None:
    source = page.content()
    for hidden in (item.external_id, item.hidden["judge"]["judge_model"], item.hidden["run"]):
        assert hidden and hidden not in source, f"{hidden!r} reached the annotator"
    for word in ("judge", "judge_model", "question_id", "question_date"):
        assert not mentions(source, word), f"{word!r} is on the annotator's page"
    rest = page.evaluate(WITHOUT_VOCABULARY)
    for verdict in ("yes", "no"):  # the judge's label, in the words its file uses
        assert not mentions(rest, verdict), f"{verdict!r} is on the page outside the rubric and the choices"
    question_type, abstention = judged.split_family(item.family)
    assert page.locator("[data-testid=rubric]").inner_text() == judged.rubric_for(question_type, abstention)
    assert page.locator("[data-testid=question]").inner_text() == item.question
    assert page.locator("[data-testid=gold-answer]").inner_text() == item.answer
    assert page.locator("[data-testid=hypothesis]").inner_text() == item.hypothesis
    assert page.locator("[data-testid=question-date]").inner_text() == item.context.content["question_date"]
    assert page.locator("button.choice.selected").count() == 0  # nothing of the other annotator's


def label_blind(page, campaign, annotator, *, flipped=()) -> None:
    page.context.clear_cookies()
    browser_login(page, annotator)
    assert page.goto(f"/adjudicate/{campaign.slug}/").status == 403
    assignments = Assignment.objects.filter(enrollment__campaign=campaign, enrollment__annotator=annotator)
    for assignment in assignments.select_related("item").order_by("position"):
        item = assignment.item
        page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
        assert_blind(page, item)
        verdict = TRUTH[item.external_id]
        page.click(f"button.choice[data-value='{FLIP[verdict] if item.external_id in flipped else verdict}']")
        page.wait_for_selector("#save-status.saved")


def adjudicate_by_keyboard(page, campaign, author) -> dict[str, str]:
    page.context.clear_cookies()
    browser_login(page, author)
    page.goto(f"/adjudicate/{campaign.slug}/")
    queued = page.locator("#queue tbody tr").count()
    assert queued == len(FLIPPED)
    page.keyboard.press("Enter")
    page.wait_for_url("**/items/**")
    chosen = {}
    for n in range(queued):
        external_id = page.locator("h1").inner_text()
        # The judge validates against this decision: whoever makes it must not see what the judge said.
        assert "demo-judge-gpt" not in page.content()
        verdict = TRUTH[external_id]
        page.keyboard.press("r")
        assert page.evaluate("document.activeElement.id") == "new_gold"
        page.keyboard.type(verdict)
        assert page.input_value("#new_gold") == verdict
        page.keyboard.press("Tab")
        page.keyboard.type(f"by the rubric the answer is {verdict}")
        page.keyboard.press("Control+Enter")
        chosen[external_id] = verdict
        if n + 1 < queued:
            expect(page.locator("h1")).not_to_have_text(external_id)
    page.wait_for_url(f"**/adjudicate/{campaign.slug}/")
    assert page.locator("[data-testid=queue-counts]").inner_text() == f"{queued} of {queued} queued items decided"
    return chosen


def test_a_judge_audit_is_labelled_blind_adjudicated_and_reported_per_type_in_the_browser(
    page, judged_set, fake_llm, annotator_a, annotator_b, author
):
    judge = council_member_add(name="demo-judge-gpt", base_url=fake_llm.base_url, model="fake-judge-strict")[0]
    calibration = judge_calibration_run(item_set=judged_set, member=judge, seed=1)
    campaign = campaign_create(slug="judge-audit", item_set=judged_set, annotators=[annotator_a, annotator_b], seed=9)
    label_blind(page, campaign, annotator_a)
    label_blind(page, campaign, annotator_b, flipped=FLIPPED)
    assert Answer.objects.filter(assignment__enrollment__campaign=campaign).count() == 28
    for enrollment in Enrollment.objects.filter(campaign=campaign):
        enrollment_submit(enrollment=enrollment)
    campaign_close(campaign=campaign, user=author)

    chosen = adjudicate_by_keyboard(page, campaign, author)
    decisions = {d.item.external_id: (d.action, d.new_gold, d.decided_by_id) for d in Decision.objects.select_related("item")}
    assert decisions == {q: ("relabel", v, author.id) for q, v in chosen.items()} and set(chosen) == set(FLIPPED)

    page.click("a[href$='/agreement/']")
    page.wait_for_url(f"**/adjudicate/{campaign.slug}/agreement/")
    audit = judge_audit(campaign)
    assert not audit["sealed"] and audit["gold_n"] == 14
    shown = lambda selector: page.locator(selector).inner_text().strip()  # noqa: E731
    page.locator("[data-testid=judge-model]").first.scroll_into_view_if_needed()
    save_screenshot(page, "judge-audit")
    assert shown("[data-testid=judge-model]") == "demo-judge-gpt"
    assert "admissible" in shown("[data-testid=judge-calibration]") and calibration.admissible
    groups = [row["group"] for row in audit["rows"]]
    assert groups == ["overall", *judged.TYPES, "abstention"]
    for row in audit["rows"]:
        line = f"[data-testid=audit-{row['group']}]"
        hh, hj = row["human_human"], row["human_judge"]["demo-judge-gpt"]
        assert shown(f"{line} [data-testid=hh-kappa]").startswith(fmt3(hh["kappa"]))
        assert shown(f"{line} [data-testid=hh-agree]") == f"{hh['agree']}/{hh['n']}"
        assert shown(f"{line} [data-testid=hj-kappa]").startswith(fmt3(hj["kappa"]))
        assert shown(f"{line} [data-testid=hj-agree]") == f"{hj['agree']}/{hj['n']}"
    overall = audit["rows"][0]
    assert (overall["human_human"]["agree"], overall["human_judge"]["demo-judge-gpt"]["agree"]) == (12, 11)
    assert shown("[data-testid=five-way-agree]").startswith("12 (")
