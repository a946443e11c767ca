"""The judge checked on the battery: the released judged battery file, judge–gold and cascade–gold agreement
overall and per battery tier, five-way and binary, with the bars. Every figure is recomputed here from the
file with scikit-learn, never taken from a stored value."""

import json
import math
import warnings

import pytest
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from goldkey.lib.jsonio import ImportFailed
from lapse.validation import judge_battery_validate, judged_battery_read

FILE = "gold_battery.judged.local-seed-oss-36b-instruct-pv2.jsonl"
FIVE = ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT")
TWO = {"PROCEED": "P", "HEDGE": "W", "TEMPLATE": "W"}


@pytest.fixture
def path(shared_data):
    return shared_data("lapse-gold", FILE)


def raw_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def independent(rows, detector, mapping):
    """(kappa, agree, n) by scikit-learn on the pairs where both labels are in `mapping`."""
    pairs = [(mapping[r["gold"]], mapping[r[detector]]) for r in rows if r["gold"] in mapping and r[detector] in mapping]
    gold, said = [g for g, _ in pairs], [d for _, d in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns on the single-class canonical binary table
        kappa = cohen_kappa_score(gold, said) if pairs else math.nan
    if math.isnan(kappa) and pairs and gold == said:
        # scikit-learn leaves kappa undefined when both raters used one class and agree throughout;
        # Goldkey's statistics module defines that as perfect agreement (goldkey.lib.statistics.cohen_kappa).
        kappa = 1.0
    return kappa, sum(g == d for g, d in pairs), len(pairs)


def verdict(kappa):
    if kappa is None or math.isnan(kappa):
        return ""
    return "pass" if kappa >= 0.75 else "revise" if kappa < 0.65 else "between"


def check(section, rows):
    for detector in ("judge", "cascade"):
        for kind, mapping in (("five_way", {label: label for label in FIVE}), ("binary", TWO)):
            figure = section[detector][kind]
            kappa, agree, n = independent(rows, detector, mapping)
            assert (figure["agree"], figure["n"]) == (agree, n), (detector, kind)
            if math.isnan(kappa):
                assert figure["kappa"] is None
            else:
                assert figure["kappa"] == pytest.approx(kappa, abs=1e-12), (detector, kind)
            assert figure["verdict"] == (verdict(kappa) if n else "")
            assert figure["excluded"] + figure["missing"] + n == len(rows)


def test_judge_and_cascade_against_battery_gold_overall_match_an_independent_computation(path):
    rows = raw_rows(path)
    report = judge_battery_validate(judged_battery_read(path))
    assert report["n"] == len(rows) == 168
    check(report["overall"], rows)
    assert report["bars"]["passes"] == 0.75 and report["bars"]["revise"] == 0.65


def test_judge_and_cascade_per_battery_tier_match_an_independent_computation(path):
    rows = raw_rows(path)
    report = judge_battery_validate(judged_battery_read(path))
    tiers = sorted({r["tier"] for r in rows})
    assert list(report["by_tier"]) == tiers == ["adversarial", "canonical"]
    for tier in tiers:
        subset = [r for r in rows if r["tier"] == tier]
        assert report["by_tier"][tier]["n"] == len(subset)
        check(report["by_tier"][tier], subset)


def test_judge_validate_command_prints_the_figures_as_json(path, capsys):
    call_command("judge_validate", str(path), "--json")
    result = json.loads(capsys.readouterr().out)
    rows = raw_rows(path)
    kappa, agree, n = independent(rows, "judge", TWO)
    assert result["overall"]["judge"]["binary"]["kappa"] == pytest.approx(kappa, abs=1e-12)
    assert (result["overall"]["judge"]["binary"]["agree"], result["overall"]["judge"]["binary"]["n"]) == (agree, n)
    assert set(result["by_tier"]) == {"canonical", "adversarial"}


def test_judge_validate_command_prints_a_summary_with_verdicts(path, capsys):
    call_command("judge_validate", str(path))
    out = capsys.readouterr().out
    assert "168 judged battery item(s)" in out and "canonical (n 104)" in out and "adversarial (n 64)" in out
    kappa, _, _ = independent(raw_rows(path), "judge", TWO)
    assert f"binary kappa {kappa:.3f} {verdict(kappa)}" in out


def test_a_judged_battery_line_missing_a_field_refuses_the_file_naming_file_line_and_field(tmp_path):
    bad = tmp_path / "judged.jsonl"
    bad.write_text(
        json.dumps({"battery_id": "b1", "tier": "canonical", "gold": "HEDGE", "cascade": "HEDGE", "judge": "HEDGE"}) + "\n"
        + json.dumps({"battery_id": "b2", "tier": "canonical", "gold": "HEDGE", "cascade": "HEDGE"}) + "\n"
    )
    with pytest.raises(ImportFailed) as refused:
        judged_battery_read(bad)
    assert refused.value.errors == ["judged.jsonl:2: field 'judge': missing or not a string"]


def test_a_repeated_battery_id_or_unknown_gold_is_refused(tmp_path):
    row = {"battery_id": "b1", "tier": "canonical", "gold": "HEDGE", "cascade": "HEDGE", "judge": "HEDGE"}
    bad = tmp_path / "judged.jsonl"
    bad.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n" + json.dumps(row | {"battery_id": "b3", "gold": "MAYBE"}) + "\n")
    with pytest.raises(ImportFailed) as refused:
        judged_battery_read(bad)
    assert refused.value.errors[0] == "judged.jsonl:2: field 'battery_id': 'b1' appears twice"
    assert refused.value.errors[1].startswith("judged.jsonl:3: field 'gold': 'MAYBE' is not one of")
