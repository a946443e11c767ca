"""The canonical form of a gold key: what its SHA-256 is computed over. Pure (no database).

One record a line, records sorted by item id (Python code-point order, never a database collation),
keys sorted, UTF-8 without escaping, no spaces, every record carrying the key version. The same
entries therefore always give the same bytes, on any database and any machine.
"""

import hashlib
import json
from collections.abc import Iterable
from operator import itemgetter

from items.models import GOLD_VERDICT, ItemKind

# One encoder for every canonical value: json.dumps with these arguments builds a new JSONEncoder per
# call, which costs as much as encoding a small record. Same class, same options, same bytes.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dumps(value) -> str:
    """Canonical JSON text for one value."""
    return _CANONICAL.encode(value)


def _line_encoder():
    """The C encoder behind _CANONICAL.encode, made once (encode() makes one per call), else encode."""
    make = json.encoder.c_make_encoder
    if make is None:
        return _CANONICAL.encode
    # The arguments JSONEncoder.iterencode passes for these options; markers=None only skips the
    # circular-reference check (records are trees), the text is the same.
    encoder = make(None, _CANONICAL.default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    return lambda value: "".join(encoder(value, 0))


_encode_line = _line_encoder()


def jsonl_bytes(records: Iterable) -> bytes:
    """One canonical JSON text a line, UTF-8 (empty input gives empty bytes)."""
    lines = list(map(_encode_line, records))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def entry_content(kind: str, entry) -> dict:
    """An entry's content without the key version: what changelogs compare. `entry` needs
    external_id, gold, evidence, quote, family, history_turns, provenance."""
    if kind == ItemKind.TWIST:
        return {
            "id": entry.external_id,
            "type": entry.gold,
            "verdict": GOLD_VERDICT.get(entry.gold, ""),
            "family": entry.family,
            "evidence": list(entry.evidence),
            "contradicted_quote": entry.quote,
            "history_turns": entry.history_turns,
            "provenance": entry.provenance,
        }
    return {"id": entry.external_id, "label": entry.gold, "provenance": entry.provenance}


def entry_record(kind: str, version: str, entry) -> dict:
    return {**entry_content(kind, entry), "key_version": version}


def canonical_jsonl(records: Iterable[dict]) -> bytes:
    return jsonl_bytes(sorted(records, key=itemgetter("id")))


def key_bytes(kind: str, version: str, entries: Iterable) -> bytes:
    return canonical_jsonl(entry_record(kind, version, e) for e in entries)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
