"""The import commands and goldkey_status: same services, human summary, --json, --dry-run."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from items.models import Conversation, Item, ItemSet
from tests.items.conftest import REJECTS, V0, V1, table_counts, twist_record

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_goldkey_status_json_reports_the_released_data_in_the_issue_shape(shared_data):
    run("import_locomo", str(shared_data("locomo10")))
    run("import_twist", str(shared_data("twist-v1", V1)), "--item-set", "TWIST Track B v1 candidates",
        "--rejects", str(shared_data("twist-v1", REJECTS)))
    run("import_twist", str(shared_data("twist-v1", V0)), "--item-set", "TWIST Track B v0 pilot")
    run("import_lapse", str(shared_data("lapse-gold", "gold_battery.jsonl")), "--item-set", "Lapse scorer battery")

    status = json.loads(run("goldkey_status", "--json"))

    assert set(status) == {"conversations", "turns", "items", "items_by_type", "item_sets"}
    assert status["conversations"] == 10
    assert status["turns"] == sum(
        len(v)
        for f in shared_data("locomo10").glob("*.json")
        for k, v in json.loads(f.read_text()).items()
        if k.startswith("session_") and isinstance(v, list)
    )
    assert status["items"] == {"twist": 200 + 153, "lapse": 388, "judged": 0, "twist_c": 0}
    v0_types = [json.loads(line)["type"] for line in shared_data("twist-v1", V0).read_text().splitlines() if line.strip()]
    assert status["items_by_type"] == {
        "aligned": 62 + v0_types.count("aligned"),
        "contradicting": 74 + v0_types.count("contradicting"),
        "hard_negative": 64 + v0_types.count("hard_negative"),
    }
    assert status["item_sets"] == {
        "Lapse scorer battery": 388,
        "TWIST Track B v0 pilot": 153,
        "TWIST Track B v1 candidates": 200,
    }


def test_goldkey_status_on_an_empty_database_reports_zeros():
    status = json.loads(run("goldkey_status", "--json"))
    assert status == {"conversations": 0, "turns": 0, "items": {"twist": 0, "lapse": 0, "judged": 0, "twist_c": 0}, "items_by_type": {}, "item_sets": {}}


def test_goldkey_status_prints_a_human_summary(small_corpus, twist_file):
    run("import_twist", str(twist_file([twist_record(1)])), "--item-set", "demo")
    text = run("goldkey_status")
    assert "2 conversations, 16 turns" in text
    assert "items by kind: TWIST Track B draft 1, Lapse output 0" in text and "TWIST Track C chain query 0" in text
    assert "item set 'demo': 1" in text


def test_import_commands_print_what_they_did(locomo_dir, twist_file):
    assert run("import_locomo", str(locomo_dir)) == "Imported 2 conversation(s); 0 already present.\n"
    assert run("import_locomo", str(locomo_dir)) == "Imported 0 conversation(s); 2 already present.\n"
    path = twist_file([twist_record(1), twist_record(2)])
    assert run("import_twist", str(path)) == "Imported 2 item(s) into 'TWIST track_b_test'; 0 already present.\n"


def test_import_twist_json_reports_counts_for_scripts(small_corpus, twist_file):
    result = json.loads(run("import_twist", str(twist_file([twist_record(1)])), "--item-set", "s", "--json"))
    assert result == {"created": 1, "unchanged": 0, "rejects_created": 0, "rejects_unchanged": 0, "gate_rejects": [],
                      "item_set": "s", "dry_run": False}


def test_import_twist_dry_run_writes_nothing(small_corpus, twist_file):
    before = table_counts()
    text = run("import_twist", str(twist_file([twist_record(1), twist_record(2)])), "--item-set", "s", "--dry-run")
    assert text.startswith("Dry run: would import 2 item(s) into 's'")
    assert table_counts() == before
    assert not ItemSet.objects.exists()


def test_import_locomo_dry_run_writes_nothing(db, locomo_dir):
    before = table_counts()
    assert run("import_locomo", str(locomo_dir), "--dry-run").startswith("Dry run: would import 2 conversation(s)")
    assert table_counts() == before


def test_import_lapse_dry_run_writes_nothing(db, tmp_path):
    path = tmp_path / "lapse.jsonl"
    path.write_text(json.dumps({"gid": "g1", "query": "q", "response": "r", "witness": "w"}) + "\n")
    before = table_counts()
    result = json.loads(run("import_lapse", str(path), "--dry-run", "--json"))
    assert (result["created"], result["dry_run"], result["item_set"]) == (1, True, "Lapse lapse")
    assert table_counts() == before


def test_a_refused_import_fails_the_command_with_every_file_line_error(small_corpus, twist_file):
    path = twist_file([twist_record(1, conv="conv-99"), twist_record(2, speaker="Cy")])
    before = table_counts()
    with pytest.raises(CommandError) as caught:
        run("import_twist", str(path))
    message = str(caught.value)
    assert "track_b_test.jsonl:1: field 'conv': unknown conversation 'conv-99'" in message
    assert "track_b_test.jsonl:2: field 'speaker': 'Cy' is not a participant of conv-1" in message
    assert table_counts() == before


def test_a_candidate_citing_an_unknown_turn_is_reported_as_a_gate_reject(small_corpus, twist_file):
    path = twist_file([twist_record(1), twist_record(2, evidence=["D9:9"])])
    text = run("import_twist", str(path))
    assert text.startswith("Imported 1 item(s)")
    assert "Rejected by the gates (kept as rejects, with their verdict): 1 — line 2: conv-1:v1b2: evidence_ids: " in text


def test_import_twist_keeps_the_rejects_given_with_the_item_set(small_corpus, twist_file, tmp_path):
    rejects = tmp_path / "rejects.jsonl"
    rejects.write_text(json.dumps(twist_record(9, _verdict="contradicts=True claim_stated=False", _dropped_by="verify")) + "\n")
    text = run("import_twist", str(twist_file([twist_record(1)])), "--item-set", "s", "--rejects", str(rejects))
    assert "Rejects: 1 new, 0 already present." in text
    assert ItemSet.objects.get(name="s").rejects.get().verdict == "contradicts=True claim_stated=False"
    assert Item.objects.count() == 1


def test_a_missing_path_is_refused_naming_it(tmp_path):
    with pytest.raises(CommandError, match="nowhere.json: cannot be read"):
        run("import_locomo", str(tmp_path / "nowhere.json"))
    with pytest.raises(CommandError, match="nowhere.jsonl: cannot be read"):
        run("import_twist", str(tmp_path / "nowhere.jsonl"))


def test_a_single_conversation_file_imports_as_its_numbered_conversation(locomo_dir):
    assert run("import_locomo", str(locomo_dir / "2.json")).startswith("Imported 1 conversation(s)")
    assert list(Conversation.objects.values_list("external_id", "speaker_a")) == [("conv-2", "Cy")]


def test_import_twist_with_conversations_imports_both_in_one_command(db, locomo_dir, twist_file):
    path = twist_file([twist_record(1), twist_record(2, conv="conv-2", speaker="Cy")])
    text = run("import_twist", str(path), "--item-set", "s", "--conversations", str(locomo_dir))
    assert text == "Imported 2 item(s) into 's'; 0 already present. Conversations: 2 new, 0 already present.\n"
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["conv-1", "conv-2"]
    assert sorted(Item.objects.values_list("external_id", "conversation__external_id")) == [
        ("conv-1:v1b1", "conv-1"), ("conv-2:v1b2", "conv-2")]
    again = json.loads(run("import_twist", str(path), "--item-set", "s", "--conversations", str(locomo_dir), "--json"))
    assert (again["created"], again["unchanged"], again["conversations"]) == (0, 2, {"created": 0, "unchanged": 2})


def test_import_twist_records_the_conversations_under_the_licence_given_for_them(db, locomo_dir, twist_file):
    path = twist_file([twist_record(1)])
    run("import_twist", str(path), "--item-set", "s", "--license", "cc-by-4.0",
        "--conversations", str(locomo_dir), "--conversations-license", "mit")
    assert set(Conversation.objects.values_list("license", flat=True)) == {"mit"}
    assert ItemSet.objects.get(name="s").license == "cc-by-4.0"


def test_a_conversations_licence_that_is_no_licence_id_is_refused_naming_the_field(db, locomo_dir, twist_file):
    before = table_counts()
    with pytest.raises(CommandError, match="field 'license': 'CC BY' is not a licence id"):
        run("import_twist", str(twist_file([twist_record(1)])), "--conversations", str(locomo_dir),
            "--conversations-license", "CC BY")
    assert table_counts() == before


def test_a_conversations_licence_without_conversations_is_refused(db, twist_file):
    with pytest.raises(CommandError, match="--conversations-license names the licence of the --conversations folder"):
        run("import_twist", str(twist_file([twist_record(1)])), "--conversations-license", "mit")
    assert not Item.objects.exists()


def test_import_twist_with_conversations_dry_run_writes_neither(db, locomo_dir, twist_file):
    before = table_counts()
    result = json.loads(run("import_twist", str(twist_file([twist_record(1)])), "--item-set", "s",
                            "--conversations", str(locomo_dir), "--dry-run", "--json"))
    assert (result["created"], result["dry_run"], result["conversations"]) == (1, True, {"created": 2, "unchanged": 0})
    assert table_counts() == before


def test_a_refused_item_file_leaves_the_conversations_given_with_it_unwritten(db, locomo_dir, twist_file):
    path = twist_file([twist_record(1), twist_record(2, speaker="Zed")])
    before = table_counts()
    with pytest.raises(CommandError, match="track_b_test.jsonl:2: field 'speaker': 'Zed' is not a participant of conv-1"):
        run("import_twist", str(path), "--conversations", str(locomo_dir))
    assert table_counts() == before
    assert not Conversation.objects.exists()


def test_a_refused_conversation_file_leaves_the_items_given_with_it_unwritten(db, locomo_dir, twist_file):
    (locomo_dir / "2.json").write_text('{"speaker_a": "Cy"', encoding="utf-8")
    before = table_counts()
    with pytest.raises(CommandError, match="2.json:1"):
        run("import_twist", str(twist_file([twist_record(1)])), "--conversations", str(locomo_dir))
    assert table_counts() == before
