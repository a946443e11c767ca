"""The whole Lapse loop on the demo data, at the service/command level:
build -> outputs -> cascade + judge (the local OpenAI-compatible fake server) -> sample ->
two annotators label blind -> adjudicate -> agreement and scorer validation."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from adjudication.agreement import campaign_agreement
from adjudication.selectors import campaign_queue
from adjudication.services import decision_save
from annotation.models import Assignment, Campaign, Enrollment
from annotation.services import answer_save, campaign_close, enrollment_submit
from council.models import CouncilVote
from council.services import council_member_add
from items.models import Item
from lapse.cascade import BEHAVIOUR
from lapse.selectors import scorer_validation, scoring_summary, task_of
from protocols import blind_view
from protocols.lapse import BINARY, LABELS
from tests.lapse.labels import automatic_of, labels_of

DEMO_OUTPUTS = Path(settings.BASE_DIR) / "demo" / "lapse" / "outputs.jsonl"


def run(*args):
    from io import StringIO

    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def demo_outputs(tmp_path):
    """A slice of the demo outputs (behaviour outputs of several frames and some memory notes), to keep
    the number of judge calls small."""
    lines = DEMO_OUTPUTS.read_text().splitlines()
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(lines[:40] + lines[-8:]) + "\n")
    return path


@pytest.fixture
def scored_outputs(db, fake_llm, demo_outputs):
    run("lapse_build", "--eval-date", "2026-08-25")
    imported = run("lapse_outputs_import", str(demo_outputs))
    council_member_add(name="judge", base_url=fake_llm.base_url, model="fake-ok", timeout_seconds=2.0)
    scored = run("lapse_score", "Lapse outputs", "--judge", "judge")
    return imported, scored


def human_label(item, flip):
    """Stand-in annotators: the cascade's label where it is a behaviour label; `flip` changes a few."""
    label = labels_of(item).get("cascade")
    label = label if label in LABELS else "HEDGE"
    return "TEMPLATE" if flip and label == "HEDGE" else label


@pytest.mark.django_db
def test_demo_round_from_build_to_scorer_validation(scored_outputs, annotator_a, annotator_b, author, tmp_path):
    imported, scored = scored_outputs
    assert imported["created"] == 48
    summary = scored["summary"]
    behaviour = Item.objects.filter(item_set__name="Lapse outputs", content__hidden__arm="behavioral").count()
    assert summary["cascade_scored"] == summary["outputs"] == imported["created"]
    assert summary["judged"] == behaviour
    for item in Item.objects.filter(item_set__name="Lapse outputs", content__hidden__arm="behavioral"):
        labels = labels_of(item)
        side = BINARY.get(labels["cascade"])
        agree = side is not None and side == BINARY.get(labels["judge"])
        automatic, flagged = automatic_of(item)
        assert automatic == (side if agree else None)
        assert flagged is not agree

    manifest = tmp_path / "manifest.json"
    sample = run(
        "lapse_sample", "Lapse outputs", "--size", "24", "--seed", "11", "--campaign", "lapse-demo",
        "--annotators", f"{annotator_a.username},{annotator_b.username}", "--judge", "judge", "--manifest", str(manifest),
    )
    saved = json.loads(manifest.read_text())
    assert sample["n"] == saved["n_total"] == 24
    assert saved["seed"] == 11 and saved["strata"] == ["task", "frame", "form", "gap", "disagreement"]
    assert saved["labels_uncovered"] == []
    campaign = Campaign.objects.get(slug="lapse-demo")
    assert CouncilVote.objects.filter(campaign=campaign).count() == sample["judge_votes"] > 0

    # Blind: what an annotator sees names no condition, model or automatic label.
    for item in Item.objects.filter(item_set=campaign.item_set):
        seen = json.dumps(blind_view(item))
        for secret in (item.hidden["case_id"], item.hidden["model"], item.hidden["source_external_id"], item.hidden["gap_date"]):
            assert secret not in seen

    for n, assignment in enumerate(
        Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment").order_by("id")
    ):
        flip = assignment.enrollment.annotator_id == annotator_b.pk and n % 5 == 0
        answer_save(assignment=assignment, values={"label": human_label(assignment.item, flip)}, user=assignment.enrollment.annotator)

    for enrollment in Enrollment.objects.filter(campaign=campaign):
        enrollment_submit(enrollment=enrollment)
    campaign_close(campaign=campaign, user=author)
    queue = campaign_queue(campaign)
    assert queue  # a few flipped labels: disagreements to decide
    assert scorer_validation(campaign)["sealed"] is True
    for entry in queue:
        decision_save(
            campaign=campaign, item=entry.item, action="relabel", new_gold=human_label(entry.item, False),
            note="adjudicated in the demo round", user=author,
        )

    agreement = campaign_agreement(campaign)
    assert agreement["gold"]["complete"] and agreement["gold"]["n"] == 24
    assert agreement["five_way"]["n"] == 24

    report = scorer_validation(campaign)
    assert report["n_gold"] == 24 and report["judge_source"] == "items"
    assert report["cascade"]["labelled"] == 24
    # Gold here is the cascade's own label (stand-in annotators), so the cascade agrees wherever gold is a label it gives.
    assert report["cascade"]["five_way"]["observed"] == 1.0
    assert report["cascade_judge"]["n"] == 24
    # Per sampling tier: the tier each sample copy was drawn in, as the manifest lists it.
    tiers = {entry["tier"] for entry in saved["items"]}
    assert report["sealed"] is False and set(report["tiers"]) == tiers and report["untiered"] == 0
    per_tier = report["cascade"]["by_tier"]
    assert sum(per_tier[t]["five_way"]["n"] for t in tiers) == report["cascade"]["five_way"]["n"]
    assert all(per_tier[t]["five_way"]["verdict"] in ("pass", "between", "revise", "") for t in tiers)


@pytest.mark.django_db
def test_scoring_without_a_judge_labels_memory_notes_and_flags_every_behaviour_output(demo_outputs):
    run("lapse_build", "--eval-date", "2026-08-25")
    run("lapse_outputs_import", str(demo_outputs))
    scored = run("lapse_score", "Lapse outputs")
    notes = Item.objects.filter(item_set__name="Lapse outputs", content__hidden__arm="e1")
    assert notes.count() == 8 and all(automatic_of(item) == (labels_of(item)["cascade"], False) for item in notes)
    assert scored["summary"]["flagged"] == 40
    assert scoring_summary(item_set_name="Lapse stimuli 2026-08-25")["outputs"] == 0


@pytest.mark.django_db
def test_a_tiered_sample_records_each_items_tier_and_its_manifest(scored_outputs, annotator_a, annotator_b, tmp_path):
    behaviour = [item for item in Item.objects.filter(item_set__name="Lapse outputs") if task_of(item) == BEHAVIOUR]
    forced = {item.external_id for item in behaviour if labels_of(item)["cascade"] != "PROCEED"}
    disagreeing = {
        item.external_id for item in behaviour
        if item.external_id not in forced and labels_of(item)["judge"] != labels_of(item)["cascade"]
    }
    size = len(forced) + min(40, len(disagreeing)) + 6
    manifest = tmp_path / "tiers.json"
    sample = run(
        "lapse_sample", "Lapse outputs", "--size", str(size), "--seed", "20260813", "--campaign", "lapse-tiers",
        "--annotators", f"{annotator_a.username},{annotator_b.username}", "--judge", "judge",
        "--design", "tiers", "--manifest", str(manifest),
    )
    saved = json.loads(manifest.read_text())
    assert sample["n"] == saved["n_total"] == size and saved["seed"] == 20260813
    assert saved["tiers"]["A_forced_label"] == len(forced)
    assert saved["tiers"]["B_disagreement"] == min(40, len(disagreeing)) and saved["tiers"]["D_fill"] == 6
    assert sum(saved["tiers"].values()) == size and saved["tiers"]["C_new_shapes"] == 0
    assert {entry["source"] for entry in saved["items"] if entry["tier"] == "A_forced_label"} == forced
    assert len(saved["sources"]["main"]["sha16"]) == 16
    campaign = Campaign.objects.get(slug="lapse-tiers")
    recorded = {item.external_id: item.hidden["sample_tier"] for item in Item.objects.filter(item_set=campaign.item_set)}
    assert recorded == {entry["gid"]: entry["tier"] for entry in saved["items"]}
