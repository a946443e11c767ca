"""The pair gate: matched stimuli may differ only in the verb group and a bound phrase."""

import dataclasses
from datetime import date

from lapse.pair_gate import matched_pairs, pair_gate
from lapse.stimuli import stimuli_build

EVAL = date(2026, 8, 25)


def a_pair(marked="prog", control="simple"):
    pairs = [(a, b) for a, b in matched_pairs(stimuli_build(eval_date=EVAL)) if (a.form, b.form) == (marked, control)]
    return pairs[0]


def test_pair_gate_passes_every_pair_the_builder_makes():
    pairs = matched_pairs(stimuli_build(eval_date=EVAL))
    assert {(a.form, b.form) for a, b in pairs} == {("prog", "simple"), ("bound", "prog"), ("perf_prog", "perf_sim")}
    assert [(a.case_id, pair_gate(a, b)) for a, b in pairs if pair_gate(a, b)] == []


def test_pair_gate_rejects_a_changed_carrier_word():
    a, b = a_pair()
    broken = dataclasses.replace(b, history=b.history.replace("podcast", "audiobook"))
    problems = pair_gate(a, broken)
    assert problems and "podcast" in problems[0]


def test_pair_gate_rejects_an_added_temporal_adverb():
    a, b = a_pair()
    broken = dataclasses.replace(a, history=a.history.replace(" on Fifth Street.", " on Fifth Street at the moment."))
    assert pair_gate(broken, b)


def test_pair_gate_rejects_members_with_different_dates():
    a, b = a_pair()
    assert any("gap_date" in p for p in pair_gate(a, dataclasses.replace(b, gap_date="2020-01-01")))


def test_pair_gate_accepts_a_bound_phrase_as_marking():
    a, b = a_pair("bound", "prog")
    assert "until" in a.key_line and pair_gate(a, b) == []


def test_matched_members_differ_only_in_their_key_line():
    for a, b in matched_pairs(stimuli_build(eval_date=EVAL)):
        assert a.history.replace(a.key_line, "") == b.history.replace(b.key_line, "")
