"""JSON from outside (import files, uploads, API bodies) parsed so that hostile input is refused with a
message, never a traceback: NaN/Infinity, nesting past MAX_JSON_DEPTH, texts past MAX_JSON_TEXT, and
texts no database stores (a NUL character, a lone surrogate)."""

import json
import math
import re

# Limits for every JSON reader (import files, uploads, API bodies). The released data nests 6 levels
# and its longest text is 16k characters; far beyond either is an attack or a broken exporter, and would
# otherwise end in a RecursionError (a traceback or a 500) or a row PostgreSQL refuses.
MAX_JSON_DEPTH = 32
MAX_JSON_TEXT = 100_000


class JsonRefused(ValueError):
    """Valid JSON that Goldkey refuses: NaN/Infinity, nesting past MAX_JSON_DEPTH, a text past MAX_JSON_TEXT.
    `path` (keys and indices) names the value when it is known, `offset` the character where it starts."""

    def __init__(self, message: str, *, path: tuple = (), offset: int | None = None):
        super().__init__(message)
        self.message, self.path, self.offset = message, path, offset

    @property
    def label(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(self.path))


_CONSTANT = re.compile(r"(?<![\w\"])(?:-?Infinity|NaN)(?![\w\"])")
_HUGE = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d{3,}")
_TOO_DEEP = f"nested more than {MAX_JSON_DEPTH} levels deep"
# JSON spells a NUL or a surrogate only as an escape (raw control characters are invalid, and the text was
# decoded from UTF-8, which has no surrogates); a string is searched only when the text holds one.
_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
# A pair of surrogates is one character once parsed: only a lone one is left in a Python string.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(text: str) -> str | None:
    """Why a text cannot be stored (PostgreSQL refuses NUL in text; a lone surrogate is no UTF-8), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group(0) == "\x00":
        return "holds a NUL character (\\u0000), which cannot be stored"
    return f"holds a lone surrogate (\\u{ord(found.group(0)):04x}), which is not text"


def storable(text: str) -> str:
    """`text` without what no database column stores (NUL, a lone surrogate): for texts Goldkey records
    as it was given them, from a source that is no file to refuse (what an endpoint says of itself)."""
    return _UNSTORABLE.sub("", text) if _UNSTORABLE.search(text) else text


def _refuse_constant(name: str):
    raise JsonRefused(f"{name} is not a JSON number (use null, or a number)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 reads as inf, which jsonb cannot store either
        raise JsonRefused(f"{text} is too large for a number")
    return value


def _depth_exceeded_at(text: str) -> int:
    """Where the nesting first passes MAX_JSON_DEPTH (error messages only; skips over strings)."""
    depth, in_string, escaped = 0, False, False
    for pos, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return pos
        elif char in "]}":
            depth -= 1
    return 0


# One decoder for every text (json.loads with these arguments builds a new one per call: 100,000 for an import).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def json_loads_checked(text: str) -> object:
    """json.loads for untrusted text: refuses NaN/Infinity (PostgreSQL's jsonb cannot store them), nesting
    deeper than MAX_JSON_DEPTH (Python's parser would hit its recursion limit, or a later json.dumps would) and
    texts longer than MAX_JSON_TEXT, raising JsonRefused. Syntax errors stay json.JSONDecodeError."""
    if text.startswith("\ufeff"):  # what json.loads says of a byte-order mark, before its decoder sees it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise JsonRefused(_TOO_DEEP, offset=_depth_exceeded_at(text)) from None
    except JsonRefused as exc:
        found = _CONSTANT.search(text) or _HUGE.search(text)
        exc.offset = found.start() if found else None
        raise
    suspicious = _ESCAPED_UNSTORABLE.search(text) is not None
    # Texts are looked at only where one can be refused: a text longer than the limit needs a longer
    # document, an unstorable one an escape in it. Otherwise only the nesting is, and not even that with too
    # few brackets to pass the limit: most lines of an import file (the walk was a third of their parse time,
    # and most of a LoCoMo file's, whose turns are strings).
    texts = suspicious or len(text) > MAX_JSON_TEXT
    if not texts and text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return value
    # An explicit stack, not recursion: the check must not fail the way it guards against.
    stack = [(value, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict | list):
            if len(where) >= MAX_JSON_DEPTH:
                raise JsonRefused(_TOO_DEEP, path=where)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if texts and isinstance(key, str):
                    if len(key) > MAX_JSON_TEXT:
                        raise JsonRefused(f"a key of {len(key):,} characters (at most {MAX_JSON_TEXT:,})", path=where)
                    if suspicious and (why := _unstorable(key)):
                        raise JsonRefused(f"a key {why}", path=where)
                if texts or isinstance(child, dict | list):
                    stack.append((child, (*where, key)))
        elif isinstance(node, str):
            if len(node) > MAX_JSON_TEXT:
                raise JsonRefused(f"a text of {len(node):,} characters (at most {MAX_JSON_TEXT:,})", path=where)
            if suspicious and (why := _unstorable(node)):
                raise JsonRefused(f"the text {why}", path=where)
    return value
