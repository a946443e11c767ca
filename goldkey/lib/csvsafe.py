"""CSV for spreadsheet users, safe to open: item texts, notes and run names are imported or LLM-generated,
and a spreadsheet runs a cell that starts with = + - @ as a formula — also after leading spaces, tabs or
line breaks, which some read past, and a spreadsheet that breaks rows at a bare carriage return starts a
new row (and so a new cell) after one. Such a text cell is written with a leading apostrophe, which
spreadsheets show as text, and every cell holding a line break is quoted; numbers are written as numbers,
so a negative figure stays a number."""

import csv
import io
import itertools
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@")
# What a spreadsheet may skip before it looks for a formula's first character.
SKIPPED = " \t\r\n"


def safe_cell(value) -> object:
    """A value as a CSV cell: None is empty, numbers stay numbers, texts cannot start a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else value  # shortest round-trip text
    text = str(value)
    runs = text.lstrip(SKIPPED).startswith(FORMULA_STARTS) or text.startswith(tuple(SKIPPED[1:]))
    return "'" + text if runs else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """A header and rows as CSV text (one line per row, "\\n" line ends), every cell through safe_cell.
    The csv module quotes a cell only for the characters of its own line end: with "\\r\\n" it quotes
    every cell holding either, and each row's end is then written back as "\\n"."""
    out = io.StringIO()
    row_text = io.StringIO()
    writer = csv.writer(row_text, lineterminator="\r\n")
    for row in itertools.chain([header], rows):
        row_text.seek(0)
        row_text.truncate()
        writer.writerow([safe_cell(value) for value in row])
        out.write(row_text.getvalue()[:-2] + "\n")
    return out.getvalue()
