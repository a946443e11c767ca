"""Judged answers in: LongMemEval's question, hypothesis and judge-label shapes, all or nothing, idempotent."""

import json

import pytest

from goldkey.lib.jsonio import ImportFailed
from items.models import Item, ItemSet
from judges.services import items_import_judged, judged_import
from tests.judges.conftest import HYPOTHESES, LABELS, QUESTIONS, SET

pytestmark = pytest.mark.django_db


def _lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_three_files_make_one_item_per_question_with_the_judge_hidden(judged_set):
    items = {i.external_id: i for i in Item.objects.filter(item_set=judged_set)}
    assert len(items) == len(json.loads(QUESTIONS.read_text())) == 14
    ku = items["demo-ku-02"]
    assert (ku.kind, ku.family, ku.question, ku.answer, ku.hypothesis) == (
        "judged", "knowledge-update", "What is my current personal best for the 5k?", "24 minutes",
        "Your personal best is 27 minutes.",
    )
    assert ku.hidden == {"run": "SECRET-RUN-demo", "previous_answer": "27 minutes",
                         "judge": {"label": "yes", "judge_model": "demo-judge-gpt"}}
    assert ku.context.content["question_date"] == "2024/07/03 (Wed) 19:20"
    assert items["demo-ku-04_abs"].family == "knowledge-update_abs"
    assert judged_set.track.benchmark.name == "LongMemEval" and judged_set.license == "mit"


def test_importing_the_same_files_again_changes_nothing(judged_set):
    report = judged_import(questions=QUESTIONS, hypotheses=HYPOTHESES, labels=LABELS, item_set_name=SET,
                           run="SECRET-RUN-demo")
    assert (report.created, report.unchanged) == (0, 14)
    assert Item.objects.filter(item_set=judged_set).count() == 14


def test_a_changed_answer_for_a_known_question_is_refused_naming_file_line_and_field(judged_set, tmp_path):
    records = json.loads(QUESTIONS.read_text())
    records[2]["answer"] = "50 minutes"
    questions = tmp_path / "questions.json"
    text = json.dumps(records, indent=1)
    questions.write_text(text)
    line = text[: text.index('"demo-ssa-01"')].count("\n")  # the line of the record's opening brace
    with pytest.raises(ImportFailed) as failed:
        judged_import(questions=questions, hypotheses=HYPOTHESES, labels=LABELS, item_set_name=SET, run="SECRET-RUN-demo")
    assert failed.value.errors == [
        f"questions.json:{line}: field 'question_id': 'demo-ssa-01' is already in '{SET}' with different content"
    ]


def test_every_problem_of_every_file_is_reported_and_nothing_is_written(db, tmp_path):
    questions = _lines(tmp_path / "q.jsonl", [
        {"question_id": "a", "question_type": "single-session-user", "question": "Q?", "answer": "A"},
        {"question_id": "b", "question_type": "Single Session", "question": "Q?", "answer": 3},
        {"question_id": "c", "question_type": "multi-session", "answer": ["x"]},
        {"question_id": "a", "question_type": "multi-session", "question": "Q?", "answer": "A"},
        {"question_id": "d", "question_type": "multi-session", "question": "Q?", "answer": "A"},
    ])
    hypotheses = _lines(tmp_path / "h.jsonl", [
        {"question_id": "a", "hypothesis": "A"}, {"question_id": "zz", "hypothesis": "A"}, {"question_id": "b"},
    ])
    labels = _lines(tmp_path / "l.jsonl", [{"question_id": "a", "label": "maybe", "judge_model": "m"},
                                          {"question_id": "b", "label": "yes"}])
    with pytest.raises(ImportFailed) as failed:
        judged_import(questions=questions, hypotheses=hypotheses, labels=labels, item_set_name="bad")
    assert failed.value.errors == [
        "q.jsonl:2: field 'question_type': 'Single Session' is not a type name (lower-case letters, digits and '-'; "
        "LongMemEval's: single-session-user, single-session-assistant, single-session-preference, multi-session, "
        "knowledge-update, temporal-reasoning)",
        "q.jsonl:3: missing field 'question'",
        "q.jsonl:3: field 'answer' must be a string, got list",
        "q.jsonl:4: field 'question_id': duplicate 'a' (first at q.jsonl:1)",
        "h.jsonl:2: field 'question_id': 'zz' is not in the question file",
        "h.jsonl:3: missing field 'hypothesis'",
        "l.jsonl:1: field 'label': 'maybe' is not yes or no",
        "l.jsonl:2: missing field 'judge_model'",
        "q.jsonl:5: field 'question_id': no hypothesis for 'd' in h.jsonl",
    ]
    assert not ItemSet.objects.filter(name="bad").exists() and not Item.objects.exists()


def test_a_question_file_that_is_not_json_names_the_line(db, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question_id": "a"}\n{not json\n')
    with pytest.raises(ImportFailed) as failed:
        judged_import(questions=questions, hypotheses=HYPOTHESES, item_set_name="bad")
    assert "q.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)" in failed.value.errors


def test_a_question_array_names_the_line_of_each_bad_record(db, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text('[\n  {"question_id": "a", "question_type": "multi-session", "question": "Q?", "answer": "A"},\n  "x",\n'
                         '  {"question_id": "b", "question_type": "multi-session", "answer": "A"}\n]\n')
    with pytest.raises(ImportFailed) as failed:
        judged_import(questions=questions, hypotheses=HYPOTHESES, item_set_name="bad")
    assert failed.value.errors[:2] == ["q.json:3: expected a JSON object, got str", "q.json:4: missing field 'question'"]


def test_numeric_answers_and_a_benchmarks_own_types_are_accepted(db, tmp_path):
    questions = _lines(tmp_path / "q.jsonl", [
        {"question_id": "n1", "question_type": "counting", "question": "How many?", "answer": 3, "question_date": "x"},
    ])
    hypotheses = _lines(tmp_path / "h.jsonl", [{"question_id": "n1", "hypothesis": "three"}])
    report = judged_import(questions=questions, hypotheses=hypotheses, item_set_name="own types")
    item = Item.objects.get(external_id="n1")
    assert report.created == 1 and (item.family, item.answer, item.hidden) == ("counting", "3", {"run": ""})
    assert item.context.content["question_date"] == "x"


def test_a_dry_run_validates_and_writes_nothing(db):
    report = judged_import(questions=QUESTIONS, hypotheses=HYPOTHESES, labels=LABELS, item_set_name=SET, dry_run=True)
    assert report.created == 14 and report.dry_run
    assert not ItemSet.objects.filter(name=SET).exists()


def test_the_one_file_upload_format_holds_all_three_shapes_per_line(db, tmp_path):
    path = _lines(tmp_path / "judged.jsonl", [
        {"question_id": "u1", "question_type": "temporal-reasoning", "question": "How long?", "answer": "18 days",
         "hypothesis": "19 days", "label": "yes", "judge_model": "gpt-4o-2024-08-06"},
        {"question_id": "u2", "question_type": "multi-session", "question": "Which?", "answer": "B", "hypothesis": "B"},
        {"question_id": "u3", "question_type": "multi-session", "question": "Which?", "answer": "B", "label": "no"},
    ])
    with pytest.raises(ImportFailed) as failed:
        items_import_judged(path=path, item_set_name="upload")
    assert failed.value.errors == ["judged.jsonl:3: missing field 'hypothesis'", "judged.jsonl:3: missing field 'judge_model'"]
    path = _lines(tmp_path / "judged.jsonl", [
        {"question_id": "u1", "question_type": "temporal-reasoning", "question": "How long?", "answer": "18 days",
         "hypothesis": "19 days", "label": "yes", "judge_model": "gpt-4o-2024-08-06"},
    ])
    assert items_import_judged(path=path, item_set_name="upload").created == 1
    assert Item.objects.get(external_id="u1").hidden["judge"] == {"label": "yes", "judge_model": "gpt-4o-2024-08-06"}


def test_the_import_command_prints_its_report_as_json(db, capsys):
    from django.core.management import call_command

    call_command("judged_import", SET, "--questions", str(QUESTIONS), "--hypotheses", str(HYPOTHESES),
                 "--labels", str(LABELS), "--json")
    report = json.loads(capsys.readouterr().out)
    assert (report["created"], report["unchanged"], report["item_set"]) == (14, 0, SET)
