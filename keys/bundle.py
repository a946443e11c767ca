"""The release bundle of a gold key, rendered from plain data (key_selectors.bundle_data) into
{relative path: bytes}. Deterministic: stable ordering, sorted keys, only recorded timestamps, and a
zip with fixed dates — exporting twice gives byte-identical files."""

import hashlib
import io
import json
import zipfile
from pathlib import Path

from django.template.loader import render_to_string

from keys.canonical import jsonl_bytes

ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _json(value) -> bytes:
    """json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + newline, as UTF-8. The standard
    library encodes indented JSON in pure Python, one generator per container (2.5 s for the answer
    files of a 100,000-item key); _indented writes the same text with one join per container and falls
    back to json.dumps for anything it does not handle (non-string keys, other types)."""
    try:
        text = _indented(value, "\n", {})
    except _Unhandled:
        text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


class _Unhandled(Exception):
    pass


_encode_str = json.encoder.encode_basestring  # what ensure_ascii=False uses (the C function if present)
_CONTAINERS = (dict, list, tuple)
_INF = float("inf")


def _scalar(value) -> str:
    if isinstance(value, str):
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        # json.encoder's floatstr with allow_nan=True
        if value != value:
            return "NaN"
        if value == _INF:
            return "Infinity"
        if value == -_INF:
            return "-Infinity"
        return float.__repr__(value)
    raise _Unhandled


def _indented(value, newline: str, seen: dict) -> str:
    """The indent=1 text of `value`; `newline` is a newline plus the current indent. `seen` holds the
    text of containers met before at the same depth, by identity (bundle_data shares one decoded dict
    among the answers with the same JSON text): valid for one call of _json, while they all live."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = newline + " "
        parts = []
        for key in sorted(value) if all(type(k) is str for k in value) else _unhandled():
            item = value[key]
            parts.append(_encode_str(key) + ": " + (_child(item, inner, seen) if isinstance(item, _CONTAINERS) else _scalar(item)))
        return "{" + inner + ("," + inner).join(parts) + newline + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = newline + " "
        parts = [_child(item, inner, seen) if isinstance(item, _CONTAINERS) else _scalar(item) for item in value]
        return "[" + inner + ("," + inner).join(parts) + newline + "]"
    return _scalar(value)


def _child(value, newline: str, seen: dict) -> str:
    memo = (id(value), newline)
    text = seen.get(memo)
    if text is None:
        text = seen[memo] = _indented(value, newline, seen)
    return text


def _unhandled():
    raise _Unhandled


def _jsonl(records) -> bytes:
    return jsonl_bytes(records)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


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
                diffs = [f"{f}: {json.dumps(before[f], ensure_ascii=False)} → {json.dumps(after[f], ensure_ascii=False)}"
                         for f in sorted(after) if before.get(f) != after[f] and f != "provenance"]
                what = "; ".join(diffs) or "unchanged content"
            lines.append(f"- `{change['item']}` ({change['kind']}, erratum {change['erratum']}): {what}. "
                         f"Reason: {change['reason']}")
        lines.append("")
    return "\n".join(lines)


def hf_card(data: dict) -> str:
    key = data["key"]
    n = len(data["entries"])
    size = "n<1K" if n < 1000 else "1K<n<10K" if n < 10_000 else "10K<n<100K" if n < 100_000 else "100K<n<1M"
    return render_to_string("keys/hf_README.md", {"key": key, "n": n, "size": size, "counts": key["manifest"].get("counts_by_gold", {})})


def datasheet(data: dict) -> str:
    manifest = data["key"]["manifest"]
    return render_to_string(
        "keys/datasheet.md",
        {
            "key": data["key"],
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


def render(data: dict) -> dict[str, bytes]:
    files: dict[str, bytes] = {
        "key.jsonl": data["key_bytes"],
        "candidates.jsonl": _jsonl(data["candidates"]),
        "generation_rejects.jsonl": _jsonl(data["rejects"]),
        "annotation/adjudication_queue.jsonl": _jsonl(data["queue"]),
        "annotation/adjudication_decisions.json": _json(data["decisions"]),
        "errata.jsonl": _jsonl(data["errata"]),
        "CHANGELOG.md": changelog_markdown(data).encode("utf-8"),
        "stats.json": _json(
            {
                "key_version": data["key"]["version"],
                "sha256": data["key"]["sha256"],
                "parent": data["key"]["parent"],
                "manifest": data["key"]["manifest"],
                "changelog": data["lineage"][-1]["changelog"],
            }
        ),
        "datasheet.md": datasheet(data).encode("utf-8"),
        "hf/README.md": hf_card(data).encode("utf-8"),
        "hf/test.jsonl": _jsonl(data.get("test_records", data["entries"])),
    }
    for pseudonym, answers in data["answers"].items():
        files[f"annotation/answers_{_safe(pseudonym)}.json"] = _json(answers)
    for member, answers in data["council"].items():
        files[f"annotation/council/{_safe(member)}.json"] = _json(answers)
    files["MANIFEST.sha256"] = "".join(
        f"{hashlib.sha256(content).hexdigest()}  {path}\n" for path, content in sorted(files.items())
    ).encode("utf-8")
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
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, content in sorted(files.items()):
            info = zipfile.ZipInfo(f"{folder}/{path}", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    return buffer.getvalue()
