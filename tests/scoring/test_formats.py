"""The score report's CSV: one row per run and metric, and run names (from imported files) formula-safe."""

import csv
import io

from scoring.formats import CSV_COLUMNS, HEADLINE, report_csv


def figure(k: int, n: int, bootstrap=None) -> dict:
    return {"k": k, "n": n, "value": k / n, "wilson": [0.1, 0.9], **({"bootstrap": bootstrap} if bootstrap else {})}


def report(run_name: str) -> dict:
    metrics = {m: figure(1, 4, bootstrap=[0.05, 0.75] if m == "CR" else None) for m in (*HEADLINE, "fact_only")}
    return {"key": {"version": "TWIST-v1.0", "sha256": "ab" * 32}, "runs": {run_name: metrics}}


def test_the_csv_has_one_row_per_metric_citing_the_key():
    rows = list(csv.reader(io.StringIO(report_csv(report("mindtwin")))))
    assert rows[0] == CSV_COLUMNS
    assert [r[3] for r in rows[1:]] == ["CR", "AS", "HNS", "Attr", "GCR", "fact_only"]
    assert rows[1] == ["TWIST-v1.0", "ab" * 32, "mindtwin", "CR", "1", "4", "0.25", "0.1", "0.9", "0.05", "0.75"]
    assert rows[2][-2:] == ["", ""]  # no bootstrap interval for AS here


def test_a_run_name_that_would_start_a_formula_is_written_as_text():
    rows = list(csv.reader(io.StringIO(report_csv(report("=HYPERLINK(\"http://x\")")))))
    assert {r[2] for r in rows[1:]} == {"'=HYPERLINK(\"http://x\")"}
