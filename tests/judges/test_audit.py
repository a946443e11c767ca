"""The judge audit on the agreement page: human–human and human(gold)–judge agreement overall, per
question type and for abstention items; sealed until every disagreement is decided; the judge's latest
decoy calibration beside its figures."""

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.services import campaign_create
from annotation.transfer import answers_load
from council.services import council_member_add
from goldkey.lib import statistics as st
from judges.selectors import judge_audit
from judges.services import judge_calibration_run, judged_import
from tests.judges.conftest import FLIP, FLIPPED, HYPOTHESES, LABELS, QUESTIONS, TRUTH, adjudicate

pytestmark = pytest.mark.django_db

def judge_labels() -> dict[str, str]:
    return {json.loads(line)["question_id"]: {"yes": "correct", "no": "incorrect"}[json.loads(line)["label"]]
            for line in LABELS.read_text().splitlines()}


def test_the_judge_is_sealed_until_every_disagreement_is_decided(labelled):
    audit = judge_audit(labelled)
    assert audit["sealed"] and audit["undecided"] == len(FLIPPED)
    assert all(row["human_judge"] == {} for row in audit["rows"])
    assert audit["judges"] == [{"judge_model": "demo-judge-gpt", "labels": 14, "by_label": {}, "calibration": None}]


def test_human_human_and_gold_judge_figures_per_type_and_for_abstention(labelled, author):
    adjudicate(labelled, author)
    audit = judge_audit(labelled)
    assert not audit["sealed"] and audit["gold_n"] == 14
    rows = {row["group"]: row for row in audit["rows"]}
    assert list(rows) == ["overall", "single-session-user", "single-session-assistant", "single-session-preference",
                          "multi-session", "knowledge-update", "temporal-reasoning", "abstention"]
    judge = judge_labels()
    types = {q["question_id"]: q["question_type"] for q in json.loads(QUESTIONS.read_text())}
    for group, row in rows.items():
        ids = sorted(q for q in TRUTH if group == "overall" or types[q] == group
                     or (group == "abstention" and q.endswith("_abs")))
        assert row["n_items"] == len(ids)
        b = [FLIP[TRUTH[q]] if q in FLIPPED else TRUTH[q] for q in ids]
        hh = st.json_safe(st.kappa_summary([TRUTH[q] for q in ids], b, categories=("correct", "incorrect"), seed=5))
        assert {k: row["human_human"][k] for k in ("n", "agree", "kappa", "ci95")} == {k: hh[k] for k in ("n", "agree", "kappa", "ci95")}
        hj = st.json_safe(st.kappa_summary([TRUTH[q] for q in ids], [judge[q] for q in ids], categories=("correct", "incorrect"), seed=5))
        assert row["human_judge"]["demo-judge-gpt"]["kappa"] == hj["kappa"]
    # By hand: gold 8 correct / 6 incorrect, the judge says yes 11 times and is wrong on 3 incorrect items:
    # p_o = 11/14, p_e = (8*11 + 6*3)/14^2 = 106/196, kappa = (154 - 106)/(196 - 106) = 8/15.
    overall = rows["overall"]["human_judge"]["demo-judge-gpt"]
    assert (overall["n"], overall["agree"]) == (14, 11) and overall["kappa"] == pytest.approx(8 / 15)
    assert (rows["overall"]["human_human"]["agree"], rows["overall"]["human_human"]["n"]) == (12, 14)
    assert rows["abstention"]["human_judge"]["demo-judge-gpt"]["agree"] == 1  # it accepted the invented plate
    assert audit["judges"][0]["by_label"] == {"correct": 11, "incorrect": 3}


def test_the_judges_latest_calibration_is_shown_beside_its_labels(labelled, author, judged_set, fake_llm):
    # The labels name their judge "demo-judge-gpt": a calibration is found by the member's name or its model.
    judge = council_member_add(name="demo-judge-gpt", base_url=fake_llm.base_url, model="fake-judge-lenient-stale")[0]
    judge_calibration_run(item_set=judged_set, member=judge, seed=1)  # an older, failing calibration
    judge = council_member_add(name="demo-judge-gpt", base_url=fake_llm.base_url, model="fake-judge-strict")[0]
    latest = judge_calibration_run(item_set=judged_set, member=judge, seed=1)
    audit = judge_audit(labelled)
    calibration = audit["judges"][0]["calibration"]
    assert calibration["id"] == latest.pk and calibration["admissible"]
    client = Client()
    client.force_login(author)
    page = client.get(f"/adjudicate/{labelled.slug}/agreement/").content.decode()
    assert 'data-testid="judge-audit"' in page
    assert "Decoy calibration (judged-decoys/1" in page and "<strong>admissible</strong>" in page
    assert "stale_as_current 3/3 rejected" in page
    csv = client.get(f"/adjudicate/{labelled.slug}/agreement.csv").content.decode()
    kappa = audit["rows"][0]["human_human"]["kappa"]
    assert f"{labelled.slug},judge_audit.rows.0.human_human.kappa,{kappa!r}" in csv.replace("\r", "")
    assert f"{labelled.slug},judge_audit.judges.0.calibration.admissible,true" in csv.replace("\r", "")


def test_the_audit_reads_a_constant_number_of_queries_whatever_the_items(labelled, annotator_a, annotator_b, tmp_path):
    with CaptureQueriesContext(connection) as small:
        judge_audit(labelled)
    questions = [dict(q, question_id=f"{q['question_id']}-{n}") for n in range(3) for q in json.loads(QUESTIONS.read_text())]
    hypotheses = [{"question_id": f"{json.loads(h)['question_id']}-{n}", "hypothesis": "x"}
                  for n in range(3) for h in HYPOTHESES.read_text().splitlines()]
    labels = [{"question_id": h["question_id"], "label": "yes", "judge_model": "demo-judge-gpt"} for h in hypotheses]
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "h.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hypotheses))
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    judged_import(questions=tmp_path / "q.json", hypotheses=tmp_path / "h.jsonl", labels=tmp_path / "l.jsonl",
                  item_set_name="bigger")
    from items.models import ItemSet

    bigger = campaign_create(slug="big", item_set=ItemSet.objects.get(name="bigger"), annotators=[annotator_a, annotator_b], seed=5)
    answers_load(campaign=bigger, annotator="A", answers={q["question_id"]: {"verdict": "correct"} for q in questions})
    with CaptureQueriesContext(connection) as large:
        audit = judge_audit(bigger)
    assert audit["rows"][0]["n_items"] == 42
    assert len(large.captured_queries) == len(small.captured_queries)
