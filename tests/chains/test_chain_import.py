"""TWIST Track C import: conversation versions, chains as step citations, all-or-nothing files, gate rejects."""

import json
from pathlib import Path

import pytest

from chains.importer import STRUCTURAL_GATE, items_import_twist_c
from goldkey.lib.jsonio import ImportFailed
from items.models import Conversation, Evidence, GenerationReject, Item
from items.selectors import excerpts_for, items_with_excerpts
from items.services import corpus_import_locomo, corpus_import_version
from protocols.twist_c import chain as tc

pytestmark = pytest.mark.django_db
DEMO = Path(__file__).resolve().parents[2] / "demo" / "twist_c"


@pytest.fixture
def versions():
    corpus_import_locomo(path=DEMO / "conv-c.json", external_id="conv-c")
    corpus_import_version(path=DEMO / "conv-c.tc1.json", version_of="conv-c")
    return Conversation.objects.get(external_id="conv-c.tc1")


def _lines() -> list[dict]:
    return [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines() if line.strip()]


def _write(tmp_path, records, name="chains.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_version_is_a_conversation_of_its_own_naming_its_original(versions):
    original = Conversation.objects.get(external_id="conv-c")
    assert versions.version_of == original and original.version_of is None
    assert versions.turns.count() > original.turns.count()


def test_a_version_that_edits_an_original_turn_is_refused_and_nothing_is_written(tmp_path):
    corpus_import_locomo(path=DEMO / "conv-c.json", external_id="conv-c")
    data = json.loads((DEMO / "conv-c.tc1.json").read_text())
    data["session_1"][0]["text"] = "Edited."
    path = tmp_path / "conv-c.tc2.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ImportFailed, match="conv-c.tc2.json:1: turn D1:1: a version keeps every original turn unchanged"):
        corpus_import_version(path=path, version_of="conv-c")
    assert not Conversation.objects.filter(external_id="conv-c.tc2").exists()


def test_a_version_of_an_unknown_conversation_is_refused_naming_the_field():
    with pytest.raises(ImportFailed, match="field 'version_of': unknown conversation 'conv-zz'"):
        corpus_import_version(path=DEMO / "conv-c.tc1.json", version_of="conv-zz")


def test_every_demo_chain_is_imported_with_its_steps_as_citations_in_chain_order(versions):
    report = items_import_twist_c(path=DEMO / "items.jsonl", item_set_name="chains")
    assert report.created == len(_lines()) and not report.gate_rejects
    for line in _lines():
        item = Item.objects.get(external_id=line["id"])
        assert item.kind == "twist_c" and item.conversation == versions and item.family == line["family"]
        assert item.gold_label == tc.relation_of(line["family"])
        cited = list(Evidence.objects.filter(item=item).order_by("position").values_list("role", "turn__dia_id"))
        assert cited == [(tc.STEP_ROLE, s["turn_id"]) for s in line["steps"]]
        assert item.step_values == [s["value"] for s in line["steps"]] and item.superseded == line["superseded"]


def test_re_importing_the_same_file_changes_nothing(versions):
    items_import_twist_c(path=DEMO / "items.jsonl", item_set_name="chains")
    again = items_import_twist_c(path=DEMO / "items.jsonl", item_set_name="chains")
    assert (again.created, again.unchanged) == (0, len(_lines()))
    assert Evidence.objects.filter(role=tc.STEP_ROLE).count() == sum(len(r["steps"]) for r in _lines())


def test_a_malformed_line_refuses_the_whole_file_naming_file_line_and_field(versions, tmp_path):
    records = _lines()
    del records[2]["steps"][1]["value"]
    records[4]["family"] = "C9"
    with pytest.raises(ImportFailed) as refused:
        items_import_twist_c(path=_write(tmp_path, records), item_set_name="chains")
    errors = refused.value.errors
    assert any(e.startswith("chains.jsonl:3: steps[1].value: Field required") for e in errors)
    assert any(e.startswith("chains.jsonl:5: family:") and "C9" in e for e in errors)
    assert not Item.objects.exists()


def test_a_line_naming_a_conversation_that_is_not_its_version_is_refused(versions, tmp_path):
    records = _lines()[:1]
    records[0]["conversation"] = "conv-other"
    with pytest.raises(ImportFailed, match="chains.jsonl:1: conversation_version: 'conv-c.tc1' is not a version of 'conv-other'"):
        items_import_twist_c(path=_write(tmp_path, records), item_set_name="chains")


def test_a_chain_failing_a_gate_is_a_reject_with_its_reasons_and_the_rest_are_imported(versions, tmp_path):
    records = _lines()
    bad = records[0]
    bad["steps"][0]["turn_id"] = "D9:99"  # not in the version
    bad["steps"][1]["value"] = "a value no turn states"
    report = items_import_twist_c(path=_write(tmp_path, records), item_set_name="chains")
    assert report.created == len(records) - 1
    reject = GenerationReject.objects.get(external_id=bad["id"])
    assert reject.dropped_by == STRUCTURAL_GATE
    assert "steps[0]: turn D9:99 is not in conv-c.tc1" in reject.verdict
    assert "steps[1].text: does not state its value" in reject.verdict
    assert [r["id"] for r in report.gate_rejects] == [bad["id"]]


def test_update_steps_out_of_record_order_are_rejected_but_coexisting_facts_are_not(versions, tmp_path):
    records = [r for r in _lines() if r["family"] in ("C1", "HN-C1")]
    for record in records:
        record["steps"].reverse()
        record["superseded"] = [s["value"] for s in record["steps"][:-1]] if record["family"] != "HN-C1" else []
    report = items_import_twist_c(path=_write(tmp_path, records), item_set_name="chains")
    rejected = {r["id"]: r["verdict"] for r in report.gate_rejects}
    assert all(r["family"] == "C1" for r in records if r["id"] in rejected)
    assert all("not strictly ordered" in v for v in rejected.values()) and rejected
    assert Item.objects.filter(family="HN-C1").exists()


def test_excerpts_are_the_step_citations_in_record_order_and_never_another_role(versions):
    items_import_twist_c(path=DEMO / "items.jsonl", item_set_name="chains")
    item = Item.objects.get(family="HN-C1")
    steps = list(Evidence.objects.filter(item=item).order_by("position"))
    # The same turns cited in reverse under another role move nothing: excerpts read the protocol's role.
    Evidence.objects.bulk_create(Evidence(item=item, turn=ev.turn, role="other", position=n)
                                 for n, ev in enumerate(reversed(steps)))
    item = items_with_excerpts(Item.objects.filter(pk=item.pk)).get()
    assert [e["dia_id"] for e in excerpts_for(item)] == [ev.turn.dia_id for ev in sorted(steps, key=lambda ev: ev.turn.order)]


def test_two_citations_may_share_a_position_in_different_roles_but_not_in_one(versions):
    from django.db import IntegrityError, transaction

    items_import_twist_c(path=DEMO / "items.jsonl", item_set_name="chains")
    step = Evidence.objects.filter(role=tc.STEP_ROLE, position=0).first()
    Evidence.objects.create(item=step.item, turn=step.turn, role="evidence", position=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Evidence.objects.create(item=step.item, turn=step.turn, role=tc.STEP_ROLE, position=0)


def test_a_track_b_import_cites_its_turns_in_the_evidence_role(twist_corpus):
    assert set(Evidence.objects.filter(item__item_set=twist_corpus).values_list("role", flat=True)) == {"evidence"}


def test_the_import_command_reports_rejects_and_a_dry_run_writes_nothing(versions, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    records = _lines()
    records[0]["steps"][0]["turn_id"] = "D9:99"
    path = _write(tmp_path, records)
    out = StringIO()
    call_command("import_twist_c", str(path), "--item-set", "chains", "--dry-run", stdout=out)
    assert "Dry run: would import" in out.getvalue() and records[0]["id"] in out.getvalue()
    assert not Item.objects.exists() and not GenerationReject.objects.exists()


def _limit(model, field: str) -> int:
    return model._meta.get_field(field).max_length


def test_an_id_over_the_item_id_column_is_refused_naming_line_and_field_and_nothing_is_written(versions, tmp_path):
    # The chain schema allows longer ids than the item's column holds: the column is the limit.
    n = _limit(Item, "external_id")
    first, second = _lines()[:2]
    path = _write(tmp_path, [first, {**second, "id": "c" * (n + 1)}])
    with pytest.raises(ImportFailed) as failed:
        items_import_twist_c(path=path, item_set_name="chains")
    assert f"chains.jsonl:2: id: a text of {n + 1} characters (at most {n})" in failed.value.errors
    assert not Item.objects.exists() and not GenerationReject.objects.exists()


def test_an_id_of_exactly_the_item_id_column_imports(versions, tmp_path):
    n = _limit(Item, "external_id")
    items_import_twist_c(path=_write(tmp_path, [{**_lines()[0], "id": "c" * n}]), item_set_name="chains")
    assert Item.objects.get().external_id == "c" * n


def test_a_chain_with_many_defects_is_kept_as_a_reject_with_its_verdict_cut_to_the_column(versions, tmp_path):
    record = _lines()[0]
    record["steps"] = [{**step, "turn_id": "D9:" + "9" * 30, "text": "x"} for step in record["steps"]]
    report = items_import_twist_c(path=_write(tmp_path, [record]), item_set_name="chains")
    verdict = GenerationReject.objects.get().verdict
    assert len(report.gate_rejects[0]["verdict"]) > _limit(GenerationReject, "verdict") == len(verdict)
    assert verdict.endswith("…") and report.gate_rejects[0]["verdict"].startswith(verdict[:-1])
    # Imported again, the same cut verdict is found unchanged.
    assert items_import_twist_c(path=_write(tmp_path, [record]), item_set_name="chains").rejects_unchanged == 1
