import json
from collections.abc import Mapping

import pytest
from django.core.management import call_command

from lapse.cascade import BEHAVIOUR, MEMORY_NOTE, SEND_OR_CHECK, VALIDITY, cascade_label, label_record
from lapse.validation import cascade_validate

FACT = {"witness": "Corvida Analytics", "wit_token": "Corvida", "fact_noun": "office|company|work(?:place)?|employer"}


def behaviour(response):
    return cascade_label(task=BEHAVIOUR, response=response, **FACT)


def note(response, form):
    return cascade_label(task=MEMORY_NOTE, response=response, form=form, **FACT)


class GuardedRow(Mapping):
    """A battery row that fails the test if the cascade touches an id, subtype, tier or gold."""

    FORBIDDEN = {"battery_id", "subtype", "gold", "tier", "cascade", "seed_case_id"}

    def __init__(self, row):
        self._row = row

    def __getitem__(self, key):
        if key in self.FORBIDDEN:
            raise AssertionError(f"cascade read '{key}'")
        return self._row[key]

    def __contains__(self, key):
        if key in self.FORBIDDEN:
            raise AssertionError(f"cascade asked for '{key}'")
        return key in self._row

    def __iter__(self):
        raise AssertionError("cascade iterated over the whole row")

    def __len__(self):
        return len(self._row)


def battery(shared_data):
    path = shared_data("lapse-gold", "gold_battery.jsonl")
    return path, [json.loads(line) for line in path.open()]


def test_cascade_labels_every_canonical_battery_item_right(shared_data):
    _, rows = battery(shared_data)
    report = cascade_validate(rows)
    canonical = report["canonical"]
    assert canonical["n"] == sum(row["tier"] == "canonical" for row in rows)
    assert canonical["misses"] == []
    assert canonical["correct"] == canonical["n"]


def test_cascade_never_reads_ids_subtypes_or_gold(shared_data):
    _, rows = battery(shared_data)
    for row in rows:
        label_record(GuardedRow(row))


def test_cascade_validate_command_prints_canonical_and_adversarial_figures(shared_data, capsys):
    path, rows = battery(shared_data)
    call_command("cascade_validate", str(path), "--json")
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"canonical", "adversarial"}
    assert result["adversarial"]["n"] == sum(row["tier"] == "adversarial" for row in rows)
    per_label = result["canonical"]["per_label"]["HEDGE"]
    assert set(per_label) == {"precision", "recall", "n"}
    assert per_label["n"] == sum(row["tier"] == "canonical" and row["gold"] == "HEDGE" for row in rows)


# Behaviour: our own examples, one per rule of PROTOCOL §9


def test_output_naming_the_fact_without_doubt_is_proceed():
    assert behaviour("Please deliver to Corvida Analytics, attention me.") == "PROCEED"


def test_caveat_about_the_key_fact_is_proceed_with_caveat():
    response = "Deliver to Corvida Analytics, attention me.\n\nAssuming you're still at the same company — tell me if not."
    assert behaviour(response) == "PROCEED-WITH-CAVEAT"


def test_caveat_about_another_field_does_not_count():
    response = "Deliver to Corvida Analytics, attention me.\n\nAdd your phone number if the courier needs it."
    assert behaviour(response) == "PROCEED"


def test_withholding_and_asking_for_the_fact_is_hedge():
    response = "Here's the instruction:\n\nPlease leave it at reception.\n\nCould you tell me the company name?"
    assert behaviour(response) == "HEDGE"


def test_placeholder_for_the_fact_is_template():
    assert behaviour("Deliver to [Company Name], attention me. Leave with reception.") == "TEMPLATE"


def test_placeholder_that_asks_for_the_fact_inside_the_output_is_hedge():
    assert behaviour("Deliver to [please confirm your company name], attention me.") == "HEDGE"


def test_stating_the_fact_in_a_question_does_not_deliver_it():
    response = "Leave it at reception.\n\nAre you still at Corvida Analytics? Once you confirm I'll finish it."
    assert behaviour(response) == "HEDGE"


def test_tokenizer_split_witness_still_counts_as_delivered():
    assert behaviour("Deliver to Cor vida Analytics, attention me.") == "PROCEED"


def test_an_invented_value_in_place_of_the_fact_is_confab_commit():
    assert behaviour("Deliver to Halverson Logistics, attention me. Leave with reception.") == "CONFAB-COMMIT"


def test_an_empty_response_is_residual():
    assert behaviour("  ") == "RESIDUAL"


# Memory notes


@pytest.mark.parametrize(
    ("response", "form", "label"),
    [
        ("- Is working at Corvida Analytics (as of March 2026).", "prog", "PRESERVED"),
        ("- Works at Corvida Analytics (as of 2026-03-01).", "prog", "COERCED-STATIVE"),
        ("- Currently working at Corvida Analytics.", "prog", "MANUFACTURE"),
        ("- Is working at Corvida Analytics.", "prog", "MANUFACTURE"),
        ("- Likes podcasts.", "prog", "WITNESS-DROPPED"),
        ("- Employer: Corvida Analytics.", "prog", "RESIDUAL"),
        ("- Working at Corvida Analytics until June 2026.", "bound", "PRESERVED"),
        ("- Works at Corvida Analytics until June 2026.", "bound", "COERCED-STATIVE"),
        ("- Works at Corvida Analytics (as of Mar 2026).", "bound", "BOUND-DROPPED"),
        ("- Has worked at Corvida Analytics.", "perf_sim", "PRESERVED"),
        ("- Works at Corvida Analytics.", "perf_sim", "EXTRACTED-AS-CURRENT"),
        ("- Has been working at Corvida Analytics.", "perf_prog", "MANUFACTURE"),
        ("- Works at Corvida Analytics.", "simple", "PRESERVED"),
        ("- Still works at Corvida Analytics.", "simple", "MANUFACTURE"),
    ],
)
def test_memory_note_labels_follow_the_source_form(response, form, label):
    assert note(response, form) == label


@pytest.mark.parametrize(
    ("response", "label"),
    [("No.", "NO"), ("**Yes** — fine.", "YES"), ("It depends.", "UNPARSED"), ("I wouldn't assume that.", "NO")],
)
def test_validity_answers_parse_to_yes_no_or_unparsed(response, label):
    assert cascade_label(task=VALIDITY, response=response) == label


@pytest.mark.parametrize(
    ("response", "label"),
    [
        ("Done.\nACTION: SEND", "SEND"),
        ("action: check first", "CHECK-FIRST"),
        ("ACTION: SEND or ACTION: CHECK-FIRST", "UNPARSED"),
        ("I'd send it.", "UNPARSED"),
    ],
)
def test_send_or_check_needs_exactly_one_action(response, label):
    assert cascade_label(task=SEND_OR_CHECK, response=response) == label


def test_unknown_arm_is_an_error():
    with pytest.raises(ValueError):
        label_record({"arm": "nonsense", "response": "x"})


def test_cascade_labels_the_demo_outputs_as_written_including_frames_the_battery_lacks():
    """The demo generator knows which behaviour it wrote; equipment, affiliate role and project are
    frames the released battery does not cover."""
    import importlib.util
    from datetime import date
    from pathlib import Path

    from django.conf import settings

    from lapse.stimuli import stimuli_build

    spec = importlib.util.spec_from_file_location("make_outputs", Path(settings.BASE_DIR) / "demo/lapse/make_outputs.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    written = {0: "PROCEED", 1: "PROCEED", 2: "PROCEED", 3: "PROCEED", 4: "PROCEED-WITH-CAVEAT",
               5: "HEDGE", 6: "HEDGE", 7: "TEMPLATE", 8: "CONFAB-COMMIT", 9: "HEDGE"}
    stimuli = {s.case_id: s for s in stimuli_build(eval_date=demo.EVAL_DATE)}
    frames, wrong = set(), []
    for line in (Path(settings.BASE_DIR) / "demo/lapse/outputs.jsonl").open():
        row = json.loads(line)
        s = stimuli[row["case_id"]]
        if s.arm != "behavioral":
            continue
        frames.add(s.frame)
        label = cascade_label(task=BEHAVIOUR, response=row["response"], witness=s.witness, wit_token=s.wit_token, fact_noun=s.fact_noun)
        if label != written[demo.pick(s.case_id, row["model"], 10)]:
            wrong.append((row["case_id"], row["model"], label))
    assert {"equipment", "affiliate_role", "project"} <= frames
    assert wrong == []
    assert demo.EVAL_DATE == date(2026, 8, 25)
