"""A question id longer than the columns it names (the question's context, each answer's item) is refused
naming file, line and field, with nothing written; one of exactly the length imports. The limits are the
models' own (a released answer's id is the question id and the run's digest, so it is the tighter one)."""

import json
from pathlib import Path

import pytest

from items.models import Context, Item
from judges.services import answer_external_id, items_import_judged, judged_release_import
from tests.items.conftest import assert_refused, limit

pytestmark = pytest.mark.django_db


def lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def judged(question_id: str) -> dict:
    return {"question_id": question_id, "question_type": "multi-session", "question": "Which?", "answer": "B",
            "hypothesis": "B", "label": "yes", "judge_model": "gpt-4o"}


def test_a_judged_answers_question_id_over_its_column_is_refused(tmp_path):
    n = min(limit(Context, "external_id"), limit(Item, "external_id"))
    path = lines(tmp_path / "judged.jsonl", [judged("q1"), judged("q" * (n + 1))])
    assert_refused(lambda: items_import_judged(path=path, item_set_name="s"),
            f"judged.jsonl:2: field 'question_id': a text of {n + 1} characters (at most {n})")


def test_a_judged_answers_question_id_of_exactly_its_column_imports(tmp_path):
    n = min(limit(Context, "external_id"), limit(Item, "external_id"))
    items_import_judged(path=lines(tmp_path / "judged.jsonl", [judged("q" * n)]), item_set_name="s")
    assert Item.objects.get().external_id == Context.objects.get().external_id == "q" * n


def release(tmp_path: Path, question_id: str) -> tuple[Path, list[Path]]:
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps([
        {"question_id": "q1", "question_type": "multi-session", "question": "Which?", "answer": "B", "question_date": "d"},
        {"question_id": question_id, "question_type": "multi-session", "question": "Which?", "answer": "B",
         "question_date": "d"},
    ], indent=1), encoding="utf-8")
    run = lines(tmp_path / "r1.jsonl.eval-results-judge", [
        {"question_id": q, "hypothesis": "B", "autoeval_label": {"model": "judge", "label": True}} for q in ("q1", question_id)
    ])
    return questions, [run]


def test_a_released_question_id_too_long_for_its_answers_ids_is_refused_at_the_answers_line(tmp_path):
    n = limit(Item, "external_id")
    room = n - (len(answer_external_id("", "r1")))  # the longest question id an answer's id has room for
    questions, runs = release(tmp_path, "q" * (room + 1))
    assert_refused(lambda: judged_release_import(questions=questions, runs=runs, item_set_name="s"),
            f"r1.jsonl.eval-results-judge:2: field 'question_id': its answer's id (the question id and the run's digest) "
            f"is a text of {n + 1} characters (at most {n})")


def test_a_released_question_id_over_the_context_column_is_refused_at_the_questions_line(tmp_path):
    n = limit(Context, "external_id")
    questions, runs = release(tmp_path, "q" * (n + 1))
    assert_refused(lambda: judged_release_import(questions=questions, runs=runs, item_set_name="s"),
            f"questions.json:9: field 'question_id': a text of {n + 1} characters (at most {n})")


def test_a_released_question_id_with_exactly_room_for_its_answers_ids_imports(tmp_path):
    room = limit(Item, "external_id") - len(answer_external_id("", "r1"))
    questions, runs = release(tmp_path, "q" * room)
    assert judged_release_import(questions=questions, runs=runs, item_set_name="s").created == 2
    assert Context.objects.filter(external_id="q" * room).exists()
