"""LongMemEval's released files imported as they are (`manage.py judged_import SET --questions --eval-results`):
the nine real runs in shared/data, each question stored once and cited by each run's answer, the judge's
label and model kept per answer; the self-written official-shape file for the dated evidence sessions; and
malformed runs refused whole, naming FILE:LINE: field."""

import json
from collections import Counter, defaultdict
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import protocols
from goldkey.lib.jsonio import ImportFailed
from items.models import Context, Item
from judges.services import answer_external_id, judged_release_import
from tests.conftest import require_shared_data

pytestmark = pytest.mark.django_db

TINY = Path(__file__).parent / "files" / "longmemeval_oracle_tiny.json"
FULL_RUNS = ("_20251215-1521", "_20251220-0712", "_20251212-0340", "timefilteredgpt-4o_testlog")  # runs 1-4
BUDGETS = ("con500_1k", "con1500_2k", "con2500_3k", "con3500_4k", "con5500_6k")
# The figures issue #42 and shared/data/README.md state; computed below from the imported rows.
STATED_FULL = [(303, 500), (354, 500), (264, 500), (253, 500)]
STATED_BUDGETS = [(84, 166), (88, 166), (89, 166), (94, 166), (94, 166)]
SET = "longmemeval runs"


def released() -> tuple[Path, list[Path]]:
    folder = require_shared_data("longmemeval")
    return folder / "longmemeval_questions.json", sorted(folder.glob("*.eval-results-*"))


@pytest.fixture
def imported():
    questions, runs = released()
    report = judged_release_import(questions=questions, runs=runs, item_set_name=SET)
    return report


def labels_by_run() -> dict[str, dict[str, bool]]:
    """run -> question id -> the judge's label, read back from the imported items."""
    runs: dict[str, dict[str, bool]] = defaultdict(dict)
    for question_id, hidden in Item.objects.filter(item_set__name=SET).values_list("context__external_id", "content__hidden"):
        runs[hidden["run"]][question_id] = hidden["judge"]["label"] == "yes"
    return runs


def run_of(runs, marker: str) -> str:
    (name,) = [r for r in runs if marker in r]
    return name


def test_nine_runs_import_as_2830_answers_citing_500_questions_stored_once(imported):
    assert imported.created == 4 * 500 + 5 * 166
    assert Item.objects.filter(item_set__name=SET).count() == 2830
    assert Context.objects.filter(item_set__name=SET).count() == 500
    assert not Item.objects.filter(item_set__name=SET, context__isnull=True).exists()
    # The question's values live in its context only, not once per answer.
    assert not Item.objects.filter(item_set__name=SET, content__has_key="question").exists()
    assert Counter(Item.objects.filter(item_set__name=SET).values_list("context_id", flat=True)).most_common(1)[0][1] == 9


def test_each_runs_judged_accuracy_from_the_imported_labels_is_the_one_stated(imported):
    runs = labels_by_run()
    assert len(runs) == 9
    full = [(sum(runs[run_of(runs, m)].values()), len(runs[run_of(runs, m)])) for m in FULL_RUNS]
    budgets = [(sum(runs[run_of(runs, m)].values()), len(runs[run_of(runs, m)])) for m in BUDGETS]
    assert full == STATED_FULL
    assert budgets == STATED_BUDGETS


def test_221_questions_are_labelled_alike_in_all_four_full_runs_of_the_imported_rows(imported):
    runs = labels_by_run()
    full = [runs[run_of(runs, m)] for m in FULL_RUNS]
    assert sum(1 for q in full[0] if len({r[q] for r in full}) == 1) == 221


def test_the_judge_model_is_stored_per_answer_and_integer_answers_exactly(imported):
    hidden = Item.objects.filter(item_set__name=SET).values_list("content__hidden", flat=True)
    assert {h["judge"]["judge_model"] for h in hidden} == {"gpt-4o-mini-2024-07-18"}
    answers = [c["answer"] for c in Context.objects.filter(item_set__name=SET).values_list("content", flat=True)]
    from_file = [q["answer"] for q in json.loads(released()[0].read_text())]
    assert sorted(map(repr, answers)) == sorted(map(repr, from_file))
    assert any(isinstance(a, int) for a in answers)
    abstention = Item.objects.filter(item_set__name=SET, family__endswith="_abs")
    assert {c.endswith("_abs") for c in abstention.values_list("context__external_id", flat=True)} == {True}


def test_importing_the_nine_runs_again_changes_nothing(imported):
    before = list(Item.objects.order_by("id").values_list("id", "external_id", "context_id", "content"))
    questions, runs = released()
    again = judged_release_import(questions=questions, runs=runs, item_set_name=SET)
    assert (again.created, again.unchanged) == (0, 2830)
    assert list(Item.objects.order_by("id").values_list("id", "external_id", "context_id", "content")) == before
    assert Context.objects.count() == 500


# --- the official shape, self-written ------------------------------------------------------------------

def write_run(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def answer(question_id: str, label=True, model="judge-x", hypothesis="an answer") -> dict:
    return {"question_id": question_id, "hypothesis": hypothesis, "autoeval_label": {"model": model, "label": label}}


def two_runs(tmp_path: Path) -> list[Path]:
    return [
        write_run(tmp_path / "tiny.json_testlog_r1.jsonl.eval-results-judge-x",
                  [answer("tiny0001"), answer("tiny0002", label=False, model="judge-y"), answer("tiny0003_abs")]),
        write_run(tmp_path / "tiny.json_testlog_r2.jsonl.eval-results-judge-x",
                  [answer("tiny0001", label=False, hypothesis="blue")]),
    ]


def test_the_official_shape_keeps_dated_evidence_sessions_and_session_ids_once_per_question(tmp_path):
    judged_release_import(questions=TINY, runs=two_runs(tmp_path), item_set_name="tiny")
    shed = Context.objects.get(external_id="tiny0001")
    assert shed.content["evidence_sessions"] == [{"date": "2023/05/02 (Tue) 18:40", "turns": [
        {"role": "user", "content": "I finally painted the shed this weekend, sage green.", "has_answer": True},
        {"role": "assistant", "content": "Sage green sounds calm. Did you use exterior paint?", "has_answer": False},
    ]}]
    assert shed.content["answer_session_ids"] == ["answer_tiny_1"]
    assert shed.content["haystack_session_ids"] == ["answer_tiny_1", "tiny_filler_1"]
    assert shed.content["haystack_dates"] == ["2023/05/02 (Tue) 18:40", "2023/05/09 (Tue) 08:05"]
    assert shed.items.count() == 2
    assert Context.objects.get(external_id="tiny0002").content["answer"] == 3  # an integer, as released
    second = Item.objects.get(external_id=answer_external_id("tiny0001", "tiny.json_testlog_r2"))
    assert second.hidden == {"run": "tiny.json_testlog_r2", "judge": {"label": "no", "judge_model": "judge-x"}}
    assert Item.objects.get(external_id=answer_external_id("tiny0002", "tiny.json_testlog_r1")).hidden["judge"] == {
        "label": "no", "judge_model": "judge-y"}


def test_the_blind_view_shows_the_dated_evidence_sessions_but_no_session_id_run_or_label(tmp_path):
    judged_release_import(questions=TINY, runs=two_runs(tmp_path), item_set_name="tiny")
    item = Item.objects.get(external_id=answer_external_id("tiny0001", "tiny.json_testlog_r2"))
    view = protocols.blind_view(item)
    assert view["question_date"] == "2023/05/20 (Sat) 10:15" and view["hypothesis"] == "blue"
    assert view["evidence_sessions"][0]["date"] == "2023/05/02 (Tue) 18:40"
    shown = json.dumps(view)
    for hidden in ("answer_tiny_1", "tiny_filler_1", "tiny0001", "tiny.json_testlog_r2", "judge-x"):
        assert hidden not in shown


@pytest.mark.parametrize(("rows", "error"), [
    ([answer("tiny0001", label="yes")], "r.jsonl.eval-results-j:1: field 'autoeval_label.label' must be true or false"),
    ([answer("tiny0001"), answer("nope")], "r.jsonl.eval-results-j:2: field 'question_id': 'nope' is not in the question file"),
    ([answer("tiny0001"), answer("tiny0001")], "r.jsonl.eval-results-j:2: field 'question_id': duplicate answer to 'tiny0001'"),
])
def test_a_malformed_run_is_refused_whole_naming_file_line_and_field(tmp_path, rows, error):
    good = two_runs(tmp_path)
    bad = write_run(tmp_path / "r.jsonl.eval-results-j", rows)
    with pytest.raises(ImportFailed) as failed:
        judged_release_import(questions=TINY, runs=[*good, bad], item_set_name="tiny")
    assert any(e.startswith(error) for e in failed.value.errors), failed.value.errors
    assert not Item.objects.exists() and not Context.objects.exists()


def test_a_changed_answer_in_a_second_import_is_refused_and_nothing_written(tmp_path):
    runs = two_runs(tmp_path)
    judged_release_import(questions=TINY, runs=runs, item_set_name="tiny")
    write_run(runs[1], [answer("tiny0001", label=True, hypothesis="blue")])
    with pytest.raises(ImportFailed) as failed:
        judged_release_import(questions=TINY, runs=runs, item_set_name="tiny")
    assert failed.value.errors == [
        "tiny.json_testlog_r2.jsonl.eval-results-judge-x:1: field 'question_id': 'tiny0001' is already in 'tiny' "
        "with different content"]
    assert Item.objects.get(external_id=answer_external_id("tiny0001", "tiny.json_testlog_r2")).hidden["judge"]["label"] == "no"


def test_the_command_imports_several_runs_with_progress_on_stderr_and_json(tmp_path):
    out, err = StringIO(), StringIO()
    call_command("judged_import", "tiny", "--questions", str(TINY), "--eval-results", *map(str, two_runs(tmp_path)),
                 "--json", stdout=out, stderr=err)
    assert json.loads(out.getvalue())["created"] == 4
    assert "read 3 question(s) and 4 answer(s) from 2 run(s)" in err.getvalue()
    assert Item.objects.count() == 4


def test_the_command_dry_run_writes_nothing(tmp_path):
    out = StringIO()
    call_command("judged_import", "tiny", "--questions", str(TINY), "--eval-results", *map(str, two_runs(tmp_path)),
                 "--dry-run", stdout=out, stderr=StringIO())
    assert "would import 4" in out.getvalue() and not Item.objects.exists()


def test_the_command_refuses_labels_beside_eval_results(tmp_path):
    with pytest.raises(CommandError, match="--labels and --run go with --hypotheses"):
        call_command("judged_import", "tiny", "--questions", str(TINY), "--eval-results", *map(str, two_runs(tmp_path)),
                     "--labels", str(TINY), stdout=StringIO(), stderr=StringIO())
