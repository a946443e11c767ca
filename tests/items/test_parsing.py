"""The pure import validators: no database, every message names FILE:LINE and the field."""

import json
from datetime import UTC, datetime

import pytest

from goldkey.lib.jsonio import MAX_ERRORS, ErrorLog, ImportFailed, json_line, read_jsonl
from items.parsing import (
    batch_of,
    parse_lapse_record,
    parse_locomo_date,
    parse_locomo_path,
    parse_reject_record,
    parse_twist_record,
)
from tests.items.conftest import locomo_conversation, twist_record, write_jsonl

# --- session dates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("9:55 am on 22 October, 2023", datetime(2023, 10, 22, 9, 55, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("7:00 pm on 3 Jan, 2024", datetime(2024, 1, 3, 19, 0, tzinfo=UTC)),
        ("  10:37 am on 27 June, 2023 ", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
    ],
)
def test_locomo_session_dates_parse_to_aware_datetimes(raw, expected):
    assert parse_locomo_date(raw) == expected


@pytest.mark.parametrize("raw", ["", "yesterday", "2023-05-08", "25:00 pm on 8 May, 2023", "1:56 pm on 31 February, 2023"])
def test_unparseable_session_dates_give_none(raw):
    assert parse_locomo_date(raw) is None


def test_every_released_locomo_session_date_parses(shared_data):
    folder = shared_data("locomo10")
    raws = [
        value
        for file in sorted(folder.glob("*.json"))
        for key, value in json.loads(file.read_text()).items()
        if key.endswith("_date_time")
    ]
    assert raws
    assert [raw for raw in raws if parse_locomo_date(raw) is None] == []


# --- batches ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "external_id, batch",
    [
        ("conv-26:v1b1", "v1b"),
        ("conv-26:v1b13", "v1b"),
        ("conv-30:v1c4", "v1c"),
        ("conv-41:v1d120", "v1d"),
        ("conv-26:b0", "b"),
        ("conv-26:b152", "b"),
        ("no-colon", ""),
    ],
)
def test_generation_batch_is_derived_from_the_id(external_id, batch):
    assert batch_of(external_id) == batch


# --- JSONL reading ---------------------------------------------------------------------------


def test_invalid_json_lines_are_reported_with_their_line_and_the_rest_still_read(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"a": 1}, "{not json", "", "[1, 2]", {"b": 2}])
    log = ErrorLog()
    rows = list(read_jsonl(path, log))
    assert rows == [(1, {"a": 1}), (5, {"b": 2})]
    assert log.errors[0].startswith("x.jsonl:2: invalid JSON")
    assert log.errors[1] == "x.jsonl:4: expected a JSON object, got list"


def test_a_line_that_is_not_utf8_is_reported_with_its_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    log = ErrorLog()
    assert list(read_jsonl(path, log)) == [(1, {"a": 1})]
    assert log.errors[0].startswith("x.jsonl:2: not UTF-8")


def test_a_missing_file_is_refused_naming_the_file(tmp_path):
    with pytest.raises(ImportFailed, match="nothing.jsonl: cannot be read"):
        list(read_jsonl(tmp_path / "nothing.jsonl", ErrorLog()))


def test_the_error_log_stops_at_its_limit_and_says_so():
    log = ErrorLog()
    for n in range(MAX_ERRORS + 5):
        log.add(f"f:{n}", "wrong")
    assert len(log.errors) == MAX_ERRORS and log.truncated
    with pytest.raises(ImportFailed) as caught:
        log.raise_if_any()
    assert caught.value.errors == log.errors
    assert f"stopped after {MAX_ERRORS} errors" in caught.value.message


# --- TWIST records ---------------------------------------------------------------------------


def _twist_errors(record) -> list[str]:
    log = ErrorLog()
    parse_twist_record(record, "t.jsonl", 7, log)
    return log.errors


def test_a_valid_v1_record_parses_with_its_line():
    log = ErrorLog()
    item = parse_twist_record(twist_record(evidence=["D1:1", "D2:3"]), "t.jsonl", 7, log)
    assert log.errors == []
    assert (item.line, item.external_id, item.evidence, item.history_turns) == (7, "conv-1:v1b1", ["D1:1", "D2:3"], 8)


def test_a_v0_record_without_family_quote_or_history_parses():
    record = twist_record()
    for key in ("family", "contradicted_quote", "history_turns"):
        del record[key]
    log = ErrorLog()
    item = parse_twist_record(record, "t.jsonl", 1, log)
    assert log.errors == [] and item.family == "" and item.history_turns is None


@pytest.mark.parametrize("field", ["id", "conv", "speaker", "type", "draft", "evidence"])
def test_a_missing_required_twist_field_is_named_with_file_and_line(field):
    record = twist_record()
    del record[field]
    assert f"t.jsonl:7: missing field '{field}'" in _twist_errors(record)


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("draft", 42, "field 'draft' must be a string, got int"),
        ("type", "contradiction", "field 'type' is 'contradiction'"),
        ("evidence", "D1:1", "field 'evidence' must be a list"),
        ("evidence", [], "field 'evidence' is empty"),
        ("evidence", ["1:1"], "field 'evidence': '1:1' is not a turn id"),
        ("history_turns", "419", "field 'history_turns' must be a non-negative integer"),
        ("history_turns", True, "field 'history_turns' must be a non-negative integer"),
        ("family", ["B1"], "field 'family' must be a string, got list"),
        ("id", "conv-2:v1b1", "field 'id': 'conv-2:v1b1' does not belong to conversation 'conv-1'"),
    ],
)
def test_a_mistyped_twist_field_is_named_with_file_and_line(field, value, fragment):
    errors = _twist_errors(twist_record(**{field: value}))
    assert len(errors) == 1
    assert errors[0].startswith("t.jsonl:7: ") and fragment in errors[0]


def test_every_problem_of_one_record_is_reported():
    errors = _twist_errors(twist_record(draft=None, type="x", evidence=["bad"], history_turns=-1))
    assert len(errors) == 4


def test_a_reject_keeps_its_verdict_and_excerpts_and_drops_private_fields_from_the_record():
    record = twist_record(_evidence_text=["[8 May, 2023] Ann: hi"], _verdict="contradicts=True claim_stated=False", _dropped_by="verify")
    log = ErrorLog()
    reject = parse_reject_record(record, "r.jsonl", 3, log)
    assert log.errors == []
    assert (reject.source, reject.line, reject.verdict, reject.dropped_by) == ("r.jsonl", 3, record["_verdict"], "verify")
    assert reject.evidence_text == ["[8 May, 2023] Ann: hi"]
    assert not any(key.startswith("_") for key in reject.record)


def test_a_reject_without_a_verdict_is_refused():
    log = ErrorLog()
    assert parse_reject_record(twist_record(_dropped_by="verify"), "r.jsonl", 3, log) is None
    assert log.errors == ["r.jsonl:3: missing field '_verdict'"]


# --- Lapse records ---------------------------------------------------------------------------


def test_a_lapse_battery_record_keeps_every_non_visible_field_hidden():
    record = {"battery_id": "gb-1", "arm": "behavioral", "query": "q", "response": "r", "witness": "Kilnford Studio",
              "gold": "HEDGE", "cascade": "HEDGE", "form": "bound"}
    log = ErrorLog()
    item = parse_lapse_record(record, "b.jsonl", 2, log)
    assert (item.external_id, item.request, item.response, item.key_fact) == ("gb-1", "q", "r", "Kilnford Studio")
    assert item.hidden == {"arm": "behavioral", "gold": "HEDGE", "cascade": "HEDGE", "form": "bound"}


def test_a_lapse_gold_set_record_is_known_by_its_gid():
    log = ErrorLog()
    item = parse_lapse_record({"gid": "g001", "query": "q", "response": "", "witness": "w"}, "g.jsonl", 1, log)
    assert log.errors == [] and item.external_id == "g001" and item.hidden == {}


def test_a_lapse_record_without_an_id_is_refused_naming_both_id_fields():
    log = ErrorLog()
    assert parse_lapse_record({"query": "q", "response": "r", "witness": "w"}, "g.jsonl", 4, log) is None
    assert log.errors == ["g.jsonl:4: missing field 'gid' (gold-set items) or 'battery_id' (scorer battery)"]


# --- LoCoMo ----------------------------------------------------------------------------------


def test_json_line_finds_where_a_nested_value_starts():
    text = json.dumps({"a": 1, "b": [{"x": 1}, {"y": [1, 2]}]}, indent=2)
    lines = text.splitlines()
    line = json_line(text, ("b", 1, "y"))
    assert '"y"' in lines[line - 1]
    assert json_line(text, ()) == 1
    assert json_line(text, ("missing",)) >= 1


def test_a_folder_of_conversation_files_is_named_by_file(tmp_path):
    (tmp_path / "26.json").write_text(json.dumps(locomo_conversation()))
    (tmp_path / "3.json").write_text(json.dumps(locomo_conversation("Cy", "Di")))
    (tmp_path / "notes.txt").write_text("ignored")
    log = ErrorLog()
    parsed = parse_locomo_path(tmp_path, log)
    assert log.errors == []
    assert [c.external_id for c in parsed] == ["conv-3", "conv-26"]
    assert [c.turn_count for c in parsed] == [8, 8]


def test_the_single_list_locomo10_form_is_named_by_sample_id(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([
        {"sample_id": "conv-26", "conversation": locomo_conversation(), "qa": []},
        {"sample_id": "conv-30", "conversation": locomo_conversation("Cy", "Di", sessions=3), "qa": []},
    ]))
    log = ErrorLog()
    parsed = parse_locomo_path(path, log)
    assert log.errors == []
    assert [(c.external_id, c.speaker_a, len(c.sessions)) for c in parsed] == [("conv-26", "Ann", 2), ("conv-30", "Cy", 3)]
    assert parsed[0].sessions[1].date_time == datetime(2023, 5, 4, 14, 5, tzinfo=UTC)


def test_a_bad_turn_in_a_conversation_file_is_reported_with_its_line_and_field(tmp_path):
    doc = locomo_conversation()
    del doc["session_2"][2]["speaker"]
    path = tmp_path / "26.json"
    path.write_text(json.dumps(doc, indent=2))
    log = ErrorLog()
    parse_locomo_path(tmp_path, log)
    assert len(log.errors) == 1
    where, message = log.errors[0].rsplit(": ", 1)
    assert message == "missing field 'speaker'"
    file_line, json_path = where.split(": ", 1)
    line = int(file_line.removeprefix("26.json:"))
    assert json_path == "session_2[2]"
    assert '"dia_id": "D2:3"' in "\n".join(path.read_text().splitlines()[line - 1 : line + 3])


def test_an_unparseable_session_date_is_refused_with_its_line(tmp_path):
    doc = locomo_conversation()
    doc["session_2_date_time"] = "sometime in May"
    (tmp_path / "26.json").write_text(json.dumps(doc, indent=2))
    log = ErrorLog()
    parse_locomo_path(tmp_path, log)
    assert len(log.errors) == 1
    assert log.errors[0].startswith("26.json:") and "field 'session_2_date_time' is 'sometime in May'" in log.errors[0]


def test_duplicate_and_misplaced_dia_ids_are_refused(tmp_path):
    doc = locomo_conversation()
    doc["session_1"][1]["dia_id"] = "D1:1"
    doc["session_2"][0]["dia_id"] = "D7:9"
    (tmp_path / "26.json").write_text(json.dumps(doc, indent=2))
    log = ErrorLog()
    parse_locomo_path(tmp_path, log)
    assert any("duplicate dia_id 'D1:1'" in e for e in log.errors)
    assert any("'D7:9' is in session_2, not session 7" in e for e in log.errors)


def test_invalid_json_in_a_conversation_file_is_reported_with_its_line(tmp_path):
    (tmp_path / "26.json").write_text('{\n  "speaker_a": "Ann",\n  "speaker_b": oops\n}')
    log = ErrorLog()
    parse_locomo_path(tmp_path, log)
    assert log.errors == ["26.json:3: invalid JSON: Expecting value (column 16)"]


def test_a_folder_without_conversation_files_is_refused(tmp_path):
    with pytest.raises(ImportFailed, match="no conversation files"):
        parse_locomo_path(tmp_path, ErrorLog())


@pytest.mark.parametrize("name", ["track_b_items_v1_candidates.jsonl", "track_b_items_v0.jsonl"])
def test_the_fast_path_parses_released_records_exactly_as_the_full_checks_do(shared_data, monkeypatch, name):
    import items.parsing as parsing

    records = list(read_jsonl(shared_data("twist-v1", name), ErrorLog()))
    fast = [parse_twist_record(record, name, line, ErrorLog()) for line, record in records]
    monkeypatch.setattr(parsing, "_valid_twist_fast", lambda record: None)
    log = ErrorLog()
    full = [parse_twist_record(record, name, line, log) for line, record in records]
    assert log.errors == [] and None not in fast
    assert fast == full
