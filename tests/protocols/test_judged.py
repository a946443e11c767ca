"""The judged-answer spec (PROTOCOL §12): what an annotator sees, the rubric per type as the judge gets it,
the queue rules, and the decoy templates (TWIST Appendix C)."""

from types import SimpleNamespace

import pytest

import protocols
from protocols import judged
from protocols.base import DISCUSS, MISSING_ANSWERS

SPEC = protocols.get("judged")


def item(family="knowledge-update", **fields):
    content = {"question": "Where do I work now?", "answer": "at Northwind Labs", "hypothesis": "At Harbor Analytics.",
               "hidden": {"judge": {"label": "yes", "judge_model": "gpt-4o-2024-08-06"}, "run": "sys-1"}}
    return SimpleNamespace(kind="judged", external_id="q-7_abs", family=family, content={**content, **fields})


def test_the_annotator_sees_question_gold_hypothesis_type_and_rubric_only():
    view = protocols.blind_view(item())
    assert set(view) == {"question", "answer", "question_date", "hypothesis", "evidence_sessions", "family", "question_type",
                         "abstention", "rule", "rubric", "gold_name"}
    assert "q-7_abs" not in str(view) and "gpt-4o" not in str(view) and "sys-1" not in str(view)
    assert (view["question_type"], view["abstention"]) == ("knowledge-update", False)
    assert "previous information along with an updated answer" in view["rubric"]
    assert view["rule"] == judged.RULES["knowledge-update"]


def test_the_per_type_rule_is_protocols_sentence_and_abstention_its_own():
    assert "off-by-one" in judged.rule_for("temporal-reasoning", False).lower()
    assert judged.rule_for("temporal-reasoning", True) == judged.ABSTENTION_RULE
    assert judged.rule_for("multi-session", False) == judged.DEFAULT_RULE


def test_each_type_gets_longmemevals_rubric_and_abstention_items_the_unanswerable_one():
    assert "do not penalize off-by-one errors for the number of days" in judged.rubric_for("temporal-reasoning", False)
    assert "recalls and utilizes the user's personal information correctly" in judged.rubric_for("single-session-preference", False)
    assert judged.rubric_for("multi-session", False) == judged.rubric_for("single-session-user", False)
    assert judged.rubric_for("temporal-reasoning", True) == judged.ABSTENTION_RUBRIC
    assert judged.rubric_for("a-benchmarks-own-type", False) == judged.DEFAULT_RUBRIC
    view = protocols.blind_view(item(family="single-session-user_abs"))
    assert (view["question_type"], view["abstention"], view["gold_name"]) == ("single-session-user", True, "Explanation")


def test_the_judge_prompt_is_the_rubric_then_the_three_texts_and_the_question_asked():
    prompt = judged.judge_prompt(question_type="single-session-preference", abstention=False, question="Q?",
                                 answer="a rubric", response="R")
    assert prompt == (judged.RUBRICS["single-session-preference"] + "\n\nQuestion: Q?\n\nRubric: a rubric\n\n"
                      "Model Response: R\n\nIs the model response correct? Answer yes or no only.")


@pytest.mark.parametrize("reply, verdict", [("yes", "correct"), ("Yes.", "correct"), (" NO", "incorrect"),
                                            ("no, it is stale", "incorrect"), ("nope", ""), ("I think yes", "")])
def test_a_judges_reply_is_read_as_its_first_word(reply, verdict):
    assert judged.judge_verdict(reply) == verdict


def test_differing_or_missing_verdicts_queue_an_item_for_a_decision():
    assert SPEC.queue_reasons("", [{"verdict": "correct"}, {"verdict": "correct"}]) == []
    assert SPEC.queue_reasons("", [{"verdict": "correct"}, {"verdict": "incorrect"}]) == [judged.VERDICT_DISAGREEMENT]
    assert SPEC.queue_reasons("", [{"verdict": "correct"}, {}]) == [MISSING_ANSWERS]
    assert SPEC.suggestion("", [{"verdict": "correct"}, {}], [MISSING_ANSWERS])[0] == DISCUSS
    assert SPEC.detectors_sealed(1) and not SPEC.detectors_sealed(0)


def source(**fields):
    values = dict(question_id="ku-1", question_type="knowledge-update", abstention=False,
                  question="Where do I work now?", answer="at Northwind Labs", previous_answer="at Harbor Analytics")
    return judged.DecoySource(**{**values, **fields})


def test_a_history_aware_item_gives_gold_and_one_decoy_per_class_from_its_own_parts():
    made, missing = judged.decoys_for(source())
    assert missing == []
    by_class = {d.cls: d for d in made}
    assert list(by_class) == [judged.GOLD, judged.STALE, judged.PERTURBED, judged.NON_ANSWER, judged.UNORDERED]
    assert by_class[judged.GOLD].response == "From what you've told me, the answer is at Northwind Labs."
    assert by_class[judged.STALE].response == "Going by our latest conversations, it's at Harbor Analytics."
    assert (by_class[judged.PERTURBED].response, by_class[judged.PERTURBED].slot) == (
        "From what you've told me, the answer is at Riverside Labs.", "entity")
    assert by_class[judged.NON_ANSWER].response.startswith("That's a good question: where do I work now?")
    assert by_class[judged.UNORDERED].response == "You've mentioned both at Harbor Analytics and at Northwind Labs."
    assert {d.version for d in made} == {judged.DECOY_VERSION}


@pytest.mark.parametrize("answer, perturbed, slot", [
    ("in June", "in October", "date"),
    ("last Tuesday", "last Friday", "date"),
    ("18 days", "27 days", "number"),  # never off by one: the temporal rubric forgives that
    ("2 concerts", "5 concerts", "number"),
    ("it went up", "it went down", "direction"),
    ("she moved to Lisbon", "she moved to Riverside", "entity"),
    ("the pottery class", "", ""),
])
def test_a_perturbed_detail_changes_exactly_one_slot(answer, perturbed, slot):
    made, missing = judged.decoys_for(source(answer=answer, previous_answer=""))
    decoy = next((d for d in made if d.cls == judged.PERTURBED), None)
    if perturbed:
        assert (decoy.response, decoy.slot) == (f"From what you've told me, the answer is {perturbed}.", slot)
    else:
        assert decoy is None and f"{judged.PERTURBED}: no date, number, direction or entity to change" in missing


def test_items_without_a_superseded_value_give_no_stale_or_unordered_decoy():
    made, missing = judged.decoys_for(source(previous_answer=""))
    assert {d.cls for d in made} == {judged.GOLD, judged.PERTURBED, judged.NON_ANSWER}
    assert missing == [f"{judged.STALE}: no superseded value", f"{judged.UNORDERED}: not a history-aware item"]


def test_abstention_and_preference_items_give_no_decoys():
    assert not judged.decoy_eligible(source(abstention=True))
    assert not judged.decoy_eligible(source(question_type="single-session-preference"))
    records, _ = judged.calibration_set([source(abstention=True), source(question_id="p", question_type="single-session-preference")], seed=1)
    assert records == []


def test_the_templates_are_versioned_and_cover_every_class():
    assert set(judged.TEMPLATES) == {judged.GOLD, *judged.DECOY_CLASSES}
    assert judged.DECOY_VERSION == "judged-decoys/1"
    assert judged.ADMISSIBLE_RATE == 0.95
