"""Reading run files: every problem as FILE:LINE: field, and nothing returned when there is one."""

import json

import pytest

from scoring.metrics import KeyItem, Prediction, figures
from scoring.parsing import (
    NO_ABSTENTION,
    ImportFailed,
    ScoreLevelFile,
    predictions_parse,
    results_parse,
    score_level_parse,
    score_level_read,
)

KEY = {
    "conv-1:b1": KeyItem("conv-1:b1", "contradicting", "conv-1", ("D1:1",), 400),
    "conv-1:a1": KeyItem("conv-1:a1", "aligned", "conv-1", (), 400),
    "conv-2:h1": KeyItem("conv-2:h1", "hard_negative", "conv-2", (), 700),
    "conv-2:b2": KeyItem("conv-2:b2", "contradicting", "conv-2", ("D3:4",), 700),
}


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def good_rows():
    return [
        {"item_id": "conv-1:b1", "aligned": False, "evidence": ["D1:1", "D2:2"]},
        {"item_id": "conv-1:a1", "aligned": True, "evidence": []},
        {"item_id": "conv-2:h1", "aligned": False, "evidence": ["D5:1"], "extra": "ignored"},
        {"item_id": "conv-2:b2", "aligned": True, "evidence": ["D3:4"]},
    ]


def refusal(call) -> list[str]:
    with pytest.raises(ImportFailed) as caught:
        call()
    return caught.value.errors


def test_a_valid_predictions_file_parses_to_one_prediction_per_key_item(tmp_path):
    parsed = predictions_parse(path=write_jsonl(tmp_path / "run.jsonl", good_rows()), key=KEY)
    assert parsed["conv-1:b1"] == Prediction(aligned=False, evidence=("D1:1", "D2:2"))
    assert set(parsed) == set(KEY)
    assert figures(list(KEY.values()), parsed)["CR"]["k"] == 1


def test_predictions_with_a_missing_an_unknown_a_duplicate_and_a_bad_type_name_each_line(tmp_path):
    rows = good_rows()
    rows[1] = {"item_id": "conv-9:zz", "aligned": True, "evidence": []}  # line 2: unknown (a1 now missing)
    rows[2]["aligned"] = "no"  # line 3: bad type
    rows.append({"item_id": "conv-1:b1", "aligned": True, "evidence": []})  # line 5: duplicate of line 1
    errors = refusal(lambda: predictions_parse(path=write_jsonl(tmp_path / "run.jsonl", rows), key=KEY))
    assert errors == [
        "run.jsonl:2: item_id: unknown item 'conv-9:zz' (not in the key)",
        "run.jsonl:3: aligned: must be true or false, got 'no'",
        "run.jsonl:5: item_id: duplicate prediction for 'conv-1:b1' (first on line 1)",
        "run.jsonl:5: item_id: no prediction for key item 'conv-1:a1' (Track B has no abstention: every key item needs a prediction)",
    ]


def test_predictions_with_bad_evidence_missing_fields_and_broken_json_are_refused(tmp_path):
    rows = [
        {"item_id": "conv-1:b1", "aligned": False, "evidence": "D1:1"},
        {"item_id": "conv-1:a1", "aligned": True},
        {"item_id": "conv-2:h1", "aligned": True, "evidence": ["D1:1", 3]},
        '{"item_id": "conv-2:b2", "aligned": tru',
        {"aligned": True, "evidence": []},
    ]
    errors = refusal(lambda: predictions_parse(path=write_jsonl(tmp_path / "bad.jsonl", rows), key=KEY))
    assert errors[0] == "bad.jsonl:1: evidence: must be a list of cited ids (best first), got str"
    assert errors[1] == "bad.jsonl:2: evidence: missing (use [] when nothing is cited)"
    assert errors[2] == "bad.jsonl:3: evidence[1]: every cited id must be a non-empty string, got 3"
    assert errors[3].startswith("bad.jsonl:4: invalid JSON")
    assert errors[4] == "bad.jsonl:5: item_id: missing"
    assert errors[5].startswith("bad.jsonl:5: item_id: no prediction for key item 'conv-2:b2'")
    assert len(errors) == 6


def results_document(rows_by_config, scores=None):
    return {"scores": scores or {}, "results": rows_by_config}


def released_row(item_id, pred_aligned, attributed=None, fact_only=False, **extra):
    key_item = KEY[item_id]
    return {"item_id": item_id, "conv": key_item.conversation, "type": key_item.gold,
            "gold_aligned": key_item.gold != "contradicting", "pred_aligned": pred_aligned,
            "verdict_correct": pred_aligned == (key_item.gold != "contradicting"),
            "attributed": attributed, "cited_fact_only": fact_only, **extra}


def good_results():
    return [
        released_row("conv-1:b1", False, True),
        released_row("conv-1:a1", True),
        released_row("conv-2:h1", False),
        released_row("conv-2:b2", False, False, True),
    ]


def write_json(path, data):
    path.write_text(json.dumps(data, indent=1))
    return path


def test_the_released_results_format_parses_every_configuration_in_file_order(tmp_path):
    path = write_json(tmp_path / "results.json", results_document({"sys:b": good_results(), "sys:a": good_results()}))
    runs = results_parse(path=path, key=KEY)
    assert list(runs) == ["sys:b", "sys:a"]
    assert runs["sys:a"]["conv-1:b1"] == Prediction(aligned=False, attributed=True, cited_fact_only=False)
    result = figures(list(KEY.values()), runs["sys:a"])
    assert (result["Attr"]["k"], result["Attr"]["n"], result["fact_only"]["k"]) == (1, 2, 1)


def test_stored_scores_and_verdicts_in_a_results_file_are_never_read(tmp_path):
    rows = good_results()
    honest = results_parse(path=write_json(tmp_path / "a.json", results_document({"s": rows})), key=KEY)
    for row in rows:
        row["verdict_correct"] = True
        row["gold_aligned"] = True
    lying = results_parse(path=write_json(tmp_path / "b.json", results_document({"s": rows}, {"s": {"contradicting_acc": 1.0}})), key=KEY)
    assert lying == honest


def line_of(path, needle, occurrence=1):
    hits = [n for n, line in enumerate(path.read_text().splitlines(), start=1) if needle in line]
    return hits[occurrence - 1]


def test_results_errors_name_the_line_of_the_field(tmp_path):
    rows = good_results()
    rows[1]["pred_aligned"] = "yes"
    rows[2]["item_id"] = "conv-7:nope"
    rows[3]["conv"] = "conv-1"
    rows.append(released_row("conv-1:b1", False, True))  # duplicate
    path = write_json(tmp_path / "results.json", results_document({"sys": rows}))
    errors = refusal(lambda: results_parse(path=path, key=KEY))
    bad_value = line_of(path, '"pred_aligned": "yes"')
    unknown = line_of(path, "conv-7:nope")
    wrong_conv = line_of(path, '"conv": "conv-1"', 3)
    duplicate = line_of(path, '"item_id": "conv-1:b1"', 2)
    first = line_of(path, '"item_id": "conv-1:b1"')
    config = line_of(path, '"sys"')
    assert errors == [
        f"results.json:{bad_value}: pred_aligned: must be true or false, got 'yes'",
        f"results.json:{unknown}: item_id: unknown item 'conv-7:nope' (not in the key)",
        f"results.json:{wrong_conv}: conv: 'conv-1' but the key's item 'conv-2:b2' is in 'conv-2'",
        f"results.json:{duplicate}: item_id: duplicate prediction for 'conv-1:b1' in 'sys' (first on line {first})",
        f"results.json:{config}: item_id: no prediction for key item 'conv-2:h1' in 'sys' {NO_ABSTENTION}",
    ]


def test_results_refuse_a_flagged_contradiction_without_its_attribution_outcome(tmp_path):
    rows = good_results()
    rows[0]["attributed"] = None
    rows[1]["cited_fact_only"] = "no"
    path = write_json(tmp_path / "results.json", results_document({"sys": rows}))
    errors = refusal(lambda: results_parse(path=path, key=KEY))
    assert [e.split(": ", 1)[1] for e in errors] == [
        "attributed: null on 'conv-1:b1', a flagged contradicting item: true or false needed to score Attr",
        "cited_fact_only: must be true or false, got 'no'",
    ]


def test_a_results_file_without_results_or_with_broken_json_is_refused(tmp_path):
    assert refusal(lambda: results_parse(path=write_json(tmp_path / "x.json", {"scores": {}}), key=KEY)) == [
        "x.json:1: results: missing (expected an object mapping each configuration to its per-item list)"
    ]
    (tmp_path / "y.json").write_text('{"results": {\n  "a": [\n}')
    assert refusal(lambda: results_parse(path=tmp_path / "y.json", key=KEY))[0].startswith("y.json:3: invalid JSON")
    path = write_json(tmp_path / "z.json", results_document({"sys": {"item_id": "x"}}))
    config = line_of(path, '"sys"')
    assert refusal(lambda: results_parse(path=path, key=KEY)) == [f"z.json:{config}: results.sys: expected a list of items, got dict"]


def test_score_level_ingests_map_to_the_report_metric_names_and_refuse_bad_values(tmp_path):
    path = write_json(tmp_path / "ingest2.json", {"note": "lost", "scores": {"m": {"contradicting_acc": 0.421, "aligned_acc": 0.984, "hard_negative_acc": 0.984, "attribution_acc": 0.375}}})
    assert score_level_parse(path=path) == {"m": {"CR": 0.421, "AS": 0.984, "HNS": 0.984, "Attr": 0.375}}
    bad = write_json(tmp_path / "bad.json", {"scores": {"m": {"contradicting_acc": 1.5}}})
    assert refusal(lambda: score_level_parse(path=bad)) == [
        f"bad.json:{line_of(bad, 'contradicting_acc')}: scores.m.contradicting_acc: must be a number in [0, 1], got 1.5"
    ]


def test_a_score_level_file_keeps_its_note_and_refuses_no_systems_a_system_without_scores_and_a_bad_note(tmp_path):
    path = write_json(tmp_path / "ok.json", {"note": "outputs lost", "scores": {"m": {"contradicting_acc": 0.5, "n": 161}}})
    assert score_level_read(path=path) == ScoreLevelFile(note="outputs lost", scores={"m": {"CR": 0.5}})
    empty = write_json(tmp_path / "empty.json", {"scores": {}})
    assert refusal(lambda: score_level_read(path=empty)) == [f"empty.json:{line_of(empty, 'scores')}: scores: no systems"]
    bare = write_json(tmp_path / "bare.json", {"note": 3, "scores": {"m": {"balanced_acc": 0.7}}})
    system_line = line_of(bare, '"m"')
    assert refusal(lambda: score_level_read(path=bare)) == [
        f"bare.json:{line_of(bare, 'note')}: note: must be a string, got int",
        f"bare.json:{system_line}: scores.m: none of contradicting_acc, aligned_acc, hard_negative_acc, "
        "attribution_acc (nothing to report for this ingest)",
    ]
