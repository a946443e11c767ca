"""TWIST Track C's pure parts (PROTOCOL §14): the import line, the per-item gates, the blind view, the queue
rules, the decoys built from chains and a run's metrics; and the demo set passing every gate."""

import json
from pathlib import Path

import pytest

import protocols
import protocols.twist_c as tc
from protocols.base import DISCUSS, DROP, MISSING_ANSWERS
from protocols.twist_c import chain, decoys, judge, metrics

DEMO = Path(__file__).resolve().parents[2] / "demo" / "twist_c"

D1, D2, D3 = "1 March, 2025", "2 April, 2025", "3 May, 2025"
TURNS = {
    "D1:1": chain.Turn("D1:1", 1, 0, D1, "Ana", "I'm going to study law in Porto."),
    "D1:2": chain.Turn("D1:2", 1, 1, D1, "Ana", "I play the cello on Sundays."),
    "D1:3": chain.Turn("D1:3", 1, 2, D1, "Ana", "I also joined a rowing club."),
    "D2:1": chain.Turn("D2:1", 2, 0, D2, "Ana", "I know I said law, but I'll study medicine in Porto instead."),
    "D3:1": chain.Turn("D3:1", 3, 0, D3, "Ana", "Change again: I'm starting nursing in Braga in October."),
}
VALUES = {"D1:1": "law in Porto", "D1:2": "cello on Sundays", "D1:3": "rowing club",
          "D2:1": "medicine in Porto", "D3:1": "nursing in Braga"}


def step(cited, **changes):
    t = TURNS[cited]
    return {"turn_id": cited, "date": t.date, "speaker": t.speaker, "text": t.text, "value": VALUES[cited], **changes}


def line(family="C1", **fields):
    chains = {
        "C1": (["D1:1", "D2:1"], "She will study medicine in Porto."),
        "C2": (["D1:1", "D2:1", "D3:1"], "Nursing in Braga."),
        "C3": (["D1:1", "D2:1"], "First law in Porto, then medicine in Porto."),
        "C4": (["D1:1", "D2:1"], "Medicine in Porto."),
        "HN-C1": (["D1:2", "D1:3"], "Both: the cello on Sundays and a rowing club."),
    }
    ids, gold = chains[family]
    data = {
        "id": f"x-{family}", "conversation": "conv-x", "conversation_version": "conv-x.v1", "family": family,
        "question": "What is Ana studying?", "gold": gold, "steps": [step(i) for i in ids],
        "superseded": [] if family == "HN-C1" else [VALUES[i] for i in ids[:-1]],
    }
    return {**data, **fields}


def item(family="C1", **fields) -> chain.ChainItem:
    return chain.ChainItem.model_validate(line(family, **fields))


def demo_items() -> list[chain.ChainItem]:
    items = []
    for text in (DEMO / "items.jsonl").read_text(encoding="utf-8").splitlines():
        parsed, errors = chain.validate_line(text)
        assert errors == []
        items.append(parsed)
    return items


# --- the import line ---------------------------------------------------------------------------------------

def test_a_well_formed_line_gives_the_item_and_its_query_kind():
    parsed, errors = chain.validate_line(json.dumps(line("C3")))
    assert errors == [] and parsed.query_kind == chain.HISTORY and len(parsed.steps) == 2


@pytest.mark.parametrize(("text", "expected"), [
    ("{not json", "line: not valid JSON"),
    ("[1, 2]", "line: must be a JSON object, got list"),
])
def test_a_line_that_is_not_a_json_object_is_named(text, expected):
    parsed, errors = chain.validate_line(text)
    assert parsed is None and errors[0].startswith(expected)


def test_field_errors_name_the_field_down_to_the_step():
    data = line()
    del data["steps"][1]["value"]
    data["family"] = "C9"
    data["rationale"] = "hidden"
    parsed, errors = chain.validate_line(json.dumps(data))
    assert parsed is None
    assert any(e.startswith("steps[1].value: ") for e in errors)
    assert any(e.startswith("family: ") and "C9" in e for e in errors)
    assert any(e.startswith("rationale: ") for e in errors)


def test_a_number_where_text_belongs_is_a_field_error_not_coerced():
    data = line()
    data["steps"][0]["turn_id"] = 7
    _, errors = chain.validate_line(json.dumps(data))
    assert [e.split(":")[0] for e in errors] == ["steps[0].turn_id"]


def test_a_huge_nesting_is_an_error_not_a_crash():
    _, errors = chain.validate_line("[" * 100_000 + "]" * 100_000)
    assert errors and errors[0].startswith("line: ")


def test_every_family_has_its_query_kind():
    assert {f: item(f).query_kind for f in chain.FAMILIES} == {
        "C1": "current", "C2": "current", "C3": "history", "C4": "post_resolution", "HN-C1": "current",
    }


# --- conversation versions ---------------------------------------------------------------------------------

def conversation(*session_1):
    return {"speaker_a": "Ana", "speaker_b": "Bo", "session_1_date_time": D1,
            "session_1": [{"speaker": s, "dia_id": f"D1:{n}", "text": t} for n, (s, t) in enumerate(session_1, 1)]}


def test_a_version_that_only_adds_turns_passes_and_one_that_edits_the_original_fails():
    original = conversation(("Ana", "Hi"), ("Bo", "Hello"))
    assert chain.version_reasons(original, conversation(("Ana", "Hi"), ("Bo", "Hello"), ("Ana", "Injected"))) == []
    assert chain.version_reasons(original, conversation(("Ana", "Hi"), ("Bo", "Hello!"))) == ["version changes original turn D1:2"]
    assert chain.version_reasons(original, conversation(("Ana", "Hi"))) == ["version drops original turn D1:2"]


def test_turns_of_reads_sessions_dates_and_positions():
    turns = chain.turns_of(conversation(("Ana", "Hi"), ("Bo", "Hello")))
    assert turns["D1:2"] == chain.Turn("D1:2", 1, 1, D1, "Bo", "Hello")


# --- the gates -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(chain.FAMILIES))
def test_a_sound_item_of_every_family_passes_every_structural_gate(family):
    assert chain.structural_reasons(item(family), TURNS) == []


def test_a_step_citing_a_turn_outside_its_version_is_rejected():
    bad = item(steps=[step("D1:1"), step("D2:1", turn_id="D9:9")])
    assert chain.gate_steps_resolve(bad, TURNS) == ["steps[1]: turn D9:9 is not in conv-x.v1"]


def test_a_step_whose_text_is_not_its_turns_verbatim_text_is_rejected():
    bad = item(steps=[step("D1:1", text="I'm going to study law in Porto!"), step("D2:1")])
    assert chain.gate_steps_resolve(bad, TURNS) == ["steps[0].text: differs from turn D1:1 of conv-x.v1"]


def test_update_steps_out_of_record_order_are_rejected():
    bad = item(steps=[step("D2:1"), step("D1:1")], superseded=["medicine in Porto"], gold="Law in Porto.")
    assert chain.gate_order(bad, TURNS) == ["steps: update steps are not strictly ordered by (session, turn)"]


def test_update_steps_citing_one_turn_twice_are_not_strictly_ordered():
    bad = item(steps=[step("D1:1"), step("D1:1")])
    assert chain.gate_order(bad, TURNS) != []


def test_coexisting_facts_may_share_a_turn_and_any_order():
    same = item("HN-C1", steps=[step("D1:3"), step("D1:2")])
    assert chain.gate_order(same, TURNS) == []


def test_step_counts_follow_the_family():
    assert chain.gate_step_count(item("C2", steps=[step("D1:1"), step("D2:1")])) == [
        "steps: C2 (Double update) has 3 steps, got 2",
    ]
    assert chain.gate_step_count(item("C1", steps=[step("D1:1"), step("D2:1"), step("D3:1")])) != []


def test_a_current_gold_must_name_the_last_value():
    assert chain.gate_gold(item("C1", gold="She will study law in Porto.")) == ["gold: a current gold names the last step's value"]
    assert chain.gate_gold(item("C4", gold="Law in Porto.")) == ["gold: a post-resolution gold names the last step's value"]


def test_a_history_gold_must_name_every_state_in_order():
    assert chain.gate_gold(item("C3", gold="Medicine in Porto, after law in Porto.")) == [
        "gold: a history-aware gold names every state in chain order",
    ]
    assert chain.gate_gold(item("C3", gold="Medicine in Porto.")) != []


def test_superseded_values_must_be_the_earlier_steps_in_order():
    assert chain.gate_gold(item("C2", superseded=["medicine in Porto", "law in Porto"])) == [
        "superseded: must be the values of every step but the last, in chain order",
    ]
    assert chain.gate_gold(item("HN-C1", superseded=["rowing club"])) == ["superseded: a coexistence item supersedes nothing"]


def test_a_coexistence_gold_must_name_both_facts():
    assert chain.gate_gold(item("HN-C1", gold="A rowing club.")) == [
        "gold: a coexistence gold names every fact, both still current",
    ]


def test_a_step_whose_text_does_not_state_its_value_is_not_self_contained():
    bad = item(steps=[step("D1:1"), step("D2:1", value="dentistry in Porto")], gold="Dentistry in Porto.")
    assert chain.gate_self_contained(bad) == ["steps[1].text: does not state its value 'dentistry in Porto'"]


# --- verification-as-seen --------------------------------------------------------------------------------------

def test_the_verification_prompt_shows_only_the_dated_steps():
    it = item("C2", id="secret-id-42", question="Which course now?", gold="Nursing in Braga, definitely.")
    prompt, shown = chain.verification_prompt(it)
    assert sorted(shown) == [0, 1, 2]
    for s in it.steps:
        assert f"[{s.date}] {s.speaker}: {s.text}" in prompt
    for hidden in ("secret-id-42", "C2", "Double update", "Which course now?", "definitely", "superseded"):
        assert hidden not in prompt


def test_a_reply_recovering_relation_order_and_current_value_passes():
    it = item("C2")
    _, shown = chain.verification_prompt(it)
    labels = {i: f"S{n}" for n, i in enumerate(shown, 1)}
    good = json.dumps({"relation": "supersession", "order": [labels[0], labels[1], labels[2]], "current": "nursing in Braga"})
    assert chain.gate_verification(it, shown, "Sure:\n" + good) == []


def test_a_reply_with_the_wrong_order_relation_or_current_value_is_rejected():
    it = item("C2")
    _, shown = chain.verification_prompt(it)
    labels = {i: f"S{n}" for n, i in enumerate(shown, 1)}
    bad = json.dumps({"relation": "coexistence", "order": [labels[1], labels[0], labels[2]], "current": "law"})
    assert len(chain.gate_verification(it, shown, bad)) == 3
    assert chain.gate_verification(it, shown, "no idea") == ["verification: the reply holds no JSON object"]


def test_a_coexistence_item_needs_only_the_relation_recovered():
    it = item("HN-C1")
    _, shown = chain.verification_prompt(it)
    assert chain.gate_verification(it, shown, '{"relation": "coexistence"}') == []
    assert chain.gate_verification(it, shown, '{"relation": "supersession"}') != []


# --- the blind view, questions and queue -------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(chain.FAMILIES))
def test_the_blind_view_never_holds_the_family_the_superseded_values_or_the_id(family):
    it = item(family, id="item-id-secret")
    view = tc.blind_view(it)
    assert set(view) == {"turns", "question", "proposed_answer"}
    assert all(set(t) == {"turn_id", "date", "speaker", "text"} for t in view["turns"])
    text = json.dumps(view)
    assert "item-id-secret" not in text and "superseded" not in text and "value" not in text
    assert family not in {view["question"], view["proposed_answer"]} and f'"{family}"' not in text


def test_the_blind_view_shows_the_turns_in_record_order():
    it = item("HN-C1", steps=[step("D1:3"), step("D1:2")])
    assert [t["turn_id"] for t in tc.blind_view(it)["turns"]] == ["D1:2", "D1:3"]


def test_the_blind_view_takes_record_order_from_the_conversation_version_when_given():
    turns = {**TURNS, "D1:3": chain.Turn("D1:3", 0, 0, D1, "Ana", TURNS["D1:3"].text)}  # a session before D1:2's
    it = item("HN-C1", steps=[step("D1:2"), step("D1:3")])
    assert [t["turn_id"] for t in tc.blind_view(it, turns)["turns"]] == ["D1:3", "D1:2"]


def test_the_conventions_count_an_acknowledged_revision_as_a_supersession():
    assert any("acknowledged revision" in c and "supersession" in c and "Track A" in c for c in tc.SPEC.conventions)


def test_the_registered_spec_never_shows_the_family_the_values_or_the_id():
    spec = protocols.get("twist_c")
    assert spec is tc.SPEC and protocols.for_kind("twist_c") is tc.SPEC
    assert set(spec.blind_fields) == {"question", "answer"}
    assert not set(spec.blind_fields) & {"family", "gold_label", "step_values", "superseded", "external_id"}
    assert {"family", "step_values", "superseded", "external_id"} <= set(spec.hidden_fields)


def test_two_agreeing_sound_answers_raise_no_queue_reason():
    good = {"q1": "supersession", "q2": "yes", "q3": "yes"}
    assert tc.SPEC.queue_reasons("supersession", [good, good]) == []


def test_queue_reasons_follow_the_track_b_rules():
    a = {"q1": "supersession", "q2": "no", "q3": "yes"}
    b = {"q1": "coexistence", "q2": "yes", "q3": "no"}
    assert tc.SPEC.queue_reasons("supersession", [a, b]) == [
        tc.Q1_DISAGREEMENT, tc.Q2_ANSWER_WRONG, tc.Q3_NOT_SELF_CONTAINED,
    ]
    both_against = {"q1": "supersession", "q2": "yes", "q3": "yes"}
    assert tc.SPEC.queue_reasons("coexistence", [both_against, both_against]) == [tc.Q1_AGREED_AGAINST_GOLD]
    assert tc.SPEC.queue_reasons("supersession", [both_against, {}]) == [MISSING_ANSWERS]


def test_a_council_majority_against_the_relation_queues_the_item():
    good = {"q1": "supersession", "q2": "yes", "q3": "yes"}
    votes = [{"q1": "coexistence"}] * 2 + [{"q1": "supersession"}]
    assert tc.SPEC.queue_reasons("supersession", [good, good], votes) == [tc.COUNCIL_MAJORITY_AGAINST]


def test_suggestions_drop_what_both_say_is_not_self_contained_and_discuss_the_rest():
    no = {"q1": "supersession", "q2": "yes", "q3": "no"}
    assert tc.SPEC.suggestion("supersession", [no, no], [tc.Q3_NOT_SELF_CONTAINED])[0] == DROP
    split = [{"q1": "supersession"}, {"q1": "coexistence"}]
    assert tc.SPEC.suggestion("supersession", split, [tc.Q1_DISAGREEMENT])[0] == DISCUSS


def test_a_key_entry_carries_the_chain_the_gold_and_the_superseded_values():
    entry = tc.key_entry(item("C2"))
    assert entry["gold"] == "Nursing in Braga."
    assert entry["superseded"] == ["law in Porto", "medicine in Porto"]
    assert [s["turn_id"] for s in entry["chain"]] == ["D1:1", "D2:1", "D3:1"]


# --- decoys from chains ---------------------------------------------------------------------------------------------

def classes(it):
    return {d.cls: d for d in decoys.chain_decoys(it)[0]}


def test_a_single_update_gets_f0_as_stale_and_no_unordered_decoy():
    made = classes(item("C1"))
    assert set(made) == {"gold", decoys.STALE, decoys.PERTURBED, decoys.NON_ANSWER}
    assert "law in Porto" in made[decoys.STALE].response


def test_a_double_update_gets_f1_as_stale():
    made = classes(item("C2"))
    assert "medicine in Porto" in made[decoys.STALE].response and "law" not in made[decoys.STALE].response


def test_a_history_probe_gets_the_unordered_decoy_naming_every_state_out_of_order():
    made = classes(item("C3"))
    assert set(made) == {"gold", decoys.STALE, decoys.PERTURBED, decoys.NON_ANSWER, decoys.UNORDERED}
    unordered = made[decoys.UNORDERED].response
    assert unordered.index("medicine in Porto") < unordered.index("law in Porto")


def test_coexistence_probes_get_no_stale_decoy_and_post_resolution_probes_none():
    assert set(classes(item("HN-C1"))) == {"gold", decoys.PERTURBED, decoys.NON_ANSWER}
    assert decoys.chain_decoys(item("C4")) == ([], [])


def test_every_decoy_records_the_chain_decoy_version():
    assert {d.version for d in decoys.chain_decoys(item("C3"))[0]} == {"judged-decoys/2"}


def test_a_perturbed_decoy_changes_one_slot_of_the_current_fact():
    made = classes(item("C2"))[decoys.PERTURBED]
    assert made.slot == "entity" and "Braga" not in made.response and "nursing in" in made.response


def test_a_class_that_cannot_apply_to_a_set_is_reported_not_applicable():
    _, counts = decoys.calibration_set([item("C1"), item("C2")], seed=1)
    assert counts[decoys.UNORDERED] == decoys.NOT_APPLICABLE
    assert counts[decoys.STALE] == 2 and counts["gold"] == 2


def test_a_class_that_applies_and_is_empty_is_an_error():
    flat = item("C1", steps=[step("D1:1", value="law"), step("D2:1", value="medicine")],
                superseded=["law"], gold="medicine")
    with pytest.raises(decoys.DecoySetError, match="perturbed_detail"):
        decoys.calibration_set([flat], seed=1)


def test_the_calibration_set_is_seeded_and_ids_tell_nothing_of_provenance():
    items = [item(f) for f in chain.FAMILIES]
    first, _ = decoys.calibration_set(items, seed=3)
    again, _ = decoys.calibration_set(items, seed=3)
    assert first == again
    assert [r["id"] for r in first] == [f"c{n:04d}" for n in range(1, len(first) + 1)]


def test_a_calibration_prompt_holds_the_probe_and_response_but_nothing_of_provenance():
    records, _ = decoys.calibration_set([item("C3")], seed=2)
    for record in records:
        prompt = decoys.calibration_prompt(record)
        assert record["response"] in prompt and record["answer"] in prompt
        assert "in the order they happened" in prompt
        assert record["class"] not in prompt and record["source"] not in prompt


def test_a_judge_that_rejects_everything_is_not_admissible():
    records, _ = decoys.calibration_set(demo_items(), seed=5)
    ok, _, failing = decoys.admissibility((r["class"], False) for r in records)
    assert not ok and [f.split(":")[0] for f in failing] == ["gold"]


def test_a_judge_that_accepts_stale_answers_is_refused_naming_the_class():
    records, _ = decoys.calibration_set(demo_items(), seed=5)
    ok, figures, failing = decoys.admissibility((r["class"], r["class"] in ("gold", decoys.STALE)) for r in records)
    assert not ok and [f.split(":")[0] for f in failing] == [decoys.STALE]
    assert figures[decoys.STALE]["k"] == 0
    assert "stale_as_current" in decoys.refusal("judge-a", failing)


def test_a_judge_that_accepts_gold_and_rejects_every_decoy_is_admissible():
    records, _ = decoys.calibration_set(demo_items(), seed=5)
    ok, figures, failing = decoys.admissibility((r["class"], r["class"] == "gold") for r in records)
    assert ok and failing == [] and figures["gold"]["rate"] == 1.0


# --- a run's metrics ---------------------------------------------------------------------------------------------------

def test_metrics_count_each_family_under_its_own_figure():
    judged = [
        (item("C1"), metrics.ANSWERED_CURRENT), (item("C2"), metrics.ANSWERED_STALE), (item("C2"), metrics.ANSWERED_OTHER),
        (item("C3"), metrics.ANSWERED_HISTORY), (item("C3"), metrics.ANSWERED_UNORDERED),
        (item("C4"), metrics.ANSWERED_CURRENT),
        (item("HN-C1"), metrics.ANSWERED_BOTH), (item("HN-C1"), metrics.ANSWERED_CURRENT),
    ]
    counts = metrics.run_metrics(judged)
    assert counts == {
        "current_answer_rate": {"k": 1, "n": 3},
        "stale_answer_rate": {"k": 1, "n": 3},
        "history_retention": {"k": 1, "n": 2},
        "stale_after_resolution": {"k": 0, "n": 1},
        "coexistence_retention": {"k": 1, "n": 2},
    }
    assert metrics.resolution_responsiveness(counts) == pytest.approx(1 / 3)


def test_a_runs_answer_is_graded_against_the_gold_and_against_the_replaced_belief():
    prompts = judge.answer_prompts(item("C2"), "Nursing, I think.")
    assert set(prompts) == {"gold", "stale"}
    assert "Correct Answer: Nursing in Braga." in prompts["gold"]
    assert "Correct Answer: medicine in Porto" in prompts["stale"]
    assert set(judge.answer_prompts(item("HN-C1"), "Both.")) == {"gold"}
    assert "what holds now" in judge.answer_prompts(item("C4"), "x")["gold"]


@pytest.mark.parametrize(("family", "gold_yes", "stale_yes", "expected"), [
    ("C1", True, False, "current"),
    ("C2", True, True, "stale"),
    ("C4", False, True, "stale"),
    ("C3", True, False, "history_in_order"),
    ("C3", False, False, "other"),
    ("HN-C1", True, False, "both_current"),
    ("HN-C1", False, False, "other"),
])
def test_the_judges_two_grades_give_the_answers_verdict(family, gold_yes, stale_yes, expected):
    assert metrics.answer_verdict(item(family), gold_yes=gold_yes, stale_yes=stale_yes) == expected


def test_resolution_responsiveness_is_absent_without_post_resolution_answers():
    assert metrics.resolution_responsiveness(metrics.run_metrics([(item("C1"), metrics.ANSWERED_STALE)])) is None


def test_an_unknown_verdict_is_an_error_naming_it():
    with pytest.raises(ValueError, match="maybe"):
        metrics.run_metrics([(item("C1"), "maybe")])


# --- the demo set ----------------------------------------------------------------------------------------------------

def test_the_demo_version_only_adds_turns_to_the_original():
    original = json.loads((DEMO / "conv-c.json").read_text(encoding="utf-8"))
    version = json.loads((DEMO / "conv-c.tc1.json").read_text(encoding="utf-8"))
    assert chain.version_reasons(original, version) == []
    assert len(chain.turns_of(version)) > len(chain.turns_of(original))


def test_every_demo_item_passes_every_gate():
    turns = chain.turns_of(json.loads((DEMO / "conv-c.tc1.json").read_text(encoding="utf-8")))
    items = demo_items()
    assert {i.family for i in items} == set(chain.FAMILIES)
    assert {i.conversation_version for i in items} == {"conv-c.tc1"}
    assert {i.id: chain.structural_reasons(i, turns) for i in items} == {i.id: [] for i in items}


def test_the_demo_steps_cite_injected_turns():
    original = chain.turns_of(json.loads((DEMO / "conv-c.json").read_text(encoding="utf-8")))
    version = chain.turns_of(json.loads((DEMO / "conv-c.tc1.json").read_text(encoding="utf-8")))
    cited = {s.turn_id for i in demo_items() for s in i.steps}
    assert all(t in version and (t not in original or original[t].text != version[t].text) for t in cited)


def test_the_demo_set_gives_every_decoy_class_a_non_empty_count():
    _, counts = decoys.calibration_set(demo_items(), seed=11)
    assert all(isinstance(counts[c], int) and counts[c] > 0 for c in (*decoys.DECOY_CLASSES, "gold"))


def test_an_applicable_class_the_judge_was_not_run_on_fails():
    records, counts = decoys.calibration_set(demo_items(), seed=5)
    ok, _, failing = decoys.admissibility(((r["class"], r["class"] == "gold") for r in records if r["class"] != decoys.UNORDERED), counts)
    assert not ok and failing == [f"{decoys.UNORDERED}: applies to this set but none was graded"]
