"""The bundle's JSON writers give exactly the standard library's text (the format is pinned): the\nfast table writer is compared with plain json.dumps."""

import json
import random

from keys import bundle
from keys.canonical import dumps, jsonl_bytes

SCALARS = [None, True, False, 0, -3, 2**70, 1.5, -0.0, 1e300, float("nan"), float("inf"), -float("inf"),
           "", "x", 'é"\\\n\u2028\t', "ünïcødé 🙂"]


def _random_value(rng: random.Random, shared: list, depth: int = 0):
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice(SCALARS)
    if roll < 0.45:
        return rng.choice(shared)  # the same object in several places, as bundle_data shares decoded answers
    if roll < 0.75:
        return {rng.choice(["a", "b", "é", "Z", ""]) + str(rng.randint(0, 9)): _random_value(rng, shared, depth + 1)
                for _ in range(rng.randint(0, 4))}
    values = [_random_value(rng, shared, depth + 1) for _ in range(rng.randint(0, 4))]
    return values if rng.random() < 0.7 else tuple(values)


def _reference_json(value) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _random_tables(rng: random.Random, shared: list) -> dict:
    """A document shaped like the answer, council and decision files: a few members, some of them
    tables {item id: small value}, values shared between rows as bundle_data shares decoded answers."""
    document = {}
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(["answers", "annotator", "exported", "decisions", "é", ""]) + str(rng.randint(0, 3))
        if rng.random() < 0.6:
            document[name] = {
                f"b-{rng.randint(0, 999):03d}{rng.choice(['', 'é', '🙂'])}": (
                    rng.choice(shared) if rng.random() < 0.5 else _random_value(rng, shared, 1)
                )
                for _ in range(rng.randint(0, 30))
            }
        else:
            document[name] = _random_value(rng, shared)
    return document


def test_the_table_writer_is_byte_for_byte_json_dumps_on_random_documents():
    rng = random.Random(20261129)
    shared = [{"q1": "contradicts"}, [1, "x"], {"a": {"b": [None, 1.25]}}, {}, [], "s", None]
    for _ in range(2000):
        document = _random_tables(rng, shared)
        assert bundle._json_of_tables(document) == _reference_json(document)


def test_the_table_writer_leaves_non_string_keys_to_json_dumps():
    for value in ({1: 2}, {"a": {2: "x", 3: None}}, {"a": {"b": {1: 1, 10: 2, 2: 3}}}, {"t": {"x": {True: [1]}}}):
        assert bundle._json_of_tables(value) == _reference_json(value)


def test_the_plain_writer_is_json_dumps():
    rng = random.Random(3)
    for _ in range(200):
        value = _random_value(rng, [{"k": 1}])
        assert bundle._json(value) == _reference_json(value)


def test_json_lines_are_one_canonical_dumps_a_line():
    rng = random.Random(7)
    records = [_random_value(rng, [{"k": 1}]) for _ in range(500)] + [{"id": "b", "z": [1, {"y": "é"}]}]
    expected = "".join(
        json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records
    ).encode("utf-8")
    assert jsonl_bytes(records) == expected
    assert [dumps(r) for r in records] == expected.decode("utf-8").split("\n")[:-1]
    assert jsonl_bytes([]) == b""


def test_the_trail_table_writer_is_byte_for_byte_one_canonical_line_per_row():
    rng = random.Random(20261201)
    shared = [{"q1": "contradicts"}, [1, "x"], {"a": {"b": [None, 1.25]}}, {}, [], "s", None]
    marker = bundle._ID_MARK
    for _ in range(300):
        # Rows as the trail tables share them: a few row objects, each under many ids; some rows hold
        # an "id" of their own, the marker itself, or values of every kind.
        rows = []
        for _ in range(rng.randint(1, 5)):
            row = {rng.choice(["annotator", "q1", "q2", "id", "é", "z"]): _random_value(rng, shared) for _ in range(rng.randint(0, 5))}
            if rng.random() < 0.2:
                row[rng.choice(["note", "id"])] = rng.choice([marker, f"x{marker}y", [marker]])
            rows.append(row)
        ids = [rng.choice([f"conv-{rng.randint(0, 9)}:v1b{rng.randint(0, 99)}", "é\"\\\n", marker, 7, None]) for _ in range(40)]
        parts = [(rng.choice(rows), item) for item in ids]
        assert bundle._jsonl_of_parts(parts) == jsonl_bytes({**row, "id": item} for row, item in parts)
    assert bundle._jsonl_of_parts([]) == jsonl_bytes([]) == b""


def _reference_jsonl(records) -> bytes:
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def test_canonical_lines_are_one_json_dumps_per_record_even_when_records_hold_the_separator():
    rng = random.Random(20261202)
    shared = [{"q1": "contradicts"}, [1, "x"], {"a": {"b": [None, 1.25]}}, {}, [], "s", None]
    tricky = ["},NaN,{", "a},NaN,{b", float("nan"), [{}, float("nan"), {}], {"x": [{"y": 1}, float("nan"), {"z": 2}]}]
    for _ in range(1500):
        records = []
        for _ in range(rng.randint(1, 12)):
            record = {f"k{n}": _random_value(rng, shared) for n in range(rng.randint(0, 4))}
            if rng.random() < 0.25:
                record["t"] = rng.choice(tricky)
            records.append(record)
        if rng.random() < 0.1:
            records.insert(rng.randrange(len(records) + 1), rng.choice([[1, 2], "text", None, 3]))  # not a record
        assert jsonl_bytes(records) == _reference_jsonl(records)
    assert jsonl_bytes(iter([{"a": 1}, {"b": "},NaN,{"}])) == _reference_jsonl([{"a": 1}, {"b": "},NaN,{"}])
    assert jsonl_bytes([]) == b""


def test_the_key_bytes_from_entry_records_built_once_are_the_key_bytes_of_the_entries():
    from types import SimpleNamespace

    from keys.canonical import contents_bytes, entry_record, key_bytes, key_contents

    rng = random.Random(3)
    golds = ["contradicting", "aligned", "hard_negative", "not-a-gold-value"]
    entries = [
        SimpleNamespace(external_id=f"t-{n:04d}{suffix}", gold=rng.choice(golds),
                        evidence=[f"D{rng.randint(1, 9)}:{rng.randint(1, 40)}" for _ in range(rng.randint(0, 3))],
                        quote=rng.choice(["", 'she said "no" — ünïcødé']), family=rng.choice(["F1", "F2", ""]),
                        history_turns=rng.choice([None, 0, 371]), provenance="kept_unanimous")
        for n, suffix in zip(rng.sample(range(500), 200), rng.choices(["", "a", "É", "z"], k=200), strict=True)
    ]
    contents = key_contents("twist", entries)
    assert [c["id"] for c in contents] == sorted(e.external_id for e in entries)
    assert contents_bytes("T-v1.0", contents) == key_bytes("twist", "T-v1.0", entries)
    # ... and both are the plain path: one json.dumps with the key's options per record, in id order
    plain = "".join(json.dumps(entry_record("twist", "T-v1.0", e), sort_keys=True, ensure_ascii=False,
                               separators=(",", ":")) + "\n"
                    for e in sorted(entries, key=lambda e: e.external_id))
    assert key_bytes("twist", "T-v1.0", entries) == plain.encode("utf-8")
    assert all("key_version" not in c for c in contents)  # the release's entry records stay version-free


def test_the_zip_is_byte_for_byte_what_zipfile_writes():
    rng = random.Random(20261201)
    for _ in range(150):
        files = {}
        for _ in range(rng.randint(0, 12)):
            name = rng.choice(["key.jsonl", "hf/test", "annotation/answers_é", "ünï/🙂", "a b"]) + str(rng.randint(0, 99))
            files[name] = rng.choice([
                b"", rng.randbytes(rng.randint(1, 5000)), b'{"id": "conv-1:v1b1"}\n' * rng.randint(1, 20000),
            ])
        folder = rng.choice(["TWIST-v1.0", "Kë-v2"])
        assert bundle.zip_bytes(files, folder) == bundle._zip_bytes_zipfile(files, folder)


def test_an_archive_that_would_need_zip64_is_left_to_zipfile(monkeypatch):
    files = {"a.json": b"{}\n" * 1000, "b/é.md": b"# x\n"}
    monkeypatch.setattr(bundle.zipfile, "ZIP64_LIMIT", 1000)  # the archive is "near the limit": zipfile writes zip64
    calls = []
    monkeypatch.setattr(bundle, "_zip_member", lambda content: calls.append(content))
    archive = bundle.zip_bytes(files, "K-v1.0")
    assert archive == bundle._zip_bytes_zipfile(files, "K-v1.0") and calls == []
    assert archive[4] == 45  # the first member's header needs zip64 (version 4.5)


def test_plain_records_are_written_by_orjson_byte_for_byte_as_json_dumps_writes_them():
    from keys.canonical import _orjson_lines

    # Every character but the surrogates (which UTF-8 cannot hold), in values and in keys, and the
    # integers' 64-bit edges.
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    rng = random.Random(20261202)
    records = []
    for start in range(0, len(characters), 4096):
        chunk = "".join(characters[start:start + 4096])
        records.append({"text": chunk, chunk[:3]: [chunk[-5:], None, True], "id": f"r{start}", "n": rng.choice([
            0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 7])})
    records += [{}, {"evidence": []}, {"a": False, "b": [1, "x", None]}]
    fast = _orjson_lines(records)
    assert fast is not None  # the fast path wrote them
    assert fast == jsonl_bytes(records) == _reference_jsonl(records)


def test_records_written_in_chunks_are_the_records_written_at_once(monkeypatch):
    from keys import canonical

    rng = random.Random(20261203)
    records = [{"id": f"r{i}", "text": "é" * rng.randint(0, 40), "n": i, "evidence": [f"D{i}"] * rng.randint(0, 3)}
               for i in range(101)]
    expected = _reference_jsonl(records)
    for size in (1, 7, 50, 100, 101, 102, 1000):  # chunks of one, uneven, exact and larger than the list
        monkeypatch.setattr(canonical, "CHUNK", size)
        assert canonical._orjson_lines(records) == expected, size
    # The buffer is reserved from the first chunk's size: records far smaller or larger after it.
    monkeypatch.setattr(canonical, "CHUNK", 10)
    small, large = [{"id": f"s{i}"} for i in range(10)], [{"id": f"l{i}", "text": "y" * 5_000} for i in range(30)]
    for uneven in (small + large, large + small):
        assert canonical._orjson_lines(uneven) == _reference_jsonl(uneven)
    # The separator inside a string of the last chunk only: the whole list goes to the standard encoder.
    tricky = [*records, {"id": "last", "text": "a},{b"}]
    assert canonical._orjson_lines(tricky) is None
    assert jsonl_bytes(tricky) == _reference_jsonl(tricky)


def test_a_large_file_is_written_into_one_buffer_not_copied_whole_along_the_way():
    # Each copy of a large file is memory touched for the first time (page faults); the chunks' buffers
    # are reused. The peak is the file and about a chunk's working buffers, not several files.
    from keys.canonical import _orjson_lines

    records = [{"id": f"conv-{i % 100}:v1b{i:06d}", "draft": "x" * 400, "evidence": ["D1:1", "D2:2"]} for i in range(30_000)]
    text, peak = _peak_of(_orjson_lines, records)
    assert text is not None and len(text) > 12_000_000
    assert peak < 1.4 * len(text), (peak, len(text))  # the whole list at once: 3 copies alive at the peak


def _peak_of(function, *args) -> tuple[object, int]:
    import tracemalloc

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        value = function(*args)
        return value, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_the_large_trail_files_are_written_into_one_buffer_not_copied_whole_along_the_way():
    answers = [{"q1": "consistent", "q1_note": ""}, {"q1": "contradicts", "q2": "yes"}]
    document = {"annotator": "A", "exported": "2026-01-01T00:00:00Z",
                "answers": {f"conv-{i % 50}:v1b{i:06d}": answers[i % 2] for i in range(60_000)}}
    text, peak = _peak_of(bundle._json_of_tables, document)
    assert text == bundle._json(document) and len(text) > 4_000_000
    assert peak < 1.4 * len(text), (peak, len(text))  # joined and encoded whole: six copies on the way
    parts = [(answers[i % 2], f"conv-{i % 50}:v1b{i:06d}") for i in range(60_000)]
    table, peak = _peak_of(bundle._jsonl_of_parts, parts)
    assert table == jsonl_bytes({**row, "id": item} for row, item in parts)
    # The rows' ids and templates are listed first (a third of the file here); joined and encoded whole, 4x.
    assert peak < 2.6 * len(table), (peak, len(table))


def test_records_whose_text_orjson_would_write_differently_are_left_to_the_standard_encoder():
    import enum

    from keys.canonical import _orjson_lines

    class Label(enum.StrEnum):
        KEPT = "kept"

    class Name(str):
        pass

    refused = [
        [{"score": 1e16}],  # json.dumps: 1e+16; orjson: 1e16
        [{"scores": [0.5]}],
        [{"nested": {"a": 1}}],  # not scanned
        [{"pair": (1, 2)}],
        [{"how": Label.KEPT}],
        [{"n": 2**64}],  # beyond orjson's integers
        [{Name("k"): 1}],
        [{"a": "x},{y"}, {"b": 1}],  # the records' separator inside a string
        [{"lists": [[1]]}],
    ]
    for records in refused:
        assert _orjson_lines(records) is None, records
        assert jsonl_bytes(records) == _reference_jsonl(records)


def test_records_encoded_with_their_types_handed_on_are_the_records_encoded_alone():
    from keys.canonical import value_types

    cases = [
        [{"id": "a", "evidence": ["D1:1", "D2:3"], "n": 3, "ok": True, "q": None}, {"id": "b", "evidence": [], "n": None}],
        [{"score": 1e16}],  # a float: the types send it to the standard encoder
        [{"scores": [0.5]}],
        [{"nested": {"a": 1}}],
        [{"lists": [[1]]}],
        [{"a": "x},{y"}, {"b": 1}],  # the types allow orjson; the separator count still refuses it
    ]
    for records in cases:
        types = value_types(records)
        assert jsonl_bytes(records, types) == jsonl_bytes(records) == _reference_jsonl(records), records


def test_a_key_field_frozen_from_content_comes_from_the_entry_detail_and_an_entry_without_one_keeps_its_old_record():
    from types import SimpleNamespace

    from keys.canonical import entry_content

    base = dict(external_id="tc-1", gold="supersession", evidence=["D1:2", "D2:5"], quote="Leeds",
                family="C1", history_turns=None, provenance="kept_unanimous")
    frozen = entry_content("twist_c", SimpleNamespace(**base, detail={"step_values": ["York", "Leeds"], "superseded": ["York"]}))
    assert frozen["superseded"] == ["York"] and frozen["chain_values"] == ["York", "Leeds"]
    assert frozen["chain"] == ["D1:2", "D2:5"] and frozen["gold"] == "Leeds"
    # An entry frozen before the protocol froze content fields (detail NULL): the record its hash was taken of.
    before = entry_content("twist_c", SimpleNamespace(**base, detail=None))
    assert set(frozen) - set(before) == {"superseded", "chain_values"}
    assert before == {k: v for k, v in frozen.items() if k in before}
    # A protocol that freezes no content field never reads the detail.
    twist = entry_content("twist", SimpleNamespace(**{**base, "gold": "contradicting"}))
    assert "superseded" not in twist and "detail" not in twist
