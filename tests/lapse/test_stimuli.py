import json
from datetime import date

import pytest

from lapse.pair_gate import build_with_gate
from lapse.stimuli import (
    GAP_OFFSETS_DAYS,
    REFERENCE_EVAL_DATE,
    SYSTEM_TEMPLATE,
    session_date,
    stimuli_build,
)

EVAL = date(2026, 8, 25)


def test_builder_is_deterministic():
    first, second = build_with_gate(eval_date=EVAL), build_with_gate(eval_date=EVAL)
    assert first.sha256() == second.sha256()
    assert [s.case_id for s in first.stimuli] == [s.case_id for s in second.stimuli]


def test_case_ids_are_unique():
    ids = [s.case_id for s in stimuli_build(eval_date=EVAL)]
    assert len(ids) == len(set(ids))


def test_no_stimulus_gets_an_extra_temporal_adverb():
    for s in stimuli_build(eval_date=EVAL):
        assert not any(adverb in s.key_line.lower() for adverb in ("at the moment", "for now", "currently"))


def test_gap_offsets_and_system_template_follow_the_release_manifest(shared_data):
    manifest = json.loads(shared_data("lapse-gold", "manifest_v2.json").read_text())
    eval_date = date.fromisoformat(manifest["eval_date"])
    assert eval_date == REFERENCE_EVAL_DATE
    assert GAP_OFFSETS_DAYS == manifest["gap_offsets_days"]
    assert SYSTEM_TEMPLATE.format(eval_date=eval_date, history="{history}") == manifest["system_template"]


def test_reference_build_reproduces_the_released_sample_histories(shared_data):
    """Our canonical wrapper, lodging frame and gap dates give the released stimuli's exact history."""
    rows = [json.loads(line) for line in shared_data("lapse-gold", "stimuli_v2.sample.jsonl").open()]
    ours = {
        (s.arm, s.form, s.gap): s
        for s in stimuli_build(eval_date=REFERENCE_EVAL_DATE)
        if s.frame == "lodging" and s.cluster == 0 and s.carrier == "c0_original" and s.lexeme_pair == "diff"
    }
    compared = 0
    for row in rows:
        mine = ours.get((row["arm"], row["form"], row["gap"]))
        if mine is None:
            continue
        assert mine.gap_date == row["gap_date"] == session_date(row["gap"], REFERENCE_EVAL_DATE).isoformat()
        assert mine.history == row["history"]
        assert mine.query == row["query"]
        compared += 1
    assert compared == len(rows)


@pytest.mark.django_db
def test_lapse_build_command_creates_stimuli_and_reports_counts(capsys):
    from django.core.management import call_command

    from items.models import Item

    call_command("lapse_build", "--eval-date", "2026-08-25", "--json")
    result = json.loads(capsys.readouterr().out)
    assert result["created"] == result["n_stimuli"] == Item.objects.filter(item_set__name="Lapse stimuli 2026-08-25").count()
    assert sum(result["per_component"].values()) == result["n_stimuli"]
    assert result["pairs_rejected"] == 0
    call_command("lapse_build", "--eval-date", "2026-08-25", "--json")
    again = json.loads(capsys.readouterr().out)
    assert again["created"] == 0 and again["unchanged"] == result["n_stimuli"]


@pytest.mark.django_db
def test_lapse_build_rejects_a_malformed_date():
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("lapse_build", "--eval-date", "25/08/2026")
