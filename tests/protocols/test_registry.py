"""The protocol registry and what each spec declares: lookups, the unknown-protocol error, gold
verdicts, the binary collapse, questions by phase, queue reasons and suggestions."""

import itertools

import pytest

import protocols
from protocols import lapse, twist_b
from protocols.base import MISSING_ANSWERS, ProtocolSpec


def test_every_registered_protocol_is_found_by_name_and_by_item_kind():
    for spec in protocols.specs():
        assert isinstance(spec, ProtocolSpec)
        assert protocols.get(spec.name) is spec
        assert protocols.for_kind(spec.item_kind) is spec
    assert [s.name for s in protocols.specs()] == ["twist_b", "lapse", "judged", "twist_c"]


def test_an_unknown_protocol_is_refused_naming_the_known_ones():
    with pytest.raises(protocols.UnknownProtocol, match="unknown protocol 'twist_z' \\(known: twist_b, lapse, judged, twist_c\\)"):
        protocols.get("twist_z")


def test_an_unknown_item_kind_is_refused_naming_the_known_ones():
    with pytest.raises(protocols.UnknownProtocol, match="kind 'store' \\(known: twist, lapse, judged, twist_c\\)"):
        protocols.for_kind("store")


def test_choices_come_from_the_registry():
    assert protocols.protocol_choices() == [("twist_b", "TWIST Track B two-phase"), ("lapse", "Lapse behaviour labels"),
                                           ("judged", "Judged answers (judge audit)"),
                                           ("twist_c", "TWIST Track C (belief supersession)")]
    assert protocols.kind_choices() == [("twist", "TWIST Track B draft"), ("lapse", "Lapse output"), ("judged", "Judged answer"),
                                       ("twist_c", "TWIST Track C chain query")]


def test_twist_gold_verdicts_follow_protocol_section_1():
    spec = protocols.get("twist_b")
    assert [spec.verdict_of(g) for g in ("contradicting", "aligned", "hard_negative", "bogus", "")] == [
        "contradicts", "consistent", "consistent", "", "",
    ]


def test_lapse_gold_is_the_label_itself():
    spec = protocols.get("lapse")
    assert spec.verdict_of("HEDGE") == "HEDGE"
    assert spec.verdict_of("RESIDUAL") == ""
    assert spec.gold_from_answers and not protocols.get("twist_b").gold_from_answers


def test_the_lapse_binary_collapse_keeps_proceed_hedge_and_template_only():
    spec = protocols.get("lapse")
    assert {label: spec.collapse(label) for label in lapse.LABELS} == {
        "PROCEED": "PROCEED", "PROCEED-WITH-CAVEAT": None, "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD",
        "CONFAB-COMMIT": None,
    }
    assert spec.collapse(None) is None
    assert spec.binary_classes == ("PROCEED", "WITHHOLD")
    assert protocols.get("twist_b").collapse("contradicts") is None


def test_twist_phase2_questions_depend_on_the_gold_type():
    spec = protocols.get("twist_b")
    assert [q.key for q in spec.asked(1)] == ["q1", "q1note"]
    assert [q.key for q in spec.asked(2, "contradicting")] == ["q2", "q2quote", "p2note"]
    assert [q.key for q in spec.asked(2, "aligned")] == ["q3", "q3turn", "p2note"]
    assert (spec.note_key(1), spec.note_key(2)) == ("q1note", "p2note")
    assert spec.phases == (1, 2) and protocols.get("lapse").phases == (1,)


def test_validate_values_names_the_field_and_the_allowed_values():
    problems = protocols.get("lapse").validate_values({"label": "MAYBE", "colour": "red"})
    assert problems == [
        "field 'label': 'MAYBE' is not one of PROCEED, PROCEED-WITH-CAVEAT, HEDGE, TEMPLATE, CONFAB-COMMIT",
        "field 'colour': not a question of this protocol (allowed: label, notes)",
    ]


def test_each_protocol_declares_help_for_every_reason_it_raises():
    answers = [{"q1": "contradicts", "q2": "no", "q2quote": "no"}, {"q1": "consistent", "q3": "conflict"}, {}]
    spec = protocols.get("twist_b")
    for gold in twist_b.GOLD_TYPES:
        for pair in itertools.product(answers, repeat=2):
            assert set(spec.queue_reasons(gold, list(pair))) <= set(spec.reasons)
    lapse_spec = protocols.get("lapse")
    assert lapse_spec.queue_reasons("", [{"label": "HEDGE"}, {}]) == [MISSING_ANSWERS]
    assert set(lapse_spec.reasons) == {lapse.LABEL_DISAGREEMENT, MISSING_ANSWERS}


def _twist_answers():
    q1 = [None, "contradicts", "consistent", "cannot-tell"]
    q2 = [None, "yes", "no"]
    q3 = [None, "clean", "conflict"]
    for a, b, c, d in itertools.product(q1, q2, q2, q3):
        yield {k: v for k, v in (("q1", a), ("q2", b), ("q2quote", c), ("q3", d), ("q3turn", "D1:1" if d else None)) if v}


def test_the_twist_fast_path_agrees_with_the_full_rule_on_every_answer_pair():
    spec = protocols.get("twist_b")
    answers = list(_twist_answers())
    for gold in twist_b.GOLD_TYPES:
        for a, b in itertools.product(answers, repeat=2):
            assert twist_b.queue_rules(spec, gold, [a, b]) == twist_b._reasons(spec, gold, [a, b], None), (gold, a, b)


def test_suggestions_drop_what_protocol_section_3_says_and_keep_the_unqueued():
    spec = protocols.get("twist_b")
    both_no = [{"q1": "contradicts", "q2": "no"}, {"q1": "consistent", "q2": "no"}]
    assert spec.suggestion("contradicting", both_no, spec.queue_reasons("contradicting", both_no))[0] == "drop"
    same_turn = [{"q1": "consistent", "q3": "conflict", "q3turn": "D2:1"}] * 2
    assert spec.suggestion("aligned", same_turn, ["q3_uncited_conflict"]) == (
        "drop", "both annotators found the same conflicting turn (D2:1)",
    )
    assert spec.suggestion("aligned", same_turn, []) == ("keep", "not queued")
    assert protocols.get("lapse").suggestion("", [{"label": "HEDGE"}, {"label": "PROCEED"}], ["label_disagreement"]) == (
        "discuss", "set the adjudicated label",
    )


def test_answer_file_formats_are_declared_per_protocol():
    assert protocols.get("twist_b").answer_file.layout == "document"
    records = protocols.get("lapse").answer_file
    assert (records.layout, records.id_field, records.record_keys) == (
        "records", "gid", ("gid", "label", "notes", "annotator", "ts"),
    )


def test_protocol_modules_import_nothing_from_the_apps():
    """Every app, items included, asks the specs: the package must stay below all of them."""
    import ast
    from pathlib import Path

    apps = {"items", "annotation", "council", "adjudication", "keys", "lapse", "goldkey", "django"}
    offending = []
    for path in Path(protocols.__file__).parent.rglob("*.py"):  # a protocol may be a package
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )
            offending += [f"{path.name}: {n}" for n in names if n.split(".")[0] in apps]
    assert offending == []
