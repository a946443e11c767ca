"""Reading JSON import files, and reporting every problem as ``FILE:LINE: what is wrong``.

Shared by every importer (items, answers, decisions, council files, system runs): each collects its
problems in an ErrorLog, up to a limit, so one run tells the user everything that is wrong with a
file, and raises ImportFailed before anything is written. Hostile input (deep nesting, NaN, over-long
values) is refused by the checked parser in jsonsafe. Pure: no database access.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from goldkey.errors import ApplicationError
from goldkey.lib.jsonsafe import JsonRefused, json_loads_checked

MAX_ERRORS = 50

class ImportFailed(ApplicationError):
    """The file was refused; nothing was written. ``errors`` lists every problem found."""

    def __init__(self, errors: list[str], truncated: bool = False):
        self.errors = errors
        self.truncated = truncated
        more = f"\n… and more (stopped after {MAX_ERRORS} errors)" if truncated else ""
        super().__init__("\n".join(errors) + more, extra={"errors": errors})


@dataclass
class ErrorLog:
    errors: list[str] = field(default_factory=list)
    truncated: bool = False

    def add(self, where: str, message: str) -> None:
        if len(self.errors) >= MAX_ERRORS:
            self.truncated = True
            return
        self.errors.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if self.errors:
            raise ImportFailed(self.errors, self.truncated)

    @property
    def full(self) -> bool:
        return len(self.errors) >= MAX_ERRORS


def read_jsonl(path: Path, log: ErrorLog) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line; invalid lines go to the log."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFailed([f"{path}: cannot be read: {exc.strerror or exc}"]) from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json_loads_checked(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
            except UnicodeDecodeError as exc:
                log.add(f"{path.name}:{number}", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
                continue
            except json.JSONDecodeError as exc:
                log.add(f"{path.name}:{number}", f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            except JsonRefused as exc:
                log.add(f"{path.name}:{number}" + (f": {exc.label}" if exc.path else ""), exc.message)
                continue
            if not isinstance(record, dict):
                log.add(f"{path.name}:{number}", f"expected a JSON object, got {type(record).__name__}")
                continue
            yield number, record


def read_json(path: Path) -> object:
    """A whole JSON document; errors name the file and the line."""
    return read_json_document(path)[1]


def require_str(record: dict, key: str, where: str, log: ErrorLog, *, allow_empty: bool = False) -> str | None:
    if key not in record:
        log.add(where, f"missing field '{key}'")
        return None
    value = record[key]
    if not isinstance(value, str):
        log.add(where, f"field '{key}' must be a string, got {type(value).__name__}")
        return None
    if not allow_empty and not value.strip():
        log.add(where, f"field '{key}' is empty")
        return None
    return value


def optional_str(record: dict, key: str, where: str, log: ErrorLog) -> str:
    value = record.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        log.add(where, f"field '{key}' must be a string, got {type(value).__name__}")
        return ""
    return value


def column_length(model, column: str) -> int:
    """The `max_length` of a model's text column: the one limit an imported value is held to (a second
    literal beside the model's would drift from it). PostgreSQL refuses a longer value with a DataError
    mid-write; SQLite stores it. Reads the model class it is given, so this module stays free of apps."""
    return model._meta.get_field(column).max_length


def text_too_long(value: object, limit: int) -> str | None:
    """Why `value` does not fit a column of `limit` characters ('a text of 200 characters (at most 120)'),
    or None: a text that fits, or no text at all (its type is another check's business)."""
    if type(value) is str and len(value) > limit:
        return f"a text of {len(value):,} characters (at most {limit:,})"
    return None


def check_lengths(record: dict, limits: dict[str, int], where: str, log: ErrorLog) -> bool:
    """Whether each of the record's texts named in `limits` (the field as the file names it -> its column's
    length, from `column_length`) fits; each that does not is logged as ``field 'x': a text of …``."""
    fits = True
    for key, limit in limits.items():
        problem = text_too_long(record.get(key), limit)
        if problem is not None:
            log.add(where, f"field '{key}': {problem}")
            fits = False
    return fits


def clipped(text: str, limit: int) -> str:
    """A text Goldkey wrote itself (a gate's verdict naming what it found) cut to its column's length: an
    over-long verdict is still the verdict, where an over-long value from a file is refused."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_WS = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


def json_line(text: str, path: tuple) -> int:
    """The 1-based line on which the value at `path` (object keys and list indices) starts.

    Only for error messages, so it re-scans the text instead of slowing every parse down; if the
    path cannot be followed it returns the line of the deepest value it reached.
    """
    pos = _json_pos(text, path)
    return text.count("\n", 0, min(pos, len(text))) + 1


def json_key_lines(text: str, path: tuple) -> dict[str, int]:
    """The line of every key of the object at `path`, in one pass: files keyed by item id name the line."""
    pos, lines, line, counted = _json_pos(text, path), {}, 1, 0
    try:
        if text[pos] != "{":
            return {}
        pos = _WS.match(text, pos + 1).end()
        while text[pos] != "}":
            line += text.count("\n", counted, pos)
            counted = pos
            key, pos = _DECODER.raw_decode(text, pos)
            lines[key] = line
            _, pos = _DECODER.raw_decode(text, _WS.match(text, _WS.match(text, pos).end() + 1).end())
            pos = _WS.match(text, pos).end()
            if text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()
    except (IndexError, ValueError):
        pass
    return lines


def _json_pos(text: str, path: tuple) -> int:
    pos = _WS.match(text, 0).end()
    try:
        for step in path:
            if text[pos] == "{" and isinstance(step, str):
                pos = _WS.match(text, pos + 1).end()
                while text[pos] != "}":
                    key, pos = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, _WS.match(text, pos).end() + 1).end()  # past the colon
                    if key == step:
                        break
                    _, pos = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, pos).end()
                    if text[pos] == ",":
                        pos = _WS.match(text, pos + 1).end()
                else:
                    break
            elif text[pos] == "[" and isinstance(step, int):
                pos = _WS.match(text, pos + 1).end()
                for _ in range(step):
                    _, pos = _DECODER.raw_decode(text, pos)
                    pos = _WS.match(text, pos).end()
                    if text[pos] == ",":
                        pos = _WS.match(text, pos + 1).end()
            else:
                break
    except (IndexError, ValueError):
        pass
    return pos


@dataclass
class JsonDocument:
    """One JSON file's text, to turn a path inside it into 'FILE:LINE: path'."""

    name: str
    text: str
    prefix: tuple = ()

    def at(self, *path) -> str:
        full = self.prefix + path
        label = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(full))
        return f"{self.name}:{json_line(self.text, full)}" + (f": {label}" if label else "")

    def inside(self, *path) -> "JsonDocument":
        return JsonDocument(self.name, self.text, self.prefix + path)


def read_json_document(path: Path) -> tuple[JsonDocument, object]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFailed([f"{path}: cannot be read: {exc.strerror or exc}"]) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ImportFailed([f"{path.name}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from exc
    try:
        return JsonDocument(path.name, text), json_loads_checked(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed([f"{path.name}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"]) from exc
    except JsonRefused as exc:
        if exc.path:
            where = JsonDocument(path.name, text).at(*exc.path)
        else:
            where = f"{path.name}:{text.count(chr(10), 0, exc.offset or 0) + 1}"
        raise ImportFailed([f"{where}: {exc.message}"]) from None



READ_CHUNK = 1 << 20


class _Chunks:
    """A text file read a chunk at a time, with the line of the read position."""

    def __init__(self, handle, size: int):
        self.handle, self.size = handle, size
        self.buffer, self.pos, self.line, self.eof = "", 0, 1, False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        piece = self.handle.read(self.size)
        self.buffer, self.pos, self.eof = self.buffer[self.pos:] + piece, 0, not piece
        return bool(piece)

    def peek(self) -> str | None:
        """The next non-blank character (None at the end of the file)."""
        while True:
            end = _WS.match(self.buffer, self.pos).end()
            self.line, self.pos = self.line + self.buffer.count("\n", self.pos, end), end
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if self.eof or not self._more():
                return None

    def advance(self) -> None:
        self.pos += 1

    def value_text(self) -> str:
        """The text of the JSON element that starts here. It is decoded again, once more text is read,
        until a ',' or ']' follows it: a chunk may end inside it, and a number cut short ("3." of "3.5")
        decodes as another number."""
        while True:
            try:
                _, end = self.decoder.raw_decode(self.buffer, self.pos)
                following = _WS.match(self.buffer, end).end()
                if self.eof or (following < len(self.buffer) and self.buffer[following] in ",]"):
                    break
            except json.JSONDecodeError:
                if self.eof:
                    raise
            self._more()
        text = self.buffer[self.pos:end]
        self.line, self.pos = self.line + text.count("\n"), end
        return text


def read_json_array(path: Path, log: ErrorLog, *, chunk: int = READ_CHUNK) -> Iterator[tuple[int, object]]:
    """Yield (line number, element) of a file holding one JSON array, an element at a time: a
    benchmark's question file can be hundreds of megabytes (LongMemEval's ``_s`` 277 MB, ``_m`` 2.7 GB),
    too much to hold as one text and its parse. Each element passes the same hostile-input checks as a
    whole document (an element refused is logged and the rest still read); a syntax error ends the
    reading, since nothing after it can be placed."""
    try:
        handle = path.open("r", encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise ImportFailed([f"{path}: cannot be read: {exc.strerror or exc}"]) from exc
    with handle:
        text = _Chunks(handle, chunk)
        try:
            if text.peek() != "[":
                log.add(f"{path.name}:{text.line}", "expected a JSON array")
                return
            text.advance()
            if text.peek() == "]":
                text.advance()
            else:
                while True:
                    if text.peek() is None:
                        log.add(f"{path.name}:{text.line}", "invalid JSON: the array is not closed")
                        return
                    start = text.line
                    try:
                        raw = text.value_text()
                    except json.JSONDecodeError as exc:
                        line = text.line + text.buffer.count("\n", text.pos, exc.pos)
                        log.add(f"{path.name}:{line}", f"invalid JSON: {exc.msg}")
                        return
                    try:
                        value = json_loads_checked(raw)
                    except JsonRefused as exc:
                        log.add(f"{path.name}:{start}" + (f": {exc.label}" if exc.path else ""), exc.message)
                    else:
                        yield start, value
                    following = text.peek()
                    if following == ",":
                        text.advance()
                        continue
                    if following == "]":
                        text.advance()
                        break
                    log.add(f"{path.name}:{text.line}", "invalid JSON: expected ',' or ']' after an element"
                            if following else "invalid JSON: the array is not closed")
                    return
            if text.peek() is not None:
                log.add(f"{path.name}:{text.line}", "invalid JSON: text after the array")
        except UnicodeDecodeError as exc:
            log.add(f"{path.name}:{text.line}", f"not UTF-8 text ({exc.reason})")
