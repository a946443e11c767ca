"""The Lapse corpus as items: model outputs imported against their stimulus, stimuli built and gated."""

import json
from datetime import date

import pytest

from goldkey.lib.jsonio import ImportFailed
from items.models import Item
from lapse.corpus import lapse_outputs_import, lapse_stimuli_create, output_external_id
from protocols import blind_view

CASE = "gk-behavioral-lodging-00-c0_original-prog-diff-stale"


@pytest.fixture
def stimuli(db):
    return lapse_stimuli_create(eval_date=date(2026, 8, 25))


def write(tmp_path, rows, name="outputs.jsonl"):
    path = tmp_path / name
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_an_output_is_linked_to_its_stimulus_and_carries_its_conditions(stimuli, tmp_path):
    path = write(tmp_path, [{"case_id": CASE, "model": "m1", "response": "Pickup at the Marbury Residences."}])
    assert lapse_outputs_import(path=path)["created"] == 1
    output = Item.objects.get(item_set__name="Lapse outputs")
    stimulus = Item.objects.get(external_id=CASE)
    assert output.hidden["stimulus_item_id"] == stimulus.pk
    assert output.hidden["case_id"] == CASE and output.hidden["model"] == "m1"
    assert (output.hidden["form"], output.hidden["gap"], output.hidden["frame"]) == ("prog", "stale", "lodging")
    assert output.request == stimulus.request and output.key_fact == "the Marbury Residences"


def test_an_output_id_does_not_spell_its_conditions(stimuli, tmp_path):
    lapse_outputs_import(path=write(tmp_path, [{"case_id": CASE, "model": "secret-model", "response": "x"}]))
    seen = json.dumps(blind_view(Item.objects.get(item_set__name="Lapse outputs")))
    assert "secret-model" not in seen and "stale" not in seen and "prog" not in seen
    assert output_external_id(CASE, "secret-model") not in seen  # no id at all in the blind view


def test_an_unknown_case_refuses_the_whole_file_with_its_line(stimuli, tmp_path):
    path = write(tmp_path, [{"case_id": CASE, "model": "m1", "response": "ok"}, {"case_id": "nope", "model": "m1", "response": "x"}])
    with pytest.raises(ImportFailed) as failed:
        lapse_outputs_import(path=path)
    assert failed.value.errors == ["outputs.jsonl:2: unknown case_id 'nope' (build the stimuli first: lapse_build)"]
    assert not Item.objects.filter(item_set__name="Lapse outputs").exists()


def test_missing_fields_and_duplicates_are_reported_per_line(stimuli, tmp_path):
    path = write(tmp_path, [
        {"case_id": CASE, "model": "m1", "response": "a"},
        {"case_id": CASE, "model": "m1", "response": "b"},
        {"case_id": CASE, "response": "c"},
        "not json",
    ])
    with pytest.raises(ImportFailed) as failed:
        lapse_outputs_import(path=path)
    errors = failed.value.errors
    assert any(e.startswith("outputs.jsonl:2: duplicate output") for e in errors)
    assert any(e.startswith("outputs.jsonl:3: field 'model'") for e in errors)
    assert any(e.startswith("outputs.jsonl:4: invalid JSON") for e in errors)


def test_reimporting_the_same_outputs_changes_nothing_and_a_dry_run_writes_nothing(stimuli, tmp_path):
    path = write(tmp_path, [{"case_id": CASE, "model": "m1", "response": "a"}])
    assert lapse_outputs_import(path=path, dry_run=True)["created"] == 1
    assert not Item.objects.filter(item_set__name="Lapse outputs").exists()
    lapse_outputs_import(path=path)
    again = lapse_outputs_import(path=path)
    assert (again["created"], again["unchanged"]) == (0, 1)


def test_stimuli_keep_the_rendered_prompt_hidden(stimuli):
    stimulus = Item.objects.get(external_id=CASE)
    assert stimulus.hidden["history"].startswith("[Session dated 2025-12-23]")
    assert "Today's date: 2026-08-25" in stimulus.hidden["system"]
    assert set(blind_view(stimulus)) == {"request", "response", "key_fact", "text_released"}
