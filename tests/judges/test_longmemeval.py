"""LongMemEval's released files read as they are (judges/longmemeval.py): the real runs in shared/data,
a small self-written question file in the official oracle shape, and malformed files refused whole."""

import json
from collections import Counter
from pathlib import Path

import pytest

from goldkey.lib.jsonio import ImportFailed
from judges import longmemeval as lme
from tests.conftest import require_shared_data

TINY = Path(__file__).parent / "files" / "longmemeval_oracle_tiny.json"
FULL_RUNS = ("_20251215-1521", "_20251220-0712", "_20251212-0340", "timefilteredgpt-4o_testlog")  # runs 1-4
BUDGETS = ("con500_1k", "con1500_2k", "con2500_3k", "con3500_4k", "con5500_6k")


@pytest.fixture(scope="module")
def release() -> lme.Release:
    folder = require_shared_data("longmemeval")
    return lme.read_release(questions=folder / "longmemeval_questions.json",
                            runs=sorted(folder.glob("*.eval-results-*")))


def run_of(release: lme.Release, marker: str) -> str:
    (name,) = [r for r in release.runs if marker in r]
    return name


def labels(release: lme.Release, run: str) -> dict[str, bool]:
    return {a.question_id: a.label for a in release.answers if a.run == run}


def test_released_files_give_500_questions_once_and_2830_answers(release):
    assert len(release.questions) == 500
    assert len(release.answers) == 4 * 500 + 5 * 166
    assert len(release.runs) == 9
    assert all(q.sessions is None for q in release.questions.values())  # the question-only subset


def test_each_runs_judged_accuracy_is_the_one_the_data_readme_states(release):
    full = [(sum(labels(release, run_of(release, m)).values()), len(labels(release, run_of(release, m))))
            for m in FULL_RUNS]
    budgets = [(sum(labels(release, run_of(release, m)).values()), len(labels(release, run_of(release, m))))
               for m in BUDGETS]
    assert full == [(303, 500), (354, 500), (264, 500), (253, 500)]
    assert budgets == [(84, 166), (88, 166), (89, 166), (94, 166), (94, 166)]


def test_221_questions_are_labelled_alike_in_all_four_full_runs(release):
    runs = [labels(release, run_of(release, m)) for m in FULL_RUNS]
    assert all(set(r) == set(runs[0]) for r in runs)
    alike = [q for q in runs[0] if len({r[q] for r in runs}) == 1]
    assert len(alike) == 221
    assert Counter(runs[0][q] for q in alike) == {True: 158, False: 63}


def test_87_of_166_questions_are_labelled_alike_in_the_five_budget_runs(release):
    runs = [labels(release, run_of(release, m)) for m in BUDGETS]
    assert all(len(r) == 166 and set(r) == set(runs[0]) for r in runs)
    assert sum(1 for q in runs[0] if len({r[q] for r in runs}) == 1) == 87


def test_runs_3_and_4_share_432_identical_answers_and_caf9ead2_is_judged_both_ways(release):
    third, fourth = ({a.question_id: a for a in release.answers if a.run == run_of(release, m)} for m in FULL_RUNS[2:])
    same = [q for q in third if third[q].hypothesis == fourth[q].hypothesis]
    assert len(same) == 432
    assert third["caf9ead2"].hypothesis == fourth["caf9ead2"].hypothesis
    assert third["caf9ead2"].label != fourth["caf9ead2"].label


def test_question_types_abstention_ids_and_integer_answers(release):
    questions = release.questions.values()
    assert Counter(q.question_type for q in questions) == {
        "single-session-user": 70, "single-session-assistant": 56, "single-session-preference": 30,
        "multi-session": 133, "knowledge-update": 78, "temporal-reasoning": 133,
    }
    assert sum(q.abstention for q in questions) == 30
    integers = [q for q in questions if isinstance(q.answer, int)]
    assert len(integers) == 32
    assert not any(isinstance(q.answer, bool) for q in questions)


def test_judge_model_is_recorded_per_answer_and_run_name_is_the_file_name_up_to_jsonl(release):
    assert {a.judge_model for a in release.answers} == {"gpt-4o-mini-2024-07-18"}
    assert all(not r.endswith(".jsonl") and ".eval-results" not in r for r in release.runs)
    assert lme.run_name(Path("x/longmemeval_oracle.json_testlog_a.jsonl.eval-results-gpt-4o-mini")) == \
        "longmemeval_oracle.json_testlog_a"


# --- the official shape, self-written -------------------------------------------------------------

def write_run(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def answer(question_id: str, label=True, model="judge-x", hypothesis="an answer") -> dict:
    return {"question_id": question_id, "hypothesis": hypothesis, "autoeval_label": {"model": model, "label": label}}


def test_official_shape_keeps_dated_sessions_turns_and_evidence(tmp_path):
    run = write_run(tmp_path / "tiny.json_testlog_r1.jsonl.eval-results-judge-x",
                    [answer("tiny0001"), answer("tiny0002", label=False, model="judge-y"), answer("tiny0003_abs")])
    release = lme.read_release(questions=TINY, runs=[run])
    first = release.questions["tiny0001"]
    assert [s.session_id for s in first.sessions] == ["answer_tiny_1", "tiny_filler_1"]
    assert [s.date for s in first.sessions] == ["2023/05/02 (Tue) 18:40", "2023/05/09 (Tue) 08:05"]
    assert [s.evidence for s in first.sessions] == [True, False]
    assert first.sessions[0].turns[0] == lme.Turn("user", "I finally painted the shed this weekend, sage green.", True)
    assert first.answer_session_ids == ("answer_tiny_1",)
    assert release.questions["tiny0002"].answer == 3
    assert release.questions["tiny0003_abs"].abstention and not first.abstention
    assert [(a.run, a.question_id, a.label, a.judge_model) for a in release.answers] == [
        ("tiny.json_testlog_r1", "tiny0001", True, "judge-x"),
        ("tiny.json_testlog_r1", "tiny0002", False, "judge-y"),
        ("tiny.json_testlog_r1", "tiny0003_abs", True, "judge-x"),
    ]


def refused(tmp_path, questions: Path, *runs: list[dict]) -> list[str]:
    paths = [write_run(tmp_path / f"r{i}.jsonl.eval-results-j", rows) for i, rows in enumerate(runs)]
    with pytest.raises(ImportFailed) as caught:
        lme.read_release(questions=questions, runs=paths)
    return caught.value.errors


def test_a_label_that_is_not_a_boolean_is_refused_naming_file_line_and_field(tmp_path):
    errors = refused(tmp_path, TINY, [answer("tiny0001"), answer("tiny0002", label="yes")])
    assert errors == ["r0.jsonl.eval-results-j:2: field 'autoeval_label.label' must be true or false, got 'yes'"]


def test_unknown_question_duplicate_answer_and_missing_fields_are_all_named_at_once(tmp_path):
    errors = refused(tmp_path, TINY,
                     [answer("tiny0001"), answer("nope"), answer("tiny0001"), {"question_id": "tiny0002"}])
    assert errors == [
        "r0.jsonl.eval-results-j:2: field 'question_id': 'nope' is not in the question file",
        "r0.jsonl.eval-results-j:3: field 'question_id': duplicate answer to 'tiny0001' "
        "(first at r0.jsonl.eval-results-j:1)",
        "r0.jsonl.eval-results-j:4: missing field 'hypothesis'",
        "r0.jsonl.eval-results-j:4: missing field 'autoeval_label'",
    ]


def test_the_same_question_answered_by_two_runs_is_not_a_duplicate(tmp_path):
    first = write_run(tmp_path / "a.jsonl.eval-results-j", [answer("tiny0001")])
    second = write_run(tmp_path / "b.jsonl.eval-results-j", [answer("tiny0001", label=False)])
    release = lme.read_release(questions=TINY, runs=[first, second])
    assert len(release.questions) == 3
    assert [(a.run, a.label) for a in release.answers] == [("a", True), ("b", False)]


def test_two_files_of_the_same_run_name_are_refused(tmp_path):
    (tmp_path / "x").mkdir()
    first = write_run(tmp_path / "a.jsonl.eval-results-j", [answer("tiny0001")])
    second = write_run(tmp_path / "x" / "a.jsonl.eval-results-k", [answer("tiny0002")])
    with pytest.raises(ImportFailed) as caught:
        lme.read_release(questions=TINY, runs=[first, second])
    assert caught.value.errors == ["a.jsonl.eval-results-k:1: run 'a' is already read from a.jsonl.eval-results-j"]


def test_question_file_problems_name_the_line_of_the_record(tmp_path):
    records = json.loads(TINY.read_text())
    records[1]["answer"] = 2.5
    records[2]["haystack_dates"] = records[2]["haystack_dates"] * 2
    del records[0]["haystack_sessions"]
    records.append(dict(records[1], question_id="tiny0004", answer=True))
    path = tmp_path / "longmemeval_oracle.json"
    path.write_text(json.dumps(records, indent=1))
    text = path.read_text().splitlines()
    line_of = [i + 1 for i, t in enumerate(text) if t == " {"]
    errors = refused(tmp_path, path, [answer("tiny0001")])
    assert errors == [
        f"longmemeval_oracle.json:{line_of[0]}: missing field(s) haystack_sessions "
        "(a history needs ids, dates and sessions together)",
        f"longmemeval_oracle.json:{line_of[1]}: field 'answer' must be a string, got float",
        f"longmemeval_oracle.json:{line_of[2]}: fields 'haystack_session_ids', 'haystack_dates', "
        "'haystack_sessions' must have the same length, got 1, 2, 1",
        f"longmemeval_oracle.json:{line_of[3]}: field 'answer' must be a string, got bool",
    ]


def test_a_duplicate_question_is_refused(tmp_path):
    records = json.loads(TINY.read_text())
    path = tmp_path / "q.json"
    path.write_text(json.dumps(records + records[:1]))
    errors = refused(tmp_path, path, [answer("tiny0001")])
    assert errors == ["q.json:1: field 'question_id': duplicate 'tiny0001' (first at q.json:1)"]


def test_a_question_type_that_is_not_a_type_name_is_refused(tmp_path):
    records = json.loads(TINY.read_text())
    records[0]["question_type"] = "Single Session"
    path = tmp_path / "q.json"
    path.write_text(json.dumps(records))
    errors = refused(tmp_path, path, [answer("tiny0002")])
    assert len(errors) == 1 and errors[0].startswith("q.json:1: field 'question_type': 'Single Session' is not a type name")
