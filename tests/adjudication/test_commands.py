"""The adjudication commands: agreement, decisions_import/export, judge_import, lapse_gold_import, queue_build."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from adjudication.models import Decision
from annotation.models import Campaign, Enrollment
from council.models import CouncilVote

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_agreement_json_has_the_twist_shape(small_campaign):
    result = json.loads(run("agreement", small_campaign.slug, "--json"))
    assert {"n_items", "q1", "queue", "retained"} <= set(result)
    assert {"kappa", "ci95", "observed", "by_gold_type"} <= set(result["q1"])
    assert result["q1"]["left_out"] == 1  # conv-1:v1b5 has one q1 only
    assert result["queue"] == result["queue"] | {"n": 3, "undecided": 3}
    assert result["retained"]["complete"] is False and result["retained"]["bar"] == 0.8


def test_agreement_summary_is_human_readable(small_campaign):
    text = run("agreement", small_campaign.slug)
    assert "q1 all items" in text and "3 queued item(s) still undecided" in text


def test_agreement_of_an_unknown_campaign_fails_cleanly(db):
    with pytest.raises(CommandError, match="no campaign 'nope'"):
        run("agreement", "nope")


def test_decisions_import_dry_run_writes_nothing_and_export_prints_the_file(small_campaign, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"exported": "t", "decisions": {"conv-1:v1c4": {"action": "drop", "note": "n"}}}))
    assert "Would import 1 decisions" in run("decisions_import", small_campaign.slug, str(path), "--dry-run",
                                             "--adjudicator-unknown")
    assert not Decision.objects.exists()
    run("decisions_import", small_campaign.slug, str(path), "--adjudicator-unknown")
    exported = json.loads(run("decisions_export", small_campaign.slug, "--exported", "t"))
    assert exported == {"exported": "t", "decisions": {"conv-1:v1c4": {"action": "drop", "note": "n"}}}


def lapse_folder(tmp_path):
    rows = {"g001": ("PROCEED", "PROCEED"), "g002": ("HEDGE", "TEMPLATE"), "g003": ("PROCEED", "HEDGE"), "g004": ("TEMPLATE", "TEMPLATE")}
    for n, who in ((0, "ann-one"), (1, "ann-two")):
        lines = [json.dumps({"gid": g, "label": pair[n], "notes": "", "annotator": who, "ts": "t"}) for g, pair in rows.items()]
        (tmp_path / f"gold_annotations_annotator{n + 1}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "gold_adjudicated.jsonl").write_text('{"gid": "g002", "label": "HEDGE"}\n{"gid": "g003", "label": "PROCEED"}\n')
    judge = [{"gid": g, "judge": label, "judge_model": "local/j"} for g, label in (("g001", "PROCEED"), ("g002", "HEDGE"), ("g003", "HEDGE"), ("g004", "TEMPLATE"))]
    (tmp_path / "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl").write_text("\n".join(json.dumps(j) for j in judge) + "\n")
    return tmp_path


def test_lapse_gold_import_builds_a_campaign_from_labels_only(tmp_path):
    result = json.loads(run("lapse_gold_import", str(lapse_folder(tmp_path)), "--campaign", "lg", "--json"))
    assert result["items"] == 4 and result["adjudicated"] == 2 and result["judge"]["labels"] == 4
    campaign = Campaign.objects.get(slug="lg")
    assert sorted(Enrollment.objects.filter(campaign=campaign).values_list("pseudonym", flat=True)) == ["ann-one", "ann-two"]
    assert not any(e.annotator.has_usable_password() for e in Enrollment.objects.filter(campaign=campaign))
    assert set(Decision.objects.values_list("item__external_id", "action", "new_gold")) == {("g002", "relabel", "HEDGE"), ("g003", "relabel", "PROCEED")}
    agreement = json.loads(run("agreement", "lg", "--json"))
    # binary: g001 P/P, g002 W/W, g003 P/W, g004 W/W -> 3/4 agree; five-way 2/4
    assert (agreement["binary"]["agree"], agreement["binary"]["n"]) == (3, 4)
    assert (agreement["five_way"]["agree"], agreement["five_way"]["n"]) == (2, 4)
    # gold P, HEDGE, PROCEED, TEMPLATE vs judge P, HEDGE, HEDGE, TEMPLATE -> binary 3/4, five-way 3/4
    assert (agreement["judge_gold"]["binary"]["agree"], agreement["judge_gold"]["binary"]["n"]) == (3, 4)
    assert agreement["gold"]["by_label"] == {"HEDGE": 1, "PROCEED": 2, "TEMPLATE": 1}


def test_lapse_gold_import_refuses_an_existing_campaign_slug(tmp_path, small_campaign):
    with pytest.raises(CommandError, match="already exists"):
        run("lapse_gold_import", str(lapse_folder(tmp_path)), "--campaign", small_campaign.slug)


def test_judge_import_command_reports_the_judge(tmp_path):
    folder = lapse_folder(tmp_path)
    run("lapse_gold_import", str(folder), "--campaign", "lg", "--judge-file", "absent.jsonl")
    assert not CouncilVote.objects.exists()
    text = run("judge_import", "lg", str(folder / "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl"))
    assert text.startswith("Imported 4 judge labels from local/j")


def test_a_decisions_file_error_names_the_line_of_the_item(small_campaign, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"exported": "t", "decisions": {"conv-1:v1c4": {"action": "drop", "note": "n"},
                                                               "nope": {"action": "keep"}}}, indent=1))
    with pytest.raises(CommandError, match=f"d.json:8: nope: no item 'nope' in campaign '{small_campaign.slug}'"):
        run("decisions_import", small_campaign.slug, str(path), "--adjudicator-unknown")


def test_queue_build_stores_the_queue_and_reports_its_size(small_campaign):
    from adjudication.models import QueueItem

    result = json.loads(run("queue_build", small_campaign.slug, "--json"))
    assert (result["items"], result["queued"]) == (5, 3)
    assert QueueItem.objects.filter(campaign=small_campaign, queued=True).count() == 3


def test_queue_build_of_an_unknown_campaign_is_a_clear_error(db):
    with pytest.raises(CommandError, match="nope"):
        run("queue_build", "nope")


def test_agreement_summary_of_three_annotators_names_fleiss_pairs_and_each_annotator_against_gold(
    annotator_a, annotator_b, annotator_c
):
    from adjudication.agreement import campaign_agreement
    from tests.adjudication.conftest import rated_campaign

    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=2)
    raters = campaign_agreement(campaign)["raters"]
    text = run("agreement", campaign.slug)
    assert f"q1 all items: Fleiss' kappa {raters['fleiss']['kappa']:.3f} [" in text
    assert f"3 annotators: Fleiss' kappa {raters['fleiss']['kappa']:.3f} on 36 items" in text
    pair = raters["pairs"][2]
    assert f"pair B-C: kappa {pair['kappa']:.3f} on {pair['n']} shared items" in text
    c = raters["gold"]["by_annotator"][2]
    assert f"C vs gold: {c['agree']}/{c['n']} agree, kappa {c['kappa']:.3f}" in text
    assert json.loads(run("agreement", campaign.slug, "--json"))["raters"]["pairs"][2]["n"] == pair["n"]
