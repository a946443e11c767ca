"""The pure queue rules (PROTOCOL §3, §4) and the suggestion."""

from adjudication import queue as q
from protocols import lapse, twist_b
from protocols.twist_b import (
    Q1_AGREED_AGAINST_GOLD,
    Q1_DISAGREEMENT,
    Q2_NOT_SELF_CONTAINED,
    Q2_QUOTE_WRONG,
    Q3_UNCITED_CONFLICT,
)

TWIST = twist_b.SPEC.name


def queued_for(gold, answers, votes=None, *, protocol=TWIST):
    return q.queue_reasons(gold, answers, votes, protocol=protocol)


def suggest(gold, answers, queued):
    return q.suggestion(gold, answers, queued, protocol=TWIST)


def band(gold, votes):
    return q.council_band(gold, votes, protocol=TWIST)

YES = {"q1": "contradicts", "q2": "yes", "q2quote": "yes"}


def test_agreeing_answers_that_match_gold_are_not_queued():
    assert queued_for("contradicting", [YES, YES]) == []
    assert queued_for("aligned", [{"q1": "consistent", "q3": "clean"}] * 2) == []


def test_different_q1_verdicts_are_a_q1_disagreement():
    assert queued_for("contradicting", [YES, {**YES, "q1": "cannot-tell"}]) == [Q1_DISAGREEMENT]


def test_both_agreeing_against_gold_is_its_own_reason_not_a_disagreement():
    answers = [{"q1": "consistent", "q3": "clean"}] * 2
    assert queued_for("hard_negative", [{"q1": "contradicts", "q3": "clean"}] * 2) == [Q1_AGREED_AGAINST_GOLD]
    assert queued_for("aligned", answers) == []


def test_either_q2_no_or_q2quote_no_queues_a_contradicting_item():
    assert queued_for("contradicting", [YES, {**YES, "q2": "no"}]) == [Q2_NOT_SELF_CONTAINED]
    assert queued_for("contradicting", [{**YES, "q2quote": "no"}, YES]) == [Q2_QUOTE_WRONG]


def test_q3_conflict_queues_aligned_and_hard_negative_items_only():
    clean = {"q1": "consistent", "q3": "clean"}
    conflict = {"q1": "consistent", "q3": "conflict", "q3turn": "D1:2"}
    assert queued_for("aligned", [clean, conflict]) == [Q3_UNCITED_CONFLICT]
    assert queued_for("contradicting", [{**YES, "q3": "conflict"}, YES]) == []


def test_a_missing_q1_is_queued_as_missing_answers():
    assert queued_for("contradicting", [YES, {}]) == [q.MISSING_ANSWERS]
    assert queued_for("contradicting", [YES]) == [q.MISSING_ANSWERS]
    assert queued_for("contradicting", [{}, {}]) == [q.MISSING_ANSWERS]


def test_council_majority_against_counts_cannot_tell_as_abstention():
    votes_against = [{"q1": "consistent"}, {"q1": "consistent"}, {"q1": "cannot-tell"}]
    assert queued_for("contradicting", [YES, YES], votes_against) == [q.COUNCIL_MAJORITY_AGAINST]
    # one against, two abstain: not more than half actively against
    abstaining = [{"q1": "consistent"}, {"q1": "cannot-tell"}, {"q1": "cannot-tell"}]
    assert queued_for("contradicting", [YES, YES], abstaining) == []
    assert band("contradicting", abstaining) == "abstain_heavy"
    assert band("contradicting", [{"q1": "contradicts"}] * 3) == "unanimous_match"
    assert band("contradicting", [{"q1": "contradicts"}] * 2 + [{"q1": "consistent"}]) == "majority_match"


def test_without_council_votes_the_council_reason_never_appears():
    assert q.COUNCIL_MAJORITY_AGAINST not in queued_for("contradicting", [YES, {"q1": "consistent"}], None)


def test_lapse_queues_label_disagreement_and_missing_labels():
    assert queued_for("", [{"label": "PROCEED"}, {"label": "HEDGE"}], protocol=lapse.SPEC.name) == [lapse.LABEL_DISAGREEMENT]
    assert queued_for("", [{"label": "PROCEED"}, {"label": "PROCEED"}], protocol=lapse.SPEC.name) == []
    assert queued_for("", [{"label": "PROCEED"}, {}], protocol=lapse.SPEC.name) == [q.MISSING_ANSWERS]


def test_both_not_self_contained_suggests_drop():
    answers = [{**YES, "q2": "no"}, {**YES, "q1": "consistent", "q2": "no"}]
    reasons = queued_for("contradicting", answers)
    assert suggest("contradicting", answers, reasons)[0] == q.DROP


def test_both_agreed_against_gold_suggests_drop():
    answers = [{"q1": "consistent", "q2": "yes", "q2quote": "yes"}] * 2
    assert suggest("contradicting", answers, queued_for("contradicting", answers))[0] == q.DROP


def test_both_finding_the_same_conflicting_turn_suggests_drop_but_different_turns_discuss():
    same = [{"q1": "consistent", "q3": "conflict", "q3turn": "D3:4"}] * 2
    assert suggest("aligned", same, queued_for("aligned", same))[0] == q.DROP
    different = [same[0], {**same[1], "q3turn": "D9:1"}]
    assert suggest("aligned", different, queued_for("aligned", different))[0] == q.DISCUSS


def test_a_plain_disagreement_is_discussed():
    answers = [YES, {**YES, "q1": "consistent"}]
    assert suggest("contradicting", answers, queued_for("contradicting", answers))[0] == q.DISCUSS


def test_drop_suggestions_sort_before_discussions():
    keys = sorted([q.sort_key("discuss", "a"), q.sort_key("drop", "z"), q.sort_key("drop", "b")])
    assert keys == [q.sort_key("drop", "b"), q.sort_key("drop", "z"), q.sort_key("discuss", "a")]
