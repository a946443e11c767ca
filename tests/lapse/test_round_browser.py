"""The Lapse demo round end to end, the people's steps in real Chromium: build -> outputs -> cascade +
judge (local fake OpenAI-compatible server) -> sample (real commands) -> two annotators label blind in
the browser -> an author adjudicates every disagreement by keyboard on the side-by-side page -> the
agreement page shows the agreement module's figures and the scorer-validation panel."""

import html as htmllib
import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import expect

from adjudication.agreement import campaign_agreement
from adjudication.models import Decision
from adjudication.templatetags.adjudication_tags import fmt3
from annotation.models import Answer, Assignment, Campaign, Enrollment
from annotation.services import campaign_close, enrollment_submit
from council.services import council_member_add
from lapse.models import Scorer, ScorerLabel
from lapse.selectors import scorer_validation
from protocols.lapse import LABELS
from tests.conftest import browser_login
from tests.lapse.labels import labels_of

pytestmark = pytest.mark.browser
DEMO_OUTPUTS = Path(settings.BASE_DIR) / "demo" / "lapse" / "outputs.jsonl"
# The hidden condition metadata an annotator must never receive (PROTOCOL §9).
HIDDEN_KEYS = ("form", "gap", "frame", "model", "case_id", "gap_date", "carrier")
FLIPPED_POSITIONS = (0, 3)  # annotator B departs from A on her first and fourth items: two disagreements

# Everything on an annotator's item page except the item's fixed label vocabulary: the choice buttons
# and the guideline overlay (which is checked separately to be the same on every item page).
WITHOUT_VOCABULARY = """() => {
  const copy = document.documentElement.cloneNode(true);
  copy.querySelectorAll("button.choice, #conventions").forEach((node) => node.remove());
  return copy.outerHTML;
}"""


def run(*args):
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def label_for(item, flip):
    label = labels_of(item).get("cascade")
    label = label if label in LABELS else "HEDGE"
    if flip:
        return "PROCEED" if label != "PROCEED" else "HEDGE"
    return label


def mentions(source: str, value: str) -> bool:
    """`value` occurs in `source` as a whole token ("prog" not inside "progress", "PROCEED" not inside
    "PROCEED-WITH-CAVEAT")."""
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", source, flags=re.IGNORECASE) is not None


def without_visible_text(source: str, item) -> str:
    """The page source minus what the annotator is meant to read: the key fact, request and response."""
    lines = {line.strip() for text in (item.key_fact, item.request, item.response) for line in text.splitlines()}
    for line in sorted(filter(None, lines), key=len, reverse=True):  # longest first: a line may hold the key fact
        source = source.replace(htmllib.escape(line, quote=False), "")
    return source


def assert_blind(page, item, conventions_seen: set) -> None:
    source = without_visible_text(page.content(), item)
    for key in HIDDEN_KEYS:
        value = str(item.hidden[key])
        assert value and not mentions(source, value), f"hidden {key}={value!r} reached the annotator"
    rule = ScorerLabel.objects.get(item=item, scorer=Scorer.CASCADE).detail["rule"]
    assert rule and not mentions(source, rule), f"the cascade rule {rule!r} reached the annotator"
    for word in ("cascade", "judge", "auto_label", "sample_tier"):
        assert not mentions(source, word)
    rest = without_visible_text(page.evaluate(WITHOUT_VOCABULARY), item)
    labels = labels_of(item)
    assert set(labels) == {"cascade", "judge"}
    for label in labels.values():
        assert not mentions(rest, label), f"the scorers' label {label!r} is on the page outside the label choices"
    choices = page.locator("button.choice")
    assert [choices.nth(n).get_attribute("data-value") for n in range(choices.count())] == list(LABELS)
    assert page.locator("button.choice.selected").count() == 0
    # The CSRF token is masked afresh on every render; everything else must be the same on every item.
    conventions_seen.add(page.locator("#conventions").evaluate(
        "node => { const c = node.cloneNode(true);"
        " c.querySelectorAll('[name=csrfmiddlewaretoken]').forEach(i => i.remove()); return c.outerHTML; }"))


def label_blind(page, campaign, annotator, *, flipped: tuple[int, ...] = ()) -> None:
    page.context.clear_cookies()
    browser_login(page, annotator)
    assert page.goto(f"/adjudicate/{campaign.slug}/").status == 403  # no queue, no gold, no other answers
    conventions_seen: set[str] = set()
    assignments = Assignment.objects.filter(enrollment__campaign=campaign, enrollment__annotator=annotator)
    for assignment in assignments.select_related("item").order_by("position"):
        item = assignment.item
        page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
        assert item.response.splitlines()[0] in page.locator("body").inner_text()
        assert_blind(page, item, conventions_seen)
        page.click(f"button.choice[data-value='{label_for(item, assignment.position in flipped)}']")
        page.wait_for_selector("#save-status.saved")
    assert len(conventions_seen) == 1  # the guideline overlay carries nothing item-specific


def close(campaign, author) -> None:
    """Both annotators submit and the author closes the campaign: decisions are recorded on a closed campaign."""
    for enrollment in Enrollment.objects.filter(campaign=campaign):
        enrollment_submit(enrollment=enrollment)
    campaign_close(campaign=campaign, user=author)


def adjudicate_by_keyboard(page, campaign, author) -> dict[str, str]:
    """Work through the queue from the keyboard; returns external id -> the label set."""
    page.context.clear_cookies()
    browser_login(page, author)
    page.goto(f"/adjudicate/{campaign.slug}/")
    queued = page.locator("#queue tbody tr").count()
    assert page.locator("[data-testid=queue-counts]").inner_text() == f"0 of {queued} queued items decided"
    page.keyboard.press("Enter")  # opens the highlighted (first undecided) row
    page.wait_for_url("**/items/**")
    chosen = {}
    for n in range(queued):
        external_id = page.locator("h1").inner_text()
        item = campaign.item_set.items.get(external_id=external_id)
        sides = [page.locator(f"[data-testid=side-{s}] dd").first.inner_text() for s in (1, 2)]
        assert sorted(sides) == sorted({label_for(item, False), label_for(item, True)})
        assert page.locator("input[name=action][value=keep]").count() == 0  # a Lapse disagreement needs a label
        label = label_for(item, False)
        page.keyboard.press("r")
        assert page.evaluate("document.activeElement.id") == "new_gold"
        page.keyboard.type(label)  # the select's type-ahead
        assert page.input_value("#new_gold") == label
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "note"
        page.keyboard.type(f"the response is {label}")
        page.keyboard.press("Control+Enter")
        chosen[external_id] = label
        if n + 1 < queued:
            expect(page.locator("h1")).not_to_have_text(external_id)
    page.wait_for_url(f"**/adjudicate/{campaign.slug}/")
    assert page.locator("[data-testid=queue-counts]").inner_text() == f"{queued} of {queued} queued items decided"
    return chosen


@pytest.mark.django_db(transaction=True)
def test_a_lapse_round_runs_end_to_end_with_blind_labelling_and_keyboard_adjudication_in_the_browser(
    page, fake_llm, annotator_a, annotator_b, author, tmp_path
):
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("\n".join(DEMO_OUTPUTS.read_text().splitlines()[:24]) + "\n")
    run("lapse_build", "--eval-date", "2026-08-25")
    run("lapse_outputs_import", str(outputs))
    council_member_add(name="judge", base_url=fake_llm.base_url, model="fake-ok", timeout_seconds=2.0)
    run("lapse_score", "Lapse outputs", "--judge", "judge")
    run(
        "lapse_sample", "Lapse outputs", "--size", "6", "--seed", "3", "--campaign", "lapse-demo",
        "--annotators", f"{annotator_a.username},{annotator_b.username}", "--judge", "judge",
        "--manifest", str(tmp_path / "manifest.json"),
    )
    campaign = Campaign.objects.get(slug="lapse-demo")
    label_blind(page, campaign, annotator_a)
    label_blind(page, campaign, annotator_b, flipped=FLIPPED_POSITIONS)
    assert Answer.objects.filter(assignment__enrollment__campaign=campaign).count() == 12
    close(campaign, author)

    chosen = adjudicate_by_keyboard(page, campaign, author)
    assert len(chosen) == len(FLIPPED_POSITIONS)
    decisions = {d.item.external_id: (d.action, d.new_gold, d.decided_by_id) for d in Decision.objects.select_related("item")}
    assert decisions == {external_id: ("relabel", label, author.id) for external_id, label in chosen.items()}

    page.click("a[href$='/agreement/']")
    page.wait_for_url(f"**/adjudicate/{campaign.slug}/agreement/")
    agreement = campaign_agreement(campaign)
    assert agreement["gold"]["complete"] and agreement["gold"]["n"] == 6
    assert agreement["five_way"]["n"] == 6 and agreement["five_way"]["agree"] == 6 - len(FLIPPED_POSITIONS)
    shown = lambda testid: page.locator(f"[data-testid={testid}]").inner_text().strip()  # noqa: E731
    for figure in ("five_way", "binary"):
        testid = figure.replace("_", "-")
        assert shown(f"{testid}-kappa") == fmt3(agreement[figure]["kappa"])
        assert shown(f"{testid}-agree").startswith(f"{agreement[figure]['agree']} (")
        assert shown(f"{testid}-n").split()[0] == str(agreement[figure]["n"])
    assert agreement["five_way"]["kappa"] is not None and agreement["binary"]["n"] > 0
    assert shown("judge-five-way-kappa") == fmt3(agreement["judge_gold"]["five_way"]["kappa"])
    assert shown("judge-binary-kappa") == fmt3(agreement["judge_gold"]["binary"]["kappa"])
    assert shown("gold").startswith("Gold (the label both annotators gave, else the adjudicated label): 6 items ·")

    assert page.locator("[data-testid=scorer-validation]").is_visible()
    report = scorer_validation(campaign)
    assert report["n_gold"] == 6 and report["cascade"]["labelled"] == 6 and report["judge"]["labelled"] == 6
    for name, row in (("rule-cascade", report["cascade"]), ("llm-judge", report["judge"])):
        assert shown(f"{name}-binary-kappa") == fmt3(row["binary"]["kappa"])
        assert shown(f"{name}-five-way-kappa") == fmt3(row["five_way"]["kappa"])
