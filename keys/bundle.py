"""The release bundle of a gold key, rendered from plain data (key_selectors.bundle_data) into
{relative path: bytes}. Deterministic: stable ordering, sorted keys, only recorded timestamps, and a
zip with fixed dates — exporting twice gives byte-identical files."""

import hashlib
import io
import json
import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from json.encoder import encode_basestring
from operator import itemgetter
from pathlib import Path

from django.template.loader import render_to_string

from goldkey.lib.forked import in_fork, worth_forking
from keys import metadata
from keys.canonical import ChunkedBytes, ValueTypes, dumps, jsonl_bytes, lines_bytes, parent_diff

ZIP_DATE = (1980, 1, 1, 0, 0, 0)

# What a release holds, by format. A sealed release records the format it was rendered in, and is
# re-rendered in that format to check it: a release sealed before a format change stays verifiable.
#   1: the key, candidates, rejects, the trail, errata, CHANGELOG, stats, datasheet, the Hugging Face card
#      (its header written as text) and split, MANIFEST.sha256.
#   2: the card's header built as data, croissant.json, CITATION.cff and the trail as tables.
#   3: croissant.json describes each field that carries an item's content (candidates, the Hugging Face
#      split) with the description its protocol's content schema gives it; the shortcut-leakage audit of the
#      key's own items (`leakage.json`, the datasheet and the card), and for a derived key its per-item diff
#      from its parent (`changes_from_parent.jsonl`, the datasheet).
FORMAT = 3
FORMATS = (1, 2, 3)
LEAKAGE_FILE = "leakage.json"
PARENT_DIFF_FILE = "changes_from_parent.jsonl"


# The bundle's indented JSON: `json.dumps(value, **INDENTED)` plus a newline.
INDENTED = {"indent": 1, "sort_keys": True, "ensure_ascii": False}


def _json(value) -> bytes:
    return (json.dumps(value, **INDENTED) + "\n").encode("utf-8")


def _json_of_tables(document: dict) -> bytes:
    """Exactly _json(document), for the large files shaped {name: {item id: small value}} (answers,
    council, decisions). The standard library writes indented JSON in pure Python, 2.7 s for one answer
    file of a 100,000-item key; this joins json.dumps texts of the inner values into the two outer
    levels, and encodes each inner value object once (bundle_data shares one decoded dict per distinct
    answer text). The memo lives for this call only and holds the objects it has seen, so an id always
    names the same, unchanged object. Placing a text deeper is re-indenting it: json.dumps escapes
    newlines inside strings, so each newline in its output is indentation. The rows of a table are
    joined by C functions (map, format, join): a key's text is encode_basestring's, as json.dumps
    writes a string key without ASCII escapes."""
    if not _str_keys(document) or not all(_str_keys(v) for v in document.values() if isinstance(v, dict)):
        return _json(document)  # json.dumps sorts or refuses other keys its own way
    if not document:
        return b"{}\n"
    texts: dict[int, str] = {}
    seen: list = []  # keeps every object whose id is in texts alive
    # Written piece by piece into one buffer (ChunkedBytes), not joined and encoded whole: an answers
    # file of 50 MB was copied six times on its way (rows, braces, member, members, newline, UTF-8).
    out = ChunkedBytes(sum(len(v) for v in document.values() if isinstance(v, dict)))
    for n, name in enumerate(sorted(document)):
        out.write(b"{\n " if n == 0 else b",\n ", dumps(name).encode("utf-8"), b": ")
        value = document[name]
        if isinstance(value, dict) and value:
            keys = sorted(value)
            values = list(map(value.__getitem__, keys))
            for inner in dict(zip(map(id, values), values, strict=True)).values():  # each distinct object once
                if id(inner) not in texts:
                    texts[id(inner)] = json.dumps(inner, **INDENTED).replace("\n", "\n  ")
                    seen.append(inner)
            out.write(b"{\n  ")
            out.write_joined(map("{}: {}".format, map(encode_basestring, keys), map(texts.__getitem__, map(id, values))), ",\n  ")
            out.write(b"\n }")
        else:
            out.write(json.dumps(value, **INDENTED).replace("\n", "\n ").encode("utf-8"))
    out.write(b"\n}\n")
    return out.value()


def _str_keys(value) -> bool:
    return not isinstance(value, dict) or all(type(key) is str for key in value)


def _jsonl(records, types: ValueTypes | None = None) -> bytes:
    return jsonl_bytes(records, types)


# A value no row holds, put where a row's id goes to find where the id's text goes (checked: a template
# is used only if the marker's text occurs exactly once).
_ID_MARK = "\x00goldkey:id\x00"


def _jsonl_of_parts(parts: list[tuple[dict, object]]) -> bytes:
    """Exactly _jsonl([{**row, "id": item} for row, item in parts]), for the trail tables, where 200,000
    rows share a few dozen row objects and differ only in the id: each shared row is encoded once, as
    the text before and after its id's value. The canonical text of an object is its members' texts in
    key order, each value encoded on its own, so a row's text is that prefix, the id's text and that
    suffix. `parts` holds every row while the memo lives, so an id() always names the same row. When
    every row has its template and every id is a string (the trail's item ids), the lines are joined by
    C functions, an id's text being encode_basestring's, what the canonical encoder writes for a string."""
    if not parts:
        return b""
    rows = list(map(itemgetter(0), parts))
    items = list(map(itemgetter(1), parts))
    mark = dumps(_ID_MARK)
    templates: dict[int, tuple[str, str] | None] = {}
    for row in dict(zip(map(id, rows), rows, strict=True)).values():  # each distinct row once
        text = dumps({**row, "id": _ID_MARK})
        before, found, after = text.partition(mark)
        templates[id(row)] = (before, after) if found and mark not in after else None
    if None not in templates.values() and all(type(item) is str for item in items):
        befores = {key: template[0] for key, template in templates.items()}
        afters = {key: template[1] for key, template in templates.items()}
        ids = list(map(id, rows))
        lines = map("{}{}{}".format, map(befores.__getitem__, ids), map(encode_basestring, items), map(afters.__getitem__, ids))
    else:
        lines = (
            dumps({**row, "id": item}) if templates[id(row)] is None else templates[id(row)][0] + dumps(item) + templates[id(row)][1]
            for row, item in parts
        )
    return lines_bytes(lines, len(parts))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


# The folders a release's files are written in (render below): the top, `hf/`, `annotation/` and three
# folders in it, one of them holding a folder per key an erratum added items from. A stored file's name
# is written under an export's folder and inside a zip's: one that is absolute, climbs with `..` or
# names another folder would be written, or unpacked, outside it.
LAYOUT = re.compile(r"(?:hf/|annotation/(?:council/|tables/|added/[^/]+/)?)?[^/]+")


def path_problem(path: str) -> str | None:
    """Why a release file's name may not be written or served (None: it is one of the bundle's layout)."""
    if not path or path.startswith("/") or "\\" in path or ":" in path:
        return "absolute or not a relative POSIX path"
    if any(part in (".", "..") for part in path.split("/")):
        return "climbs out of its folder"
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "holds a control character"
    if not LAYOUT.fullmatch(path):
        return "in a folder outside the release's layout"
    return None


def moved(field: str, before, after) -> str:
    """One record field's change as CHANGELOG.md, the datasheet and the key page write it."""
    return f"{field}: {json.dumps(before, ensure_ascii=False)} → {json.dumps(after, ensure_ascii=False)}"


def diff_shown(rows: list[dict]) -> list[dict]:
    """A per-item diff's rows (keys.canonical.parent_diff), each with `moved`: its fields' changes as text."""
    return [{**row, "moved": [moved(field, *values) for field, values in row["fields"].items()]} for row in rows]


def changelog_markdown(data: dict) -> str:
    lines = [f"# Changelog — {data['key']['benchmark']} gold keys", ""]
    for k in reversed(data["lineage"]):
        lines.append(f"## {k['version']}")
        lines.append("")
        lines.append(f"- frozen: {k['frozen_at']}")
        lines.append(f"- sha256 of key.jsonl: `{k['sha256']}`")
        if not k["changelog"]:
            lines.append("- first frozen release of this key line")
        for change in k["changelog"]:
            before = change["before"]
            after = change["after"]
            if after is None:
                what = "dropped"
            elif before is None:
                what = f"added as `{after.get('type', after.get('label'))}`"
            else:
                diffs = [moved(f, before[f], after[f]) for f in sorted(after) if before.get(f) != after[f] and f != "provenance"]
                what = "; ".join(diffs) or "unchanged content"
            lines.append(f"- `{change['item']}` ({change['kind']}, erratum {change['erratum']}): {what}. "
                         f"Reason: {change['reason']}")
        lines.append("")
    return "\n".join(lines)


def hf_card_format1(data: dict) -> str:
    """The card of format 1, kept so that releases sealed in it re-render byte for byte."""
    key = data["key"]
    n = len(data["entries"])
    size = "n<1K" if n < 1000 else "1K<n<10K" if n < 10_000 else "10K<n<100K" if n < 100_000 else "100K<n<1M"
    return render_to_string("keys/hf_README_format1.md", {"key": key, "n": n, "size": size, "counts": key["manifest"].get("counts_by_gold", {})})


def hf_card(data: dict, fmt: int = FORMAT) -> str:
    """The Hub's dataset card: a YAML header built as data (keys/metadata.py), then the prose."""
    key = data["key"]
    sources = data.get("sources") or {}
    return metadata.hf_card_header(data) + render_to_string(
        "keys/hf_README.md",
        {
            "key": key,
            "leakage": key["manifest"].get("leakage") if fmt >= 3 else None,
            "n": len(data["entries"]),
            "counts": key["manifest"].get("counts_by_gold", {}),
            "item_license": metadata.licenses(data)[0],
            "corpora": sources.get("corpora", []),
            "bibtex": metadata.bibtex(data),
        },
    )


def _parent_diff(data: dict) -> list[dict]:
    """A derived key's per-item diff from its parent ([] for the first version of a key line)."""
    if not data["key"]["parent"]:
        return []
    return parent_diff(data["key"]["kind"], data["lineage"][-1]["changelog"])


def datasheet(data: dict, fmt: int = FORMAT) -> str:
    manifest = data["key"]["manifest"]
    return render_to_string(
        "keys/datasheet.md",
        {
            "key": data["key"],
            # Format 3's sections: a release sealed before renders without them, as it was sealed.
            "leakage": manifest.get("leakage") if fmt >= 3 else None,
            "parent_diff": diff_shown(_parent_diff(data)) if fmt >= 3 else [],
            "m": manifest,
            "agreement": manifest.get("agreement", {}),
            "n_candidates": len(data["candidates"]),
            "n_rejects": len(data["rejects"]),
            "n_entries": len(data["entries"]),
            "generators": data.get("generator_members", []),
            "errata": data["errata"],
            "lineage": data["lineage"],
        },
    )


def render(data: dict, *, fmt: int | None = None, digests: dict[str, str] | None = None,
           on_file: Callable[[str, bytes], None] | None = None) -> dict[str, bytes]:
    """The bundle's files. `digests`, if given, is filled with the SHA-256 (hex) of every file: each file
    is hashed once, for croissant.json, MANIFEST.sha256 and the caller (a release stores them).
    `on_file(path, content)`, if given, is called once per file as soon as it is final, while the next
    ones are rendered (a release compresses it in another thread). For a large key the Hugging Face
    split is written in a forked process meanwhile (fork_large; the same bytes either way, tested)."""
    digests = {} if digests is None else digests
    fmt = FORMAT if fmt is None else fmt
    if fmt not in FORMATS:
        raise ValueError(f"unknown release format {fmt} (known: {', '.join(map(str, FORMATS))})")
    files: dict[str, bytes] = {}
    # The fork comes first, before any thread is started: a forked child holds only the thread that forked.
    with in_fork(partial(_large_part, data, fmt), fork=fork_large(data)) as large, ThreadPoolExecutor(HASH_THREADS) as pool:
        hashing: dict[str, Future] = {}

        def put(path: str, content: bytes) -> None:
            files[path] = content
            if path not in digests:
                hashing[path] = pool.submit(_sha256, content)  # hashlib releases the GIL: hashed beside the rendering
            if on_file is not None:
                on_file(path, content)

        def digest(path: str) -> str:
            known = digests.get(path)
            if known is None:
                known = digests[path] = hashing[path].result()
            return known

        return _render(data, fmt, files, put, digest, large)


HASH_THREADS = 2


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def fork_large(data: dict) -> bool:
    """Whether render() writes the Hugging Face split and reads its columns in a forked process, beside
    the rest: for a large key the fork and the split's way back to this process cost far less than the
    second core saves."""
    return worth_forking(len(data["entries"]))


TEST_SPLIT = metadata.HF_SPLIT


def _large_part(data: dict, fmt: int) -> tuple[bytes, dict[str, metadata.RecordColumns]]:
    """The Hugging Face split's bytes and (format 2) its Croissant columns: a pure function of `data`,
    which render() may hand to a forked process (the split is one of the two largest files; the other,
    the candidates, is written meanwhile). Its records are joined here (metadata.hf_split_records),
    and typed once, for the columns and the encoder."""
    records = metadata.hf_split_records(data)
    if fmt >= 2 and records:
        columns = metadata.record_columns(TEST_SPLIT, records)
        return _jsonl(records, columns.types), {TEST_SPLIT: columns}
    return _jsonl(records), {}


@dataclass(frozen=True)
class AnswerTrail:
    """The annotators' answers as a release holds them, rendered: annotation/answers_<pseudonym>.json,
    the answers table (format 2; None without answer documents) and the rows Croissant reads of it."""

    files: dict[str, bytes]
    table: bytes | None
    table_rows: list[dict] | None


def answer_trail(documents: dict, kind: str) -> AnswerTrail:
    """The answer files of a release from its answer documents (bundle_data's "answers"): a pure
    function, which a freeze runs beside its own work (keys/services.py)."""
    files = {f"annotation/answers_{_safe(pseudonym)}.json": _json_of_tables(answers) for pseudonym, answers in documents.items()}
    if not documents:
        return AnswerTrail(files, None, None)
    parts = metadata.answer_table_parts(documents, kind)
    rows = metadata.croissant_tables({metadata.ANSWERS_TABLE: parts})[metadata.ANSWERS_TABLE]
    return AnswerTrail(files, _jsonl_of_parts(parts), rows)


def _render(data: dict, fmt: int, files: dict[str, bytes], put, digest, large) -> dict[str, bytes]:
    put("key.jsonl", data["key_bytes"])
    # The Croissant columns of the key and the candidates are read here while the split is written
    # there; the candidates' first, for their encoder (the types of their values, read on the way).
    columns = {}
    if fmt >= 2 and data["candidates"]:
        columns["candidates.jsonl"] = metadata.record_columns("candidates.jsonl", data["candidates"])
    candidates_types = columns["candidates.jsonl"].types if columns else None
    put("candidates.jsonl", _jsonl(data["candidates"], candidates_types))
    put("generation_rejects.jsonl", _jsonl(data["rejects"]))
    put("annotation/adjudication_queue.jsonl", _jsonl(data["queue"]))
    put("annotation/adjudication_decisions.json", _json_of_tables(data["decisions"]))
    put("errata.jsonl", _jsonl(data["errata"]))
    put("CHANGELOG.md", changelog_markdown(data).encode("utf-8"))
    if fmt >= 3:
        leakage = data["key"]["manifest"].get("leakage")
        if leakage is not None:
            put(LEAKAGE_FILE, _json({"key_version": data["key"]["version"], "sha256": data["key"]["sha256"], **leakage}))
        if data["key"]["parent"]:
            put(PARENT_DIFF_FILE, _jsonl(_parent_diff(data)))
    put("stats.json", _json(
        {
            "key_version": data["key"]["version"],
            "sha256": data["key"]["sha256"],
            "parent": data["key"]["parent"],
            # The hash chain over the key line: each release names the key it was derived from.
            "parent_sha256": data["lineage"][-2]["sha256"] if len(data["lineage"]) > 1 else None,
            "manifest": data["key"]["manifest"],
            "changelog": data["lineage"][-1]["changelog"],
        }
    ))
    put("datasheet.md", datasheet(data, fmt).encode("utf-8"))
    put("hf/README.md", (hf_card(data, fmt) if fmt >= 2 else hf_card_format1(data)).encode("utf-8"))
    answer_files = data.get("answer_trail") or answer_trail(data["answers"], data["key"]["kind"])
    for path, content in answer_files.files.items():
        put(path, content)
    for member, answers in data["council"].items():
        put(f"annotation/council/{_safe(member)}.json", _json_of_tables(answers))
    for slug, trail in data.get("added", {}).items():
        # Items an erratum added from another frozen key, with the trail they were kept on.
        folder = f"annotation/added/{_safe(slug)}"
        put(f"{folder}/candidates.jsonl", _jsonl(trail["candidates"]))
        put(f"{folder}/adjudication_decisions.json", _json_of_tables({"source_key": trail["source_key"], **trail["decisions"]}))
        for pseudonym, answers in trail["answers"].items():
            put(f"{folder}/answers_{_safe(pseudonym)}.json", _json_of_tables(answers))
    if fmt >= 2:
        parts = metadata.trail_table_parts(data, answers=False)
        tables = metadata.croissant_tables(parts)
        if answer_files.table is not None:
            put(metadata.ANSWERS_TABLE, answer_files.table)
            tables[metadata.ANSWERS_TABLE] = answer_files.table_rows
        for path, pairs in parts.items():
            put(path, _jsonl_of_parts(pairs))
        put(metadata.CITATION_FILE, metadata.citation_cff_text(data).encode("utf-8"))
    if fmt >= 2 and data["entries"]:
        columns["key.jsonl"] = metadata.record_columns("key.jsonl", data["entries"], metadata.key_record_extra(data))
    test_split, test_columns = large.result()
    columns.update(test_columns)
    put(TEST_SPLIT, test_split)
    if fmt >= 2:
        # Last but the manifest: it lists every file above with its SHA-256, and the manifest lists its own.
        put(metadata.CROISSANT_FILE, _json(metadata.croissant(data, files, tables, sha256=digest, columns=columns,
                                                              described=fmt >= 3)))
    put("MANIFEST.sha256", "".join(f"{digest(path)}  {path}\n" for path in sorted(files)).encode("utf-8"))
    digest("MANIFEST.sha256")
    return dict(sorted(files.items()))


def write(files: dict[str, bytes], out: Path) -> list[Path]:
    out = Path(out)
    written = []
    for path, content in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        written.append(target)
    return written


def zip_bytes(files: dict[str, bytes], folder: str) -> bytes:
    """The bundle as a zip, byte for byte what zipfile writes (_zip_bytes_zipfile, tested): a download
    is a sealed release's bytes, served as immutable. zipfile deflates one member after the other; here
    each member's deflate stream and CRC are computed in threads (zlib releases the GIL), then the
    headers are written as zipfile writes them for a member given with its bytes to a seekable file:
    sizes and CRC in the local header (no data descriptor), no extra field, no comment. Archives that
    would need zip64 records (a member or the archive near 2 GiB, more than 65,535 members) are left
    to zipfile."""
    paths = sorted(files)
    if len(paths) >= 0xFFFF or sum(map(len, files.values())) * 1.05 > zipfile.ZIP64_LIMIT:
        return _zip_bytes_zipfile(files, folder)
    with ThreadPoolExecutor(ZIP_THREADS) as pool:
        members = list(pool.map(_zip_member, (files[path] for path in paths)))
    dosdate = (ZIP_DATE[0] - 1980) << 9 | ZIP_DATE[1] << 5 | ZIP_DATE[2]
    dostime = ZIP_DATE[3] << 11 | ZIP_DATE[4] << 5 | (ZIP_DATE[5] // 2)
    create_system = 0 if sys.platform == "win32" else 3  # as zipfile.ZipInfo records it
    out, directory, offset = [], [], 0
    for path, (crc, deflated), content in zip(paths, members, (files[path] for path in paths), strict=True):
        name = f"{folder}/{path}"
        encoded, flags = (name.encode("ascii"), 0) if name.isascii() else (name.encode("utf-8"), _ZIP_UTF8)
        header = struct.pack(_ZIP_LOCAL, b"PK\x03\x04", _ZIP_VERSION, 0, flags, zipfile.ZIP_DEFLATED, dostime, dosdate,
                             crc, len(deflated), len(content), len(encoded), 0) + encoded
        directory.append(struct.pack(_ZIP_CENTRAL, b"PK\x01\x02", _ZIP_VERSION, create_system, _ZIP_VERSION, 0, flags,
                                     zipfile.ZIP_DEFLATED, dostime, dosdate, crc, len(deflated), len(content),
                                     len(encoded), 0, 0, 0, 0, 0o644 << 16, offset) + encoded)
        out += (header, deflated)
        offset += len(header) + len(deflated)
    central = b"".join(directory)
    end = struct.pack(_ZIP_END, b"PK\x05\x06", 0, 0, len(paths), len(paths), len(central), offset, 0)
    return b"".join([*out, central, end])


ZIP_THREADS = 2
_ZIP_VERSION = 20  # zipfile's DEFAULT_VERSION: deflate, no zip64
_ZIP_UTF8 = 0x800  # the name is UTF-8 (zipfile sets it for a name that is not ASCII)
_ZIP_LOCAL = "<4s2B4HL2L2H"  # zipfile.structFileHeader
_ZIP_CENTRAL = "<4s4B4HL2L5H2L"  # zipfile.structCentralDir
_ZIP_END = "<4s4H2LH"  # zipfile.structEndArchive


def _zip_member(content: bytes) -> tuple[int, bytes]:
    """(CRC-32, raw deflate stream) of one member, as zipfile computes them at its default level."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return zlib.crc32(content), compressor.compress(content) + compressor.flush()


def _zip_bytes_zipfile(files: dict[str, bytes], folder: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, content in sorted(files.items()):
            info = zipfile.ZipInfo(f"{folder}/{path}", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    return buffer.getvalue()
