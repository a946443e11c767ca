"""The canonical form of a gold key: what its SHA-256 is computed over. Pure (no database).

One record a line, records sorted by item id (Python code-point order, never a database collation),
keys sorted, UTF-8 without escaping, no spaces, every record carrying the key version. The same
entries therefore always give the same bytes, on any database and any machine.

A record's fields are the protocol's (`ProtocolSpec.key_fields`).
"""

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from itertools import chain, islice
from operator import itemgetter
from types import NoneType
from typing import NamedTuple

import orjson

import protocols

# The canonical JSON options: `json.dumps(value, **CANONICAL_OPTIONS)` is a canonical text.
CONTENT_SOURCE = protocols.base.KEY_CONTENT_SOURCE
CANONICAL_OPTIONS = {"sort_keys": True, "ensure_ascii": False, "separators": (",", ":")}
# One encoder with those options: JSONEncoder.encode is what json.dumps calls, without building a
# new encoder per call (which costs as much as encoding a small record). Same options, same text.
# check_circular=False skips the encoder's record of every container it enters (a tenth of the time
# of a record): what is encoded here is data read or built for the bundle, trees without cycles, and
# the option only changes what a cycle would raise, never a text.
_CANONICAL = json.JSONEncoder(**CANONICAL_OPTIONS, check_circular=False)


def dumps(value) -> str:
    """Canonical JSON text for one value (json.dumps with CANONICAL_OPTIONS)."""
    return _CANONICAL.encode(value)


# Between two objects in one encoded list, NaN (a bare token, never a string) makes the text `},NaN,{`.
_SEPARATOR = "},NaN,{"
_NAN = float("nan")


class ValueTypes(NamedTuple):
    """The types of some values and of the elements of those that are lists, None left out: what
    decides whether orjson may write records (_orjson_lines) and a column's Croissant type
    (keys.metadata). A caller that has read every value anyway (keys.metadata, typing a record file's
    columns) hands them on instead of a second pass over 100,000 records."""

    values: frozenset
    elements: frozenset


def types_of(values: Sequence) -> ValueTypes:
    """The ValueTypes of `values`: one pass at C speed, and one over the elements of the lists (all of
    them when every value is a list or null, as a release's list columns are)."""
    types = set(map(type, values)) - {NoneType}
    elements: set = set()
    if list in types:
        # filter(None, ...) leaves out the nulls and the empty lists, which hold no element.
        lists = filter(None, values) if types == {list} else (v for v in values if type(v) is list)
        elements = set(map(type, chain.from_iterable(lists))) - {NoneType}
    return ValueTypes(frozenset(types), frozenset(elements))


def jsonl_bytes(records: Iterable, types: ValueTypes | None = None) -> bytes:
    """One canonical JSON text a line, UTF-8 (empty input gives empty bytes). `types`: the records'
    ValueTypes, if the caller knows them.

    Encoding each record is a call into the encoder, which builds its C encoder anew each time (a third
    of the time of a small record). So records that are all dicts are encoded in ONE call, as a list
    with NaN between them, and the text split where the records meet: the JSON text of a list is its
    items' texts joined by the item separator, each the same text as when encoded alone. Where two
    objects meet, `},NaN,{` is structural (outside any string); a string or a NaN inside a record can
    hold that text too, but only within the record, so every meeting point is found and any other
    occurrence makes the count exceed len - 1: then each record is encoded on its own instead. Tested
    against one json.dumps per line, including records holding the separator."""
    records = list(records)
    if not records:
        return b""
    if all(type(record) is dict for record in records):
        fast = _orjson_lines(records, types)
        if fast is not None:
            return fast
        interleaved = [_NAN] * (2 * len(records) - 1)
        interleaved[::2] = records
        text = _CANONICAL.encode(interleaved)[1:-1]
        if text.count(_SEPARATOR) == len(records) - 1:
            return (text.replace(_SEPARATOR, "}\n{") + "\n").encode("utf-8")
    return ("\n".join(map(_CANONICAL.encode, records)) + "\n").encode("utf-8")


# The value types whose orjson text is the canonical encoder's, byte for byte (tested on every character
# and on the integers' edges): strings (both escape `"`, `\\` and the control characters alike and write
# the rest as UTF-8; both sort keys in code-point order), integers, booleans and null. Not floats: orjson
# writes 1e16 where json.dumps writes 1e+16. An integer beyond 64 bits makes orjson raise.
_SAME_TEXT = frozenset({str, int, bool, NoneType})


def _orjson_lines(records: list[dict], types: ValueTypes | None = None) -> bytes | None:
    """jsonl_bytes(records) by orjson (a sixth of the standard encoder's time; with the type check and the
    split, half to four fifths of it on a release's large files), when every record holds only string
    keys and values of _SAME_TEXT or lists of them (checked by type, at C speed, unless `types` says;
    orjson itself refuses a key that is not exactly a str); None otherwise, and the standard encoder
    writes them. orjson writes a list of records with `},{` where two records meet; as with the NaN
    separator, any other occurrence (inside a string) makes the count exceed len - 1, and the standard
    encoder writes them instead.

    The records are written CHUNK at a time (ChunkedBytes): encoding the whole list at once made four
    copies of a 50 MB file (orjson's growing buffer, the split, the brackets cut, the final newline).
    The same text: a list's text is its chunks' texts joined by the same `,`, and the count holds for
    the whole list exactly when it holds for each chunk."""
    if types is None:
        types = value_types(records)
    if not (types.values - {list} <= _SAME_TEXT and types.elements <= _SAME_TEXT):
        return None
    out = ChunkedBytes(len(records))
    for start in range(0, len(records), CHUNK):
        chunk = records[start:start + CHUNK]
        try:
            text = orjson.dumps(chunk, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits, a key that is not a str
            return None
        if text.count(b"},{") != len(chunk) - 1:
            return None
        out.write(memoryview(text.replace(b"},{", b"}\n{"))[1:-1], b"\n", lines=len(chunk))  # brackets left out by a view
    return out.value()


# Lines (records) encoded at a time: large enough that a call costs nothing beside its work, small enough
# that a chunk's buffers (hundreds of kilobytes for a release's records) are reused from one to the next.
CHUNK = 1000


class ChunkedBytes:
    """A large file's bytes written a chunk of lines at a time into one buffer, reserved from the first
    chunk's size, which value() hands over without a copy. Joining a file's texts whole, then encoding
    it, copies it several times, each copy into memory touched for the first time (a page fault per
    4 KiB: on a VM, most of a freeze's system CPU); a chunk's buffers are freed before the next, which
    reuses their memory. A buffer grown an eighth at a time would be moved and copied as it grows, so
    the first chunk reserves the whole file's expected size (what is not written is cut at the end)."""

    def __init__(self, lines: int):
        """`lines`: how many lines (records, rows) the file holds, for the reservation."""
        self.out = io.BytesIO()
        self.lines = lines
        self.reserved = False

    def write(self, *pieces, lines: int = 0) -> None:
        """`pieces` (bytes-like), which hold `lines` of the file's lines (none: a header, a separator)."""
        if lines and not self.reserved:
            self.reserved = True
            at = self.out.tell()
            size = at + sum(map(len, pieces)) * self.lines // lines * 17 // 16
            if size > at + 1:
                self.out.seek(size - 1)
                self.out.write(b"\0")
                self.out.seek(at)
        for piece in pieces:
            self.out.write(piece)

    def write_joined(self, texts: Iterable[str], separator: str) -> None:
        """separator.join(texts) in UTF-8, CHUNK texts at a time."""
        texts, joint = iter(texts), separator.encode("utf-8")
        first = True
        while chunk := list(islice(texts, CHUNK)):
            if not first:
                self.write(joint)
            self.write(separator.join(chunk).encode("utf-8"), lines=len(chunk))
            first = False

    def value(self) -> bytes:
        self.out.truncate()  # what was reserved and not written
        return self.out.getvalue()


def lines_bytes(lines: Iterable[str], count: int) -> bytes:
    """("\\n".join(lines) + "\\n").encode("utf-8") for `count` lines, through ChunkedBytes."""
    out = ChunkedBytes(count)
    out.write_joined(lines, "\n")
    out.write(b"\n")
    return out.value()


def value_types(records: list[dict]) -> ValueTypes:
    """The ValueTypes of every value of the records."""
    return types_of(list(chain.from_iterable(map(dict.values, records))))


@cache
def _record_builder(kind: str) -> Callable[..., dict]:
    """(entry, extra=None) -> its record for the protocol's key fields, then the items of `extra` (the
    key version); built once per kind: a key holds up to 100,000 entries. The builder is one dict display
    written out for the protocol's fields, as dataclasses writes the methods of a class: a display is a
    third of the cost of zipping names with values, per record, for every freeze, export and verify."""
    spec = protocols.for_kind(kind)
    # spec.verdict_of of every gold value it knows, looked up in one dict; any other gold gets '', as
    # verdict_of gives it.
    verdict_of = {gold: spec.verdict_of(gold) for gold in (*spec.gold_values, *spec.gold_verdict)}.get
    members = []
    frozen = []  # (record field, content field) of the fields frozen into the entry's detail
    for name, source in spec.key_fields:
        if source.startswith(CONTENT_SOURCE):
            field = source.removeprefix(CONTENT_SOURCE)
            if not field.isidentifier():
                raise ValueError(f"protocol {spec.name}: key field source {source!r} does not name a content field")
            frozen.append(f"{name!r}: detail.get({field!r})")
            continue
        attribute = "gold" if source == "verdict" else source
        if not attribute.isidentifier():
            raise ValueError(f"protocol {spec.name}: key field source {source!r} is not an attribute name")
        value = f"entry.{attribute}"
        if source == "verdict":
            value = f"verdict_of({value}, '')"
        elif source == "evidence":
            value = f"list({value})"  # a copy: records never share the entry's list
        members.append(f"{name!r}: {value}")
    source_code = (
        "def build(entry, extra=None):\n"
        f"    record = {{{', '.join(members)}}}\n"
        + (
            # An entry frozen before its protocol froze content fields has no detail: its record stays
            # what its key's hash was computed from.
            "    detail = entry.detail\n"
            "    if detail is not None:\n"
            f"        record.update({{{', '.join(frozen)}}})\n"
            if frozen else ""
        ) +
        "    if extra:\n"
        "        record.update(extra)\n"
        "    return record\n"
    )
    namespace = {"verdict_of": verdict_of}
    exec(compile(source_code, f"<record builder of {kind}>", "exec"), namespace)  # noqa: S102 (names from the protocol spec, checked above)
    return namespace["build"]


def entry_content(kind: str, entry) -> dict:
    """An entry's content without the key version: what changelogs compare. `entry` needs the
    attributes the protocol's key fields name (external_id, gold, evidence, quote, family,
    history_turns, provenance)."""
    return _record_builder(kind)(entry)


def entry_record(kind: str, version: str, entry) -> dict:
    return _record_builder(kind)(entry, {"key_version": version})


def _in_key_order(kind: str, entries: Iterable, extra: dict | None = None) -> list[dict]:
    """The entries' records (with the items of `extra`), in key order: by item id."""
    build = _record_builder(kind)
    return sorted((build(entry, extra) for entry in entries), key=itemgetter("id"))


def key_bytes(kind: str, version: str, entries: Iterable) -> bytes:
    """The key's canonical JSON lines: every entry's record, in id order, with the key version (built
    with it: the same records as contents_bytes(version, key_contents(kind, entries)), one dict each)."""
    return jsonl_bytes(_in_key_order(kind, entries, {"key_version": version}))


def key_contents(kind: str, entries: Iterable) -> list[dict]:
    """The entries' contents (entry_content), in key order: what a release's data holds."""
    return _in_key_order(kind, entries)


def contents_bytes(version: str, contents: list[dict]) -> bytes:
    """The key's bytes from its entries' contents, in key order (key_contents): a freeze builds each
    record once, for the key's hash and for its release."""
    return jsonl_bytes([{**content, "key_version": version} for content in contents])


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A per-item diff names a change by the entry attribute whose record field moved (a record's verdict
# follows its gold); any other field by its record name.
CHANGE_NAMES = {"gold": "relabelled", "verdict": "relabelled", "quote": "re-quoted", "evidence": "re-evidenced"}
DROPPED, ADDED = "dropped", "added"
REJUDGE_TRAIL = ("question", "reference", "decided_by", "rejudged")


def parent_diff(kind: str, changelog: Sequence[dict]) -> list[dict]:
    """A derived key's per-item diff from its parent, from its changelog (each applied erratum with the
    item's record before and after it; a second erratum on an item starts from the first's result). One
    row per item the errata named, in id order: `changes` (dropped, added, relabelled, re-quoted,
    re-evidenced), `fields` {record field: [parent's value, this version's]} (provenance left out: every
    changed item's is), the parent's record and this version's (null: not in that version), and the
    errata that made the change (id, kind, reason, decision note; a re-judged answer's trail besides)."""
    names = {name: CHANGE_NAMES.get(source, name) for name, source in protocols.for_kind(kind).key_fields}
    items: dict[str, dict] = {}
    for change in changelog:
        row = items.setdefault(change["item"], {"item": change["item"], "before": change["before"], "errata": []})
        row["after"] = change["after"]
        row["errata"].append({"id": change["erratum"], "kind": change["kind"], "reason": change["reason"],
                              "decision_note": change["decision_note"],
                              # A re-judged answer's trail (fix-reference): its question, the corrected
                              # reference, who confirmed the label and the judge's suggestion. Only where the
                              # changelog has it, so that releases sealed before render as they were.
                              **{k: change[k] for k in REJUDGE_TRAIL if k in change}})
    rows = []
    for item in sorted(items):
        row = items[item]
        before, after = row["before"], row["after"]
        fields = {} if before is None or after is None else {
            name: [before.get(name), value] for name, value in after.items()
            if name != "provenance" and before.get(name) != value
        }
        if after is None:
            changes = [DROPPED]
        elif before is None:
            changes = [ADDED]
        else:
            changes = list(dict.fromkeys(names.get(name, name) for name in fields))
        rows.append({"item": item, "changes": changes, "fields": fields, "before": before, "after": after,
                     "errata": row["errata"]})
    return rows
