"""Hostile input through every JSON reader: deep nesting, NaN, Infinity, over-long texts, a 10^6-turn evidence
list and invalid UTF-8 mid-file each end in a message naming FILE:LINE (and the field), never a traceback,
and nothing is written."""

import json

import pytest

from goldkey.lib.jsonio import ImportFailed
from goldkey.lib.jsonsafe import MAX_JSON_DEPTH, MAX_JSON_TEXT
from items.parsing import MAX_EVIDENCE
from items.services import corpus_import_locomo, items_import_lapse, items_import_twist
from items.upload_services import Upload, upload_import
from tests.items.conftest import locomo_conversation, table_counts, twist_record

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
GOOD = json.dumps(twist_record(1))


def _record_with(raw_value: str) -> str:
    """A valid TWIST line whose free-form 'rationale' is replaced by raw JSON text."""
    return GOOD[:-1] + f', "rationale_extra": {raw_value}' + "}"


HOSTILE_LINES = {
    "deep nesting": (DEEP, f"nested more than {MAX_JSON_DEPTH} levels deep"),
    "NaN": (_record_with("NaN"), "NaN is not a JSON number"),
    "Infinity": (_record_with("Infinity"), "Infinity is not a JSON number"),
    "-Infinity": (_record_with("[1, -Infinity]"), "-Infinity is not a JSON number"),
    "a long text": (json.dumps(twist_record(2, draft="x" * (MAX_JSON_TEXT + 1))), "draft: a text of 100,001 characters"),
    "10^6 evidence ids": (
        json.dumps(twist_record(2, evidence=["D1:1"] * 1_000_000)),
        f"field 'evidence' lists 1,000,000 turns; an item cites at most {MAX_EVIDENCE}",
    ),
}


def _lines(tmp_path, name, lines: list[str | bytes]):
    path = tmp_path / name
    path.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines) + b"\n")
    return path


@pytest.mark.parametrize("case", HOSTILE_LINES, ids=list(HOSTILE_LINES))
def test_the_twist_importer_names_the_line_and_writes_nothing(small_corpus, tmp_path, case):
    line, message = HOSTILE_LINES[case]
    path = _lines(tmp_path, "items.jsonl", [GOOD, line])
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        items_import_twist(path=path, item_set_name="hostile")
    assert len(caught.value.errors) == 1
    assert caught.value.errors[0].startswith("items.jsonl:2")
    assert message in caught.value.errors[0]
    assert table_counts() == before


@pytest.mark.parametrize("case", HOSTILE_LINES, ids=list(HOSTILE_LINES))
def test_the_admin_upload_names_the_line_and_writes_nothing(small_corpus, case):
    line, message = HOSTILE_LINES[case]
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        upload_import(kind="twist", upload=Upload("items.jsonl", [GOOD.encode(), b"\n", line.encode(), b"\n"]),
                      item_set_name="hostile")
    assert caught.value.errors[0].startswith("items.jsonl:2") and message in caught.value.errors[0]
    assert table_counts() == before


def test_invalid_utf8_mid_file_names_its_line(small_corpus, tmp_path):
    path = _lines(tmp_path, "items.jsonl", [GOOD, json.dumps(twist_record(2)), b'{"id": "\xff\xfe"}'])
    with pytest.raises(ImportFailed) as caught:
        items_import_twist(path=path, item_set_name="hostile")
    assert caught.value.errors == ["items.jsonl:3: not UTF-8 text (invalid start byte at byte 8)"]


LAPSE = '{"gid": "g1", "query": "q", "response": "r", "witness": "w", "judge_score": %s}'


@pytest.mark.parametrize(
    ("value", "message"),
    [("NaN", "NaN is not a JSON number (use null, or a number)"),
     ("Infinity", "Infinity is not a JSON number (use null, or a number)"),
     ("1e999999", "1e999999 is too large for a number")],
)  # fmt: skip
def test_the_lapse_importer_refuses_what_jsonb_cannot_store(tmp_path, value, message):
    path = _lines(tmp_path, "lapse.jsonl", [LAPSE % "0.5", LAPSE.replace("g1", "g2") % value])
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        items_import_lapse(path=path, item_set_name="lapse hostile")
    assert caught.value.errors == [f"lapse.jsonl:2: {message}"]
    assert table_counts() == before


def test_a_valid_lapse_line_with_a_number_still_imports(tmp_path):
    report = items_import_lapse(path=_lines(tmp_path, "lapse.jsonl", [LAPSE % "1.5e3"]), item_set_name="lapse ok")
    assert report.created == 1


def _locomo(tmp_path, text: str):
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "26.json").write_text(text)
    return folder


def test_a_deeply_nested_locomo_document_names_the_line(tmp_path):
    doc = json.dumps(locomo_conversation(), indent=1)
    text = doc[:-1] + ',\n "extra":\n' + "[" * 50_000 + "]" * 50_000 + "\n}"
    with pytest.raises(ImportFailed) as caught:
        corpus_import_locomo(path=_locomo(tmp_path, text))
    line = text[: text.index("[" * (MAX_JSON_DEPTH - 1))].count("\n") + 1
    assert caught.value.errors == [f"26.json:{line}: nested more than {MAX_JSON_DEPTH} levels deep"]


def test_nan_in_a_locomo_document_names_its_line(tmp_path):
    doc = json.dumps(locomo_conversation(), indent=1).replace('"speaker_b": "Bob"', '"speaker_b": NaN')
    with pytest.raises(ImportFailed) as caught:
        corpus_import_locomo(path=_locomo(tmp_path, doc))
    line = doc[: doc.index("NaN")].count("\n") + 1
    assert caught.value.errors == [f"26.json:{line}: NaN is not a JSON number (use null, or a number)"]


def test_a_long_text_in_a_locomo_document_names_the_field_and_its_line(tmp_path):
    doc = json.dumps(locomo_conversation(), indent=1).replace('"speaker_b": "Bob"', f'"speaker_b": "{"b" * 200_000}"')
    with pytest.raises(ImportFailed) as caught:
        corpus_import_locomo(path=_locomo(tmp_path, doc))
    line = doc[: doc.index('"speaker_b"')].count("\n") + 1
    assert caught.value.errors == [f"26.json:{line}: speaker_b: a text of 200,000 characters (at most 100,000)"]


def test_invalid_utf8_mid_locomo_document_names_its_line(tmp_path):
    doc = json.dumps(locomo_conversation(), indent=1).encode()
    at = doc.index(b'"Bob"') + 1
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "26.json").write_bytes(doc[:at] + b"\xff" + doc[at:])
    with pytest.raises(ImportFailed) as caught:
        corpus_import_locomo(path=folder)
    line = doc[:at].count(b"\n") + 1
    assert line > 1
    assert caught.value.errors == [f"26.json:{line}: not UTF-8 text (invalid start byte at byte {at})"]
