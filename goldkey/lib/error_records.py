"""Error messages as records a script can read: {"file", "line", "field", "message"}.

Importers report every problem as ``FILE:LINE: what is wrong`` (a JSON path or ``field 'x'`` names the
field); commands under --json and the upload API hand the same problems out as records instead of text."""

import re

# "track_b.jsonl:12: field 'type' is 'x', …", "1.json:40: session_1[2]: field 'dia_id': …", "a.zip: not a zip"
_LOCATED = re.compile(r"^(?P<file>[^\s:][^:\n]*?)(?::(?P<line>\d+))?: (?P<rest>.+)$", re.DOTALL)
_FIELD = re.compile(r"(?:missing )?field '(?P<field>[^']+)'")
_PATH = re.compile(r"^(?P<path>[A-Za-z_\[][\w.\[\]]*): (?P<rest>.+)$", re.DOTALL)


def error_record(text: str) -> dict:
    """One message as a record; parts the message does not name are null."""
    located = _LOCATED.match(text)
    # A message without a file (e.g. "unknown import kind 'csv'") has no location to split off; a bare
    # sentence with a colon in it is told apart by the space a file name does not contain.
    if located is None or " " in located["file"]:
        field = _FIELD.search(text)
        return {"file": None, "line": None, "field": field["field"] if field else None, "message": text}
    rest = located["rest"]
    field_name = None
    path = _PATH.match(rest)
    if path and located["line"]:
        field_name, rest = path["path"], path["rest"]
    named = _FIELD.match(rest)
    if named:
        # A JSON path says where in the document ("session_1[2]"), the field which key there.
        inner = named["field"]
        if field_name is None or field_name == inner:
            field_name = inner
        elif not field_name.endswith(f".{inner}"):
            field_name = f"{field_name}.{inner}"
        if rest[named.end():].startswith(": "):
            rest = rest[named.end() + 2:]
    elif field_name is None and (found := _FIELD.search(rest)):
        field_name = found["field"]
    return {
        "file": located["file"],
        "line": int(located["line"]) if located["line"] else None,
        "field": field_name,
        "message": rest,
    }


def error_records(messages: list[str]) -> list[dict]:
    return [error_record(m) for m in messages]
