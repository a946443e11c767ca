"""The Lapse demo round with the annotation step in a real browser: build -> outputs -> cascade +
judge (local fake OpenAI-compatible server) -> sample -> two annotators label blind in Chromium ->
adjudicate -> agreement and scorer validation."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from adjudication.agreement import campaign_agreement
from adjudication.selectors import campaign_queue
from adjudication.services import decision_save
from annotation.models import Assignment, Campaign
from annotation.protocols import LAPSE_LABELS
from council.lapse_selectors import scorer_validation
from council.services import council_member_add
from tests.conftest import browser_login

pytestmark = pytest.mark.browser
DEMO_OUTPUTS = Path(settings.BASE_DIR) / "demo" / "lapse" / "outputs.jsonl"


def run(*args):
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def label_for(item, flip):
    label = item.hidden.get("cascade")
    label = label if label in LAPSE_LABELS else "HEDGE"
    if flip:
        return "PROCEED" if label != "PROCEED" else "HEDGE"
    return label


@pytest.mark.django_db(transaction=True)
def test_two_annotators_label_the_sampled_lapse_outputs_blind_in_the_browser(
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

    for annotator in (annotator_a, annotator_b):
        page.context.clear_cookies()
        browser_login(page, annotator)
        assignments = Assignment.objects.filter(enrollment__campaign=campaign, enrollment__annotator=annotator).select_related("item")
        for assignment in assignments.order_by("position"):
            item = assignment.item
            page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
            text = page.locator("body").inner_text()
            assert item.response.splitlines()[0] in text
            html = page.content()
            for secret in (item.hidden["model"], item.hidden["case_id"], item.hidden["gap_date"], "cascade", "judge"):
                assert secret not in html
            flip = annotator == annotator_b and assignment.position == 0
            page.click(f"button.choice[data-value='{label_for(item, flip)}']")
            page.wait_for_selector("#save-status.saved")

    answers = Assignment.objects.filter(enrollment__campaign=campaign, answer__isnull=False).count()
    assert answers == 12
    for entry in campaign_queue(campaign):
        decision_save(campaign=campaign, item=entry.item, action="relabel", new_gold=label_for(entry.item, False), note="demo", user=author)
    agreement = campaign_agreement(campaign)
    assert agreement["gold"]["complete"] and agreement["five_way"]["n"] == 6
    assert agreement["five_way"]["agree"] == 5
    report = scorer_validation(campaign)
    assert report["n_gold"] == 6 and report["cascade"]["labelled"] == 6
