"""goldkey.lib.jsonsafe: the one checked JSON reader, and the API's JSON bodies going through it."""

import json

import pytest

from goldkey.lib.jsonsafe import MAX_JSON_DEPTH, JsonRefused, json_loads_checked, storable


@pytest.mark.parametrize(
    ("text", "message", "label"),
    [
        ('{"a": NaN}', "NaN is not a JSON number (use null, or a number)", ""),
        ('{"a": [1, -Infinity]}', "-Infinity is not a JSON number (use null, or a number)", ""),
        ('{"a": 1e400}', "1e400 is too large for a number", ""),
        ("[" * 100 + "]" * 100, f"nested more than {MAX_JSON_DEPTH} levels deep", "[0]" * MAX_JSON_DEPTH),
        ("[" * 200_000 + "]" * 200_000, f"nested more than {MAX_JSON_DEPTH} levels deep", ""),
        ('{"values": {"q1note": "' + "n" * 100_001 + '"}}', "a text of 100,001 characters (at most 100,000)", "values.q1note"),
    ],
)
def test_hostile_json_is_refused_with_a_message_and_the_field(text, message, label):
    with pytest.raises(JsonRefused) as caught:
        json_loads_checked(text)
    assert caught.value.message == message
    assert caught.value.label == label


def test_an_unrecoverable_depth_still_says_where_it_starts():
    text = '{"ok": "[[[[", "deep": ' + "[" * 200_000 + "]" * 200_000 + "}"
    with pytest.raises(JsonRefused) as caught:
        json_loads_checked(text)
    assert caught.value.offset == text.index("[" * 10) + MAX_JSON_DEPTH - 1


@pytest.mark.parametrize("text", ['{"a": "NaN"}', '{"a": 1.5e300}', "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, '"Infinity"'])
def test_ordinary_json_is_read_as_json_loads_reads_it(text):
    assert json_loads_checked(text) == json.loads(text)


def test_syntax_errors_stay_decode_errors():
    with pytest.raises(json.JSONDecodeError):
        json_loads_checked('{"a": }')


def test_one_level_past_the_limit_is_refused_however_short_the_text():
    text = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JsonRefused) as caught:
        json_loads_checked(text)
    assert caught.value.label == "[0]" * MAX_JSON_DEPTH


@pytest.mark.parametrize(("text", "label"), [('{"a": "x\\u0000"}', "a"), ('["ok", "\\ud800"]', "[1]")])
def test_a_short_text_with_an_escaped_nul_or_surrogate_is_refused_naming_it(text, label):
    with pytest.raises(JsonRefused) as caught:
        json_loads_checked(text)
    assert caught.value.label == label


def test_a_byte_order_mark_is_refused_as_json_loads_refuses_it():
    with pytest.raises(json.JSONDecodeError) as plain:
        json.loads('\ufeff{"a": 1}')
    with pytest.raises(json.JSONDecodeError) as caught:
        json_loads_checked('\ufeff{"a": 1}')
    assert str(caught.value) == str(plain.value)


def test_a_long_document_of_short_texts_with_one_escaped_nul_deep_inside_is_refused_naming_it():
    turns = [{"speaker": "A", "text": "x" * 50} for _ in range(3000)]
    turns[2500]["text"] = "x\u0000"
    text = json.dumps({"session_1": turns})
    with pytest.raises(JsonRefused) as caught:
        json_loads_checked(text)
    assert caught.value.label == "session_1[2500].text"


def test_a_long_document_of_short_texts_is_read_as_json_loads_reads_it():
    text = json.dumps({"session_1": [{"speaker": "A", "text": f"turn {n}", "ids": [n, [n]]} for n in range(20_000)]})
    assert len(text) > 100_000
    assert json_loads_checked(text) == json.loads(text)


def test_storable_drops_nul_and_lone_surrogates_and_keeps_the_rest():
    assert storable("gpt-4o\x00-2024") == "gpt-4o-2024"
    assert storable("a\ud800b") == "ab"
    assert storable("ok é 😀") == "ok é 😀"  # a character outside the BMP is one code point, not a surrogate
    assert storable("") == ""
