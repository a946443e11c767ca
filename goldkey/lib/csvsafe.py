"""CSV for spreadsheet users, safe to open: item texts, notes and run names are imported or LLM-generated,
and a spreadsheet runs a cell that starts with = + - @ (or a tab or carriage return, which some read
past) as a formula. Such a text cell is written with a leading apostrophe, which spreadsheets show as
text; numbers are written as numbers, so a negative figure stays a number."""

import csv
import io
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value) -> object:
    """A value as a CSV cell: None is empty, numbers stay numbers, texts cannot start a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else value  # shortest round-trip text
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """A header and rows as CSV text (one line per row, "\\n" line ends), every cell through safe_cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([safe_cell(name) for name in header])
    writer.writerows([safe_cell(value) for value in row] for row in rows)
    return out.getvalue()
