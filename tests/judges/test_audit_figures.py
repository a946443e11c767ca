"""The judge audit's figures as pure functions (judges/audit.py), on hand-made answers and the released runs."""

import pytest
from sklearn.metrics import cohen_kappa_score

from goldkey.lib import statistics as st
from judges import audit
from judges.longmemeval import read_release
from judges.sampling import Unit, population, sample_draw
from tests.conftest import require_shared_data


def unit(run: str, q: str, question_type: str = "t1", disputed: bool = False) -> Unit:
    return Unit(run, q, question_type, q.endswith("_abs"), disputed)


UNITS = [unit("r", f"q{i}", "t1" if i < 6 else "t2") for i in range(10)] + [unit("r", "q10_abs", "t2")]
#             q0    q1    q2    q3     q4     q5    q6    q7     q8    q9    q10_abs
JUDGE = dict(zip([u.key for u in UNITS], [True, True, True, False, True, True, False, False, True, True, True], strict=True))
HUMAN = dict(zip([u.key for u in UNITS], [True, True, True, False, False, True, False, True, True, True, False], strict=True))


def test_human_human_is_cohens_kappa():
    a = [True, True, False, True, False, False, True, True]
    b = [True, False, False, True, False, True, True, True]
    assert audit.human_human(a, b)["kappa"] == pytest.approx(cohen_kappa_score(a, b))


def test_judge_agreement_counts_both_error_directions_per_group():
    rows = {r["group"]: r for r in audit.judge_agreement(units=UNITS, judge=JUDGE, human=HUMAN)}
    assert list(rows) == ["overall", "t1", "t2", "abstention"]
    overall = rows["overall"]
    # q4 and q10_abs: the judge says correct, people not (lenient); q7: the reverse (strict).
    assert (overall["n"], overall["agreement"]["k"], overall["lenient"]["k"], overall["strict"]["k"]) == (11, 8, 2, 1)
    assert overall["agreement"]["ci95"] == list(st.wilson_interval(8, 11))
    assert (rows["t1"]["lenient"]["k"], rows["t1"]["strict"]["k"]) == (1, 0)
    assert (rows["t2"]["lenient"]["k"], rows["t2"]["strict"]["k"]) == (1, 1)
    assert (rows["abstention"]["n"], rows["abstention"]["lenient"]["k"]) == (1, 1)
    assert overall["published"] == audit.PUBLISHED_AGREEMENT
    assert overall["below_published"] is True  # 8 of 11: its interval ends below 97 %
    # A census (every answer judged by people) weights back to the plain figure.
    assert overall["weighted"]["estimate"] == pytest.approx(8 / 11)


def test_answers_people_did_not_judge_are_left_out_of_the_agreement():
    human = {k: v for k, v in HUMAN.items() if k[1] in {"q0", "q1", "q3"}}
    overall = audit.judge_agreement(units=UNITS, judge=JUDGE, human=human)[0]
    assert (overall["n"], overall["agreement"]["k"], overall["below_published"]) == (3, 3, False)


def test_self_consistency_compares_identical_texts_only():
    answers = [("a", "q1", "same", True), ("b", "q1", "same", False), ("a", "q2", "x", True), ("b", "q2", "y", False),
               ("a", "q3", "same", True), ("b", "q3", "same", True), ("c", "q3", "other", True)]
    result = audit.self_consistency(answers)
    assert result["pairs"] == [{"runs": ["a", "b"], "identical": 2, "judged_differently": ["q1"],
                                "consistency": {"k": 1, "n": 2, "rate": 0.5, "ci95": list(st.wilson_interval(1, 2))}}]
    assert result["overall"]["n"] == 2


def test_run_accuracy_finds_an_order_the_human_key_reverses():
    units = [unit(run, f"q{i}") for run in ("a", "b", "c") for i in range(4)]
    judge = {("a", f"q{i}"): i < 3 for i in range(4)} | {("b", f"q{i}"): i < 2 for i in range(4)} \
        | {("c", f"q{i}"): i < 1 for i in range(4)}
    human = {("a", f"q{i}"): i < 1 for i in range(4)} | {("b", f"q{i}"): i < 2 for i in range(4)} \
        | {("c", f"q{i}"): i < 3 for i in range(4)}
    result = audit.run_accuracy(units=units, judge=judge, human=human, ladders={"budget": ["c", "b", "a"]})
    assert result["order_judge"] == ["a", "b", "c"] and result["order_human"] == ["c", "b", "a"]
    assert result["order_changes"] is True
    assert result["swapped"] == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert result["ladders"] == [{"ladder": "budget", "runs": ["c", "b", "a"],
                                  "rises_under_judge": True, "rises_under_human": False}]
    first = result["runs"][0]
    assert first["judge"] == {"k": 3, "n": 4, "rate": 0.75, "ci95": list(st.wilson_interval(3, 4))}
    assert first["human"]["estimate"] == pytest.approx(0.25)


def test_run_accuracy_keeps_the_order_when_people_agree_with_the_judge():
    units = [unit(run, f"q{i}") for run in ("a", "b") for i in range(4)]
    judge = {("a", f"q{i}"): i < 3 for i in range(4)} | {("b", f"q{i}"): i < 1 for i in range(4)}
    result = audit.run_accuracy(units=units, judge=judge, human=dict(judge))
    assert result["order_changes"] is False and result["swapped"] == []


@pytest.fixture(scope="module")
def release():
    folder = require_shared_data("longmemeval")
    return read_release(questions=folder / "longmemeval_questions.json", runs=sorted(folder.glob("*.eval-results-*")))


def test_released_runs_3_and_4_judge_432_identical_answers_and_caf9ead2_differently(release):
    result = audit.self_consistency((a.run, a.question_id, a.hypothesis, a.label) for a in release.answers)
    (pair,) = [p for p in result["pairs"] if all("longmemeval_s_cleaned" in r for r in p["runs"])]
    assert pair["identical"] == 432
    assert "caf9ead2" in pair["judged_differently"]


def test_released_runs_audited_over_a_designed_sample_with_the_judge_standing_in_for_people(release):
    # With the judge's own labels as the "human" key the audit must find full agreement, no error in
    # either direction and no change of order: the plumbing from sample to figures, on the real runs.
    types = {q: x.question_type for q, x in release.questions.items()}
    judge = {(a.run, a.question_id): a.label for a in release.answers}
    units = population(((r, q, label) for (r, q), label in judge.items()), types)
    sample = sample_draw(units=units, half_width=0.05, seed=42)
    human = {u.key: judge[u.key] for u in sample.chosen}
    rows = audit.judge_agreement(units=units, judge=judge, human=human)
    assert {r["group"] for r in rows} >= {"overall", "abstention", *types.values()}
    assert all(r["lenient"]["k"] == r["strict"]["k"] == 0 and r["agreement"]["k"] == r["n"] for r in rows)
    runs = audit.run_accuracy(units=units, judge=judge, human=human)
    assert len(runs["runs"]) == 9
    assert sum(row["human"]["n"] for row in runs["runs"]) == len(sample.chosen)
    for row in runs["runs"]:  # each run is a part of the design's strata: estimated, never undefined
        assert row["human"]["n"] > 0
        assert row["human"]["ci95"][0] <= row["human"]["estimate"] <= row["human"]["ci95"][1]
