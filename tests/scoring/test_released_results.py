"""The 13 released Track B configurations scored against TWIST-v1.0 reproduce the paper's §7.3 figures.

The key is not read from a file: the released trail (candidates, both annotators' answers, the
council, the adjudicator's decisions) is imported and frozen by the key service, exactly as the key
tests do, and its 161 entries are scored. The released per-item outputs are parsed by the run parser;
their stored `scores` block is never read. Each figure is compared at the precision the paper printed.
../shared/seeds/twist-paper.txt §7.3 and ../shared/PROTOCOL.md §10.
"""

import json
from decimal import ROUND_HALF_UP, Decimal
from types import SimpleNamespace

import pytest
from statsmodels.stats.proportion import proportion_confint

from goldkey.lib import statistics as st
from keys.services import key_verify
from scoring.metrics import (
    CONTRADICTING,
    HARD_NEGATIVE,
    LONG,
    SHORT,
    mcnemar_family,
    multi_ingest,
    run_score,
    score_report,
)
from scoring.parsing import results_parse, score_level_parse
from scoring.selectors import key_items
from tests.conftest import require_shared_data
from tests.scoring.conftest import DROPPED_IN_V11, RESULTS

pytestmark = [pytest.mark.realdata, pytest.mark.django_db]

DEPLOYED = "mindtwin"


@pytest.fixture(scope="module")
def keys(released_keys, django_db_blocker):
    """TWIST-v1.0 and v1.1 as plain records: scoring is pure from here on."""
    with django_db_blocker.unblock():
        yield {
            key.version: SimpleNamespace(version=key.version, sha256=key.sha256, verify=key_verify(version=key.version),
                                         entries=key_items(key))
            for key in (released_keys["TWIST-v1.0"], released_keys["TWIST-v1.1"])
        }


@pytest.fixture(scope="module")
def v10(keys):
    return keys["TWIST-v1.0"]


@pytest.fixture(scope="module")
def runs(v10):
    return results_parse(path=require_shared_data(*RESULTS), key={e.item_id: e for e in v10.entries})


@pytest.fixture(scope="module")
def report(v10, runs):
    return score_report(key_version=v10.version, key_sha256=v10.sha256, entries=v10.entries, runs=runs)


def r2(x: float) -> float:
    return round(x, 2)


def test_the_key_is_the_frozen_161_items_and_its_hash_verifies(v10, report):
    counts = {g: sum(e.gold == g for e in v10.entries) for g in ("contradicting", "aligned", "hard_negative")}
    assert len(v10.entries) == 161 and counts == {"contradicting": 38, "aligned": 61, "hard_negative": 62}
    assert v10.verify["ok"] and v10.verify["computed"] == v10.sha256
    assert report["key"] == {"version": "TWIST-v1.0", "sha256": v10.sha256}
    assert len(report["runs"]) == 13 and all(r["ignored_predictions"] == 0 for r in report["runs"].values())


def test_deployed_system_cr_0_421_wilson_0_28_0_58_gcr_0_18_attr_0_44_over_16_flags(report):
    deployed = report["runs"][DEPLOYED]
    assert (deployed["CR"]["k"], deployed["CR"]["n"]) == (16, 38)
    assert round(deployed["CR"]["value"], 3) == 0.421
    assert [r2(x) for x in deployed["CR"]["wilson"]] == [0.28, 0.58]
    assert (deployed["GCR"]["k"], deployed["GCR"]["n"], r2(deployed["GCR"]["value"])) == (7, 38, 0.18)
    # "the deployed system's strong-looking 0.44 is computed over only 16 flags"
    assert (deployed["Attr"]["k"], deployed["Attr"]["n"], r2(deployed["Attr"]["value"])) == (7, 16, 0.44)
    # "1.000 / 0.984 specificity"
    assert (round(deployed["AS"]["value"], 3), round(deployed["HNS"]["value"], 3)) == (1.0, 0.984)
    assert deployed["fact_only"]["k"] == 4


def test_flat_rag_gemini_cr_0_76_and_full_context_gpt_4o_hns_0_37(report):
    assert r2(report["runs"]["flatrag:gemini"]["CR"]["value"]) == 0.76
    full = report["runs"]["fullcontext:openai"]["HNS"]
    assert (full["k"], full["n"], r2(full["value"])) == (23, 62, 0.37)


def test_flat_rag_gpt_4o_hns_is_35_of_62_which_the_paper_prints_as_0_57_by_rounding_0_565_again(report):
    hns = report["runs"]["flatrag:openai"]["HNS"]
    assert (hns["k"], hns["n"]) == (35, 62)
    # 35/62 = 0.56452: 0.565 at three places (Table 3), but 0.56 at two. The text's 0.57 is the
    # three-place figure rounded half-up a second time; it is not 35/62 rounded once.
    assert round(hns["value"], 3) == 0.565 and r2(hns["value"]) == 0.56
    assert Decimal("0.565").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == Decimal("0.57")


def test_the_620_turn_split_deployed_cr_0_48_to_0_31_and_the_other_stated_directions(report):
    strata = report["runs"][DEPLOYED]["strata"]
    assert (strata[SHORT]["n_items"], strata[LONG]["n_items"]) == (74, 87)
    assert (strata[SHORT]["CR"]["k"], strata[SHORT]["CR"]["n"], strata[LONG]["CR"]["k"], strata[LONG]["CR"]["n"]) == (12, 25, 4, 13)
    assert (r2(strata[SHORT]["CR"]["value"]), r2(strata[LONG]["CR"]["value"])) == (0.48, 0.31)

    def split(run, metric):
        s = report["runs"][run]["strata"]
        return r2(s[SHORT][metric]["value"]), r2(s[LONG][metric]["value"])

    assert split("flatrag:gemini", "CR") == (0.84, 0.62)
    assert split("flatrag:anthropic", "HNS") == (0.78, 0.71)
    assert split("fullcontext:anthropic", "CR") == (0.92, 1.0)
    assert report["runs"][DEPLOYED]["strata"][LONG]["CR"]["n"] == 13  # "n=13 long-history contradicting items"


def test_the_other_section_7_3_figures(report):
    runs = report["runs"]

    def value(run, metric, places=2):
        return round(runs[run][metric]["value"], places)

    assert [value(f"oracle:{b}", "CR", 3) for b in ("openai", "anthropic", "gemini")] == [1.0, 1.0, 1.0]
    assert [value("fullcontext:anthropic", m, 3) for m in ("CR", "AS", "HNS", "Attr")] == [0.947, 0.951, 0.919, 0.889]
    assert value("fullcontext:gemini", "CR") == 0.92
    assert (value("oracle:openai", "HNS"), value("oracle:anthropic", "HNS")) == (0.42, 0.50)
    assert [value(f"draftonly:{b}", "CR") for b in ("openai", "anthropic", "gemini")] == [0.71, 0.34, 0.03]
    assert (value("draftonly:openai", "AS"), value("draftonly:openai", "HNS")) == (0.85, 0.90)
    assert all(runs[f"draftonly:{b}"]["Attr"]["k"] == 0 for b in ("openai", "anthropic", "gemini"))
    # GCR ladder: deployed 0.18, flat RAG 0.45–0.55, full-context Claude 0.84, gold evidence 0.97–1.00.
    assert sorted(value(f"flatrag:{b}", "GCR") for b in ("openai", "anthropic", "gemini")) == [0.45, 0.5, 0.55]
    assert value("fullcontext:anthropic", "GCR") == 0.84
    assert sorted(value(f"oracle:{b}", "GCR") for b in ("openai", "anthropic", "gemini")) == [0.97, 1.0, 1.0]
    # Gemini's restraint "comparatively stable across all three conditions (0.84–0.90)".
    assert sorted(value(f"{c}:gemini", "HNS") for c in ("flatrag", "fullcontext", "oracle")) == [0.84, 0.87, 0.9]
    # Flat RAG "detect 0.76–0.97 of true contradictions".
    assert sorted(value(f"flatrag:{b}", "CR") for b in ("openai", "anthropic", "gemini")) == [0.76, 0.92, 0.97]


def test_every_wilson_interval_is_the_statsmodels_wilson_interval(report):
    checked = 0
    for figures in report["runs"].values():
        for section in [figures, *figures["strata"].values()]:
            for metric in ("CR", "AS", "HNS", "Attr", "GCR", "fact_only"):
                k, n = section[metric]["k"], section[metric]["n"]
                if n:
                    assert section[metric]["wilson"] == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-7)
                    checked += 1
    assert checked > 13 * 3 * 6 - 20


def test_every_bootstrap_interval_is_the_plain_published_procedure(v10, runs, report):
    for name, predictions in runs.items():
        plain = run_score(entries=v10.entries, predictions=predictions)
        assert report["runs"][name] == plain
        for metric in ("CR", "AS", "HNS"):
            low, high = plain[metric]["bootstrap"]
            assert 0 <= low <= plain[metric]["value"] <= high <= 1
    assert report["runs"][DEPLOYED]["bootstrap"] == {"replicates": 10_000, "seed": 7, "cluster": "conversation", "metrics": ["CR", "AS", "HNS"]}


def test_mcnemar_family_is_every_pair_on_both_classes_and_deployed_vs_flat_rag_gemini_raw_p_is_0_0023(v10, runs, report):
    assert report["family_size"] == 13 * 12 // 2 * 2 == len(report["mcnemar"])
    assert report["mcnemar"] == mcnemar_family(entries=v10.entries, runs=runs)["tests"]
    test = next(t for t in report["mcnemar"] if (t["a"], t["b"], t["class"]) == (DEPLOYED, "flatrag:gemini", CONTRADICTING))
    assert (test["b_count"], test["c_count"]) == (2, 15)
    assert round(test["p"], 4) == 0.0023
    assert test["p_holm"] > 0.05


def test_deployed_vs_flat_rag_gemini_is_not_significant_after_holm_in_any_90_test_family(v10, runs):
    # PROTOCOL.md §10 quotes Holm 0.133 over 90 tests. The natural 90-test families (10 of the 13
    # configurations, both classes) give 0.136 without the draft-only floors and without the
    # gold-evidence rows (0.117): neither is 0.133, and none reaches 0.05 — the paper's "significantly below
    # every record-grounded baseline (Holm-adjusted p < 0.05)" does not hold for flat-RAG Gemini.
    results = {}
    for dropped in ("draftonly", "oracle"):
        family = [n for n in runs if not n.startswith(dropped)]
        report = score_report(key_version=v10.version, key_sha256=v10.sha256, entries=v10.entries, runs=runs,
                              family=family, bootstrap=False)
        assert report["family_size"] == 90
        test = next(t for t in report["mcnemar"] if (t["a"], t["b"], t["class"]) == (DEPLOYED, "flatrag:gemini", CONTRADICTING))
        results[dropped] = round(test["p_holm"], 3)
    assert results == {"draftonly": 0.136, "oracle": 0.117}


def test_every_record_grounded_configuration_beats_its_draft_only_floor_on_contradictions(report):
    tests = {(t["a"], t["b"], t["class"]): t for t in report["mcnemar"]}
    for backend in ("openai", "anthropic", "gemini"):
        for condition in ("flatrag", "fullcontext", "oracle"):
            test = tests[(f"{condition}:{backend}", f"draftonly:{backend}", CONTRADICTING)]
            assert test["b_count"] > test["c_count"]
    hn = tests[("fullcontext:openai", "draftonly:openai", HARD_NEGATIVE)]
    assert hn["b_count"] < hn["c_count"]  # GPT-4o with the full transcript over-flags hard negatives more


def test_the_report_against_v1_1_differs_exactly_where_the_dropped_item_counted(keys, runs, report):
    v11 = keys["TWIST-v1.1"]
    assert len(v11.entries) == 160 and v11.verify["ok"] and v11.sha256 != keys["TWIST-v1.0"].sha256
    after = score_report(key_version=v11.version, key_sha256=v11.sha256, entries=v11.entries, runs=runs)
    assert after["key"] == {"version": "TWIST-v1.1", "sha256": v11.sha256}
    dropped = next(e for e in keys["TWIST-v1.0"].entries if e.item_id == DROPPED_IN_V11)
    for name, predictions in runs.items():
        old, new = report["runs"][name], after["runs"][name]
        assert new["ignored_predictions"] == 1
        caught = not predictions[DROPPED_IN_V11].aligned
        assert (new["CR"]["k"], new["CR"]["n"]) == (old["CR"]["k"] - caught, old["CR"]["n"] - 1)
        for metric in ("AS", "HNS"):
            assert new[metric] == old[metric]  # same items, same conversations, same draws
        stratum = SHORT if dropped.history_turns <= 620 else LONG
        other = LONG if stratum == SHORT else SHORT
        assert new["strata"][other] == old["strata"][other]
        assert new["strata"][stratum]["n_items"] == old["strata"][stratum]["n_items"] - 1
    deployed = after["runs"][DEPLOYED]
    assert (deployed["Attr"]["k"], deployed["Attr"]["n"], deployed["GCR"]["n"]) == (6, 15, 37)


def test_multi_ingest_points_for_the_deployed_system_from_the_released_ingests(v10, runs):
    second = score_level_parse(path=require_shared_data("twist-v1", "results", "track_b_results_v1.0_ingest2_scores.json"))
    result = multi_ingest(entries=v10.entries, ingests=[runs[DEPLOYED]], score_level=[second[DEPLOYED]])
    # The paper's third ingest (recall 0.32) is not among the released files: only two points exist.
    assert [round(p, 3) for p in result["CR"]["points"]] == [0.421, 0.421]
    low, high = result["CR"]["hierarchical"]
    assert 0 <= low < 0.421 < high <= 1
    flat = multi_ingest(entries=v10.entries, ingests=[runs["flatrag:openai"]], score_level=[second["flatrag:openai"]])
    assert [round(p, 2) for p in flat["HNS"]["points"]] == [0.56, 0.42] and flat["HNS"]["range"][0] == pytest.approx(0.419)


def test_the_results_file_stored_scores_are_not_what_the_report_reads(runs, report):
    stored = json.loads(require_shared_data(*RESULTS).read_text())["scores"]
    # The stored figures agree at their printed precision, but the report never looked at them.
    for name, figures in report["runs"].items():
        assert round(figures["CR"]["value"], 3) == stored[name]["contradicting_acc"]
        assert round(figures["HNS"]["value"], 3) == stored[name]["hard_negative_acc"]
        assert round(figures["balanced_accuracy"], 3) == pytest.approx(stored[name]["balanced_acc"], abs=0.0011)
    assert st.wilson_interval(16, 38) == tuple(report["runs"][DEPLOYED]["CR"]["wilson"])
