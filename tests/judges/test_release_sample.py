"""The designed sample of judged answers (`manage.py judged_sample`) and the audit over it: on the real runs
the sample drawn from the imported rows is the one the pure design draws from the released files, and the
same seed draws it again; on a small self-written release, the sample's campaign is annotated, adjudicated
and frozen, and its design and the audit reach the agreement page, the key's manifest, its API and its
release."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from adjudication.services import decision_save
from annotation.models import Assignment
from annotation.transfer import answers_load
from items.models import Item, ItemSet
from judges import audit, longmemeval, sampling
from judges.models import JudgedSample
from judges.selectors import judged_sample_audit, run_ladders
from judges.services import (
    answer_external_id,
    judged_release_import,
    judged_sample_create,
    judged_sample_draw,
)
from keys.releases import release_files
from keys.services import key_freeze
from tests.conftest import close_campaign
from tests.judges.conftest import adjudicate
from tests.judges.test_release_import import SET, released

pytestmark = pytest.mark.django_db

TINY = Path(__file__).parent / "files" / "longmemeval_oracle_tiny.json"


def test_the_sample_from_the_imported_runs_is_the_pure_designs_and_the_seed_reproduces_it():
    questions, runs = released()
    judged_release_import(questions=questions, runs=runs, item_set_name=SET)
    item_set = ItemSet.objects.get(name=SET)
    drawn, ids = judged_sample_draw(item_set=item_set, half_width=0.05, seed=42)
    again, _ = judged_sample_draw(item_set=item_set, half_width=0.05, seed=42)
    other, _ = judged_sample_draw(item_set=item_set, half_width=0.05, seed=43)
    release = longmemeval.read_release(questions=questions, runs=runs)
    units = sampling.population([(a.run, a.question_id, a.label) for a in release.answers],
                                {q.question_id: q.question_type for q in release.questions.values()})
    pure = sampling.sample_draw(units=units, half_width=0.05, seed=42)
    assert [u.key for u in drawn.chosen] == [u.key for u in again.chosen] == [u.key for u in pure.chosen]
    assert drawn.design == pure.design and len(ids) == 2830 == drawn.design["population"]
    assert [u.key for u in other.chosen] != [u.key for u in drawn.chosen]
    # Disputed questions are oversampled: their share of the sample is above their share of the answers.
    disputed = lambda chosen: sum(u.disputed for u in chosen) / len(chosen)  # noqa: E731
    assert disputed(drawn.chosen) > disputed(drawn.units)


def test_the_note_budget_runs_form_a_ladder_in_the_order_of_their_budget():
    _, runs = released()
    ladder = run_ladders([longmemeval.run_name(p) for p in runs])["note budget"]
    assert [name.split("_con")[1].split("_")[0] for name in ladder] == ["500", "1500", "2500", "3500", "5500"]


# --- a small release, end to end -----------------------------------------------------------------------

def write_runs(tmp_path: Path) -> list[Path]:
    def run(name, rows):
        path = tmp_path / f"{name}.jsonl.eval-results-judge-x"
        path.write_text("".join(json.dumps({"question_id": q, "hypothesis": h, "autoeval_label": {"model": "judge-x", "label": label}}) + "\n"
                                for q, h, label in rows))
        return path
    return [
        run("tiny_con500_1k_a", [("tiny0001", "sage green", True), ("tiny0002", "three", True), ("tiny0003_abs", "I cannot tell", True)]),
        run("tiny_con1500_2k_b", [("tiny0001", "sage green", False), ("tiny0002", "two", False), ("tiny0003_abs", "On Monday", True)]),
    ]


@pytest.fixture
def sample(tmp_path, annotator_a, annotator_b, author):
    judged_release_import(questions=TINY, runs=write_runs(tmp_path), item_set_name="tiny")
    return judged_sample_create(item_set=ItemSet.objects.get(name="tiny"), slug="tiny-sample",
                                annotators=[annotator_a, annotator_b], half_width=0.3, seed=5, minimum=1, user=author)


# What people say of each answer (run a, run b).
HUMAN = {("a", "tiny0001"): "correct", ("b", "tiny0001"): "correct", ("a", "tiny0002"): "correct",
         ("b", "tiny0002"): "incorrect", ("a", "tiny0003_abs"): "correct", ("b", "tiny0003_abs"): "incorrect"}


def external(run: str, question_id: str) -> str:
    return answer_external_id(question_id, f"tiny_con{'500_1k' if run == 'a' else '1500_2k'}_{run}")


def annotate(campaign, author, *, disagree_on=()):
    chosen = set(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item__external_id", flat=True))
    truth = {external(*k): v for k, v in HUMAN.items() if external(*k) in chosen}
    flip = {"correct": "incorrect", "incorrect": "correct"}
    answers_load(campaign=campaign, annotator="A", answers={i: {"verdict": v} for i, v in truth.items()})
    answers_load(campaign=campaign, annotator="B", answers={
        i: {"verdict": flip[v] if i in disagree_on else v} for i, v in truth.items()})
    close_campaign(campaign, author)
    for item_id in disagree_on:
        item = Item.objects.get(item_set=campaign.item_set, external_id=item_id)
        decision_save(campaign=campaign, item=item, action="relabel", new_gold=truth[item_id], note="rubric", user=author)
    return truth


def test_the_sample_campaign_holds_the_drawn_answers_and_its_design(sample):
    campaign = sample.campaign
    in_campaign = set(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item_id", flat=True))
    drawn, ids = judged_sample_draw(item_set=campaign.item_set, half_width=0.3, seed=5, minimum=1)
    assert in_campaign == {ids[u.key] for u in drawn.chosen}
    assert len(in_campaign) == sample.design["sampled"] < len(sample.population) and sample.design["seed"] == 5
    assert len(sample.population) == 6 and {row[4] for row in sample.population} == {True, False}


def test_the_audit_is_sealed_while_a_disagreement_is_undecided(sample, author):
    campaign = sample.campaign
    chosen = set(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item__external_id", flat=True))
    disputed = sorted(chosen)[:1]
    truth = {external(*k): v for k, v in HUMAN.items() if external(*k) in chosen}
    answers_load(campaign=campaign, annotator="A", answers={i: {"verdict": v} for i, v in truth.items()})
    answers_load(campaign=campaign, annotator="B", answers={
        i: {"verdict": "incorrect" if (i in disputed) == (v == "correct") else "correct"} for i, v in truth.items()})
    close_campaign(campaign, author)
    figures = judged_sample_audit(campaign)
    assert figures["sealed"] and "agreement" not in figures and "runs" not in figures


def test_the_audit_reaches_the_agreement_page_the_key_manifest_its_api_and_release(sample, author, client, tmp_path):
    campaign = sample.campaign
    chosen = sorted(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item__external_id", flat=True).distinct())
    truth = annotate(campaign, author, disagree_on=chosen[:1])
    figures = judged_sample_audit(campaign)
    assert not figures["sealed"]
    overall = figures["agreement"][0]
    judge_says = {external(run, q): label for (run, q), label in {
        ("a", "tiny0001"): True, ("b", "tiny0001"): False, ("a", "tiny0002"): True, ("b", "tiny0002"): False,
        ("a", "tiny0003_abs"): True, ("b", "tiny0003_abs"): True}.items()}
    agreed = sum(judge_says[i] == (v == "correct") for i, v in truth.items())
    lenient = sum(judge_says[i] and v == "incorrect" for i, v in truth.items())
    assert (overall["group"], overall["n"], overall["agreement"]["k"], overall["lenient"]["k"]) == (
        "overall", len(truth), agreed, lenient)
    assert overall["published"] == audit.PUBLISHED_AGREEMENT
    # The same text judged twice ("sage green" in both runs) with different labels: not self-consistent.
    assert figures["self_consistency"]["pairs"][0]["judged_differently"] == ["tiny0001"]
    assert figures["runs"]["ladders"][0]["ladder"] == "note budget"

    client.force_login(author)
    page = client.get(f"/adjudicate/{campaign.slug}/agreement/").content.decode()
    assert 'data-testid="sample-audit"' in page and "judged differently: tiny0001" in page

    key = key_freeze(campaign=campaign, version="LME-TINY-v1", user=author)
    assert key.manifest["sample_design"] == sample.design
    assert key.manifest["judge_audit"]["agreement"][0]["agreement"]["k"] == agreed
    api = APIClient()
    api.force_authenticate(author)
    assert api.get(f"/api/keys/{key.version}/").json()["manifest"]["judge_audit"]["runs"]["runs"]
    out = StringIO()
    call_command("key_export", key.version, "--out", str(tmp_path / "out"), stdout=out)
    exported = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.json"))
    assert '"judge_audit"' in exported and '"sample_design"' in exported
    assert JudgedSample.objects.get(campaign=campaign).design["sampled"] == len(truth)


def test_the_command_draws_a_sample_as_a_dry_run_and_for_real(tmp_path, annotator_a, annotator_b, author):
    judged_release_import(questions=TINY, runs=write_runs(tmp_path), item_set_name="tiny")
    out = StringIO()
    common = ["tiny", "--campaign", "s1", "--annotators", annotator_a.username, annotator_b.username,
              "--half-width", "0.3", "--seed", "9", "--minimum", "1", "--by", author.username]
    call_command("judged_sample", *common, "--dry-run", "--json", stdout=out)
    dry = json.loads(out.getvalue())
    assert dry["dry_run"] and not JudgedSample.objects.exists()
    out = StringIO()
    call_command("judged_sample", *common, "--json", stdout=out)
    assert json.loads(out.getvalue())["design"] == dry["design"] == JudgedSample.objects.get().design


def test_the_datasheet_and_the_key_page_render_the_sample_design_read_back_from_the_frozen_release(
        sample, author, client):
    campaign = sample.campaign
    chosen = sorted(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item__external_id", flat=True).distinct())
    annotate(campaign, author, disagree_on=chosen[:1])
    key = key_freeze(campaign=campaign, version="LME-TINY-v1", user=author)
    files = release_files(key)
    (datasheet,) = [content.decode() for path, content in files.items() if path.endswith("datasheet.md")]
    design = json.loads(next(c for p, c in files.items() if p.endswith("stats.json")))["manifest"]["sample_design"]
    assert "## Sample design" in datasheet and f"seed {design['seed']}" in datasheet
    rows = [line for line in datasheet.splitlines() if line.startswith("| ") and "|---" not in line][1:]
    shown = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    assert shown == [
        [s["question_type"], "yes" if s["abstention"] else "no", "yes" if s["disputed"] else "no", str(s["population"]),
         str(s["sampled"]), "—" if s["weight"] is None else f"{s['weight']:.3f}"]
        for s in design["strata"]
    ]
    client.force_login(author)
    page = client.get(f"/keys/{key.version}/").content.decode()
    assert 'data-testid="sample-strata"' in page
    for s in design["strata"]:
        assert f"<td>{s['stratum']}</td><td>{s['question_type']}</td>" in page
        assert f"<td>{s['population']}</td><td>{s['sampled']}</td>" in page


def test_a_key_without_a_designed_sample_has_no_sample_design_section(labelled, author):
    adjudicate(labelled, author)
    key = key_freeze(campaign=labelled, version="JD-v1", user=author)
    (datasheet,) = [c.decode() for p, c in release_files(key).items() if p.endswith("datasheet.md")]
    assert "Sample design" not in datasheet
