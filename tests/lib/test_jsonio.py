"""goldkey/lib/jsonio.py read_json_array: a JSON array read an element at a time, whatever the chunk size."""

import json

import pytest

from goldkey.lib.jsonio import ErrorLog, read_json_array

ELEMENTS = [{"a": 1, "text": "x" * 30, "nested": [1, 2, {"b": None}]}, 12345, "a string, with ] and , inside",
            [], {"unicode": "é ü 漢字"}, 3.5, True]


def read(path, chunk):
    log = ErrorLog()
    return list(read_json_array(path, log, chunk=chunk)), log.errors


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_elements_and_their_lines_are_the_ones_json_loads_gives_whatever_the_chunk(tmp_path, chunk):
    path = tmp_path / "a.json"
    text = json.dumps(ELEMENTS, indent=1, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    rows, errors = read(path, chunk)
    assert errors == []
    assert [value for _, value in rows] == json.loads(text)
    # Each element's line is the line its text starts on.
    for (line, _), expected in zip(rows, ELEMENTS, strict=True):
        first = json.dumps(expected, indent=1, ensure_ascii=False).splitlines()[0]
        assert lines[line - 1].strip().startswith(first.strip())


def test_an_empty_array_yields_nothing_and_a_bom_is_skipped(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b"\xef\xbb\xbf [ ] \n")
    assert read(path, 3) == ([], [])


@pytest.mark.parametrize(("text", "error"), [
    ('{"a": 1}', "a.json:1: expected a JSON array"),
    ("", "a.json:1: expected a JSON array"),
    ('[\n{"a": 1},\n{"a": 2}\n', "a.json:4: invalid JSON: the array is not closed"),
    ('[\n{"a": 1},\n{"a": }\n]', "a.json:3: invalid JSON: Expecting value"),
    ('[\n{"a": 1}\n{"a": 2}]', "a.json:3: invalid JSON: expected ',' or ']' after an element"),
    ('[{"a": 1}]\n[2]', "a.json:2: invalid JSON: text after the array"),
])
def test_a_broken_array_is_named_by_file_and_line(tmp_path, text, error):
    path = tmp_path / "a.json"
    path.write_text(text)
    for chunk in (1, 5, 1 << 20):
        assert read(path, chunk)[1] == [error]


def test_a_refused_element_is_logged_and_the_others_are_still_read(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[\n{"a": 1},\n{"b": NaN},\n{"c": 3}\n]')
    rows, errors = read(path, 4)
    assert [value for _, value in rows] == [{"a": 1}, {"c": 3}]
    assert len(errors) == 1 and errors[0].startswith("a.json:3: ") and "NaN" in errors[0]


def test_text_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'[\n{"a": "\xff"}]')
    rows, errors = read(path, 1 << 20)
    assert rows == [] and errors == ["a.json:1: not UTF-8 text (invalid start byte)"]
