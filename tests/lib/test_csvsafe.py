"""The formula-safe CSV writer: a text cell that a spreadsheet would run is written as text."""

import csv
import io

import pytest

from goldkey.lib.csvsafe import csv_text, safe_cell


@pytest.mark.parametrize(
    "text", ["=1+1", "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "\n=1", "\r\n@A1", " =1", "  -1+2", " \r+1",
             '=HYPERLINK("http://x","y")'],
)
def test_a_text_that_would_start_a_formula_gets_an_apostrophe(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["plain", "a=b", "1+1", " a =1", "  indented", "", "ünïcode – dash"])
def test_other_texts_are_written_unchanged(text):
    assert safe_cell(text) == text


def test_numbers_stay_numbers_even_when_negative():
    assert safe_cell(-3) == -3
    assert safe_cell(-0.25) == "-0.25"
    assert safe_cell(0.1 + 0.2) == "0.30000000000000004"  # the exact float, as repr writes it
    assert (safe_cell(None), safe_cell(True), safe_cell(False)) == ("", "true", "false")


def test_csv_text_quotes_what_csv_must_and_reads_back():
    text = csv_text(["item", "note"], [["a,b", 'say "hi"\nthen go'], ["=cmd", None], [-1, 2.5]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["item", "note"], ["a,b", 'say "hi"\nthen go'], ["'=cmd", ""], ["-1", "2.5"]]
    assert text.startswith("item,note\n")


@pytest.mark.parametrize("text", ["\r=1+1", "x\ry", "x\ny"])
def test_a_cell_with_a_line_break_is_quoted_so_no_reader_breaks_the_row_there(text):
    written = csv_text(["note"], [[text, "next"]])
    line = written.split("\n", 1)[1]
    assert line.startswith('"')
    # A reader that ends a row at a bare CR (as some spreadsheets do) still finds the quoted cell whole.
    assert list(csv.reader(io.StringIO(written, newline=""))) == [["note"], [safe_cell(text), "next"]]
    assert written.endswith(',next\n')
