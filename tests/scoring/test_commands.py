"""score_import and score_report against TWIST-v1.0 frozen from the released trail: the 13 released
configurations import, bad files are refused by line with nothing stored, the report has the issue's
shape and is computed from the stored predictions, and v1.1 differs exactly where the dropped item counted."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from keys import triggers as key_triggers
from keys.models import KeyEntry
from scoring import metrics
from scoring import selectors as score_selectors
from scoring.models import RunPrediction, SystemRun
from scoring.parsing import results_parse
from tests.conftest import require_shared_data
from tests.scoring.conftest import DROPPED_IN_V11, RESULTS

pytestmark = [pytest.mark.realdata, pytest.mark.django_db]

DEPLOYED = "mindtwin"
FIGURE_FIELDS = {"k", "n", "value", "wilson"}


def run_command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def import_results(version="TWIST-v1.0", *extra) -> str:
    return run_command("score_import", version, str(require_shared_data(*RESULTS)), "--format", "results", *extra)


def report_json(version="TWIST-v1.0") -> dict:
    return json.loads(run_command("score_report", version, "--json"))


@pytest.fixture
def predictions_file(tmp_path, released_keys):
    """The deployed system's released outputs as a predictions JSONL (one line per v1.0 item, in key
    order), citing the gold evidence when the released run was attributed and a fact id when it cited
    extracted facts only."""
    key = released_keys["TWIST-v1.0"]
    entries = score_selectors.key_items(key)
    released = results_parse(path=require_shared_data(*RESULTS), key={e.item_id: e for e in entries})[DEPLOYED]
    lines = []
    for entry in entries:
        p = released[entry.item_id]
        evidence = list(entry.evidence[:1]) if p.attributed else ["fact:1"] if p.cited_fact_only else ["D99:1"]
        lines.append({"item_id": entry.item_id, "aligned": p.aligned, "evidence": evidence})
    path = tmp_path / "deployed.jsonl"

    def write(rows):
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    write.rows = lines
    return write


def test_the_13_released_configurations_import_as_13_runs_of_161_predictions(released_keys):
    out = import_results()
    runs = list(SystemRun.objects.filter(key=released_keys["TWIST-v1.0"]).order_by("id"))
    assert [run.name for run in runs][:3] == [DEPLOYED, "flatrag:openai", "flatrag:anthropic"]
    assert len(runs) == 13 and RunPrediction.objects.filter(run__in=runs).count() == 13 * 161
    assert runs[1].system == "flatrag" and runs[1].configuration == "openai" and runs[0].configuration == ""
    assert len({run.source_sha256 for run in runs}) == 1 and len(runs[0].source_sha256) == 64
    assert "13 run(s) imported against TWIST-v1.0" in out


def test_score_report_json_has_the_issue_shape_and_cites_the_key(released_keys):
    import_results()
    report = report_json()
    key = released_keys["TWIST-v1.0"]
    assert set(report) == {"key", "runs", "mcnemar", "family", "family_size", "multi_ingest", "unscorable", "outside_key"}
    assert report["key"] == {"version": "TWIST-v1.0", "sha256": key.sha256}
    deployed = report["runs"][DEPLOYED]
    for metric in ("CR", "AS", "HNS"):
        assert FIGURE_FIELDS | {"bootstrap"} <= set(deployed[metric])
        assert len(deployed[metric]["wilson"]) == len(deployed[metric]["bootstrap"]) == 2
    for metric in ("Attr", "GCR"):
        assert FIGURE_FIELDS <= set(deployed[metric])
    assert (deployed["CR"]["k"], deployed["CR"]["n"], round(deployed["CR"]["value"], 3)) == (16, 38, 0.421)
    assert [round(x, 2) for x in deployed["CR"]["wilson"]] == [0.28, 0.58]
    assert report["family_size"] == 13 * 12 // 2 * 2 == len(report["mcnemar"]) == report["family"]["size"]
    assert all(set(t) == {"a", "b", "class", "b_count", "c_count", "p", "p_holm", "family_size"} for t in report["mcnemar"])
    first = report["mcnemar"][0]
    assert (first["a"], first["b"], first["class"]) == (DEPLOYED, "flatrag:openai", "contradicting")  # a = imported first


def test_the_report_is_computed_from_the_stored_predictions(released_keys):
    import_results()
    key = released_keys["TWIST-v1.0"]
    stored = score_selectors.score_report(key)
    entries = score_selectors.key_items(key)
    from_file = metrics.score_report(key_version=key.version, key_sha256=key.sha256, entries=entries,
                                     runs=results_parse(path=require_shared_data(*RESULTS), key={e.item_id: e for e in entries}))
    assert stored["runs"] == from_file["runs"] and stored["mcnemar"] == from_file["mcnemar"]
    # Change one stored prediction: the report follows the rows, not anything recorded at import.
    run = SystemRun.objects.get(key=key, system=DEPLOYED)
    row = RunPrediction.objects.get(run=run, item_external_id=DROPPED_IN_V11)
    row.aligned = True
    row.save()
    assert score_selectors.score_report(key, bootstrap=False)["runs"][DEPLOYED]["CR"]["k"] == 15


def test_score_report_markdown_and_csv_cite_the_key_and_keep_cr_with_hns_and_as(released_keys):
    import_results()
    sha = released_keys["TWIST-v1.0"].sha256
    markdown = run_command("score_report", "TWIST-v1.0", "--markdown", "--replicates", "200")
    assert f"SHA-256 `{sha}`" in markdown and "| run | CR | CR Wilson | CR bootstrap | AS |" in markdown
    assert "| mindtwin | 0.421 (16/38) | [0.28, 0.58] |" in markdown
    assert "Family: 156 tests" in markdown
    rows = run_command("score_report", "TWIST-v1.0", "--csv", "--replicates", "200").splitlines()
    assert rows[0].startswith("key_version,key_sha256,run,metric,k,n,value")
    deployed = [row.split(",") for row in rows[1:] if row.split(",")[2] == DEPLOYED]
    assert [r[3] for r in deployed] == ["CR", "AS", "HNS", "Attr", "GCR", "fact_only"]
    assert all(r[0] == "TWIST-v1.0" and r[1] == sha for r in deployed)


def test_a_predictions_file_imports_as_one_run_with_its_metadata(released_keys, predictions_file):
    path = predictions_file(predictions_file.rows)
    run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed", "--meta", "model=gpt-4o",
                "--meta", "commit=abc123", "--by", "trail_author")
    run = SystemRun.objects.get()
    assert (run.name, run.metadata, run.imported_by, run.predictions.count()) == (
        "deployed", {"model": "gpt-4o", "commit": "abc123"}, released_keys["author"], 161)
    figures = score_selectors.score_report(released_keys["TWIST-v1.0"], bootstrap=False)["runs"]["deployed"]
    # Recomputed from cited ids: the same counts as the released attribution outcomes.
    assert (figures["CR"]["k"], figures["Attr"]["k"], figures["Attr"]["n"], figures["fact_only"]["k"]) == (16, 7, 16, 4)


def test_the_same_run_twice_is_refused_and_a_second_ingest_is_reported_per_ingest(released_keys, predictions_file):
    path = predictions_file(predictions_file.rows)
    run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed")
    with pytest.raises(CommandError, match="already has ingest 1 of deployed"):
        run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed")
    run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed", "--ingest", "2")
    report = score_selectors.score_report(released_keys["TWIST-v1.0"], replicates=200)
    assert list(report["runs"]) == ["deployed", "deployed@ingest2"]
    assert report["multi_ingest"]["deployed"]["runs"] == ["deployed", "deployed@ingest2"]
    assert [round(p, 3) for p in report["multi_ingest"]["deployed"]["CR"]["points"]] == [0.421, 0.421]


@pytest.mark.parametrize(
    ("case", "line", "message"),
    [
        ("missing", 160, "no prediction for key item"),
        ("unknown", 7, "unknown item 'conv-99:nope'"),
        ("duplicate", 9, "duplicate prediction for"),
        ("bad type", 12, "aligned: must be true or false, got 'yes'"),
    ],
)
def test_a_bad_predictions_file_is_refused_with_its_line_and_nothing_is_stored(predictions_file, case, line, message):
    rows = [dict(row) for row in predictions_file.rows]
    if case == "missing":
        rows.pop(40)  # a missing item has no line: it is reported at the file's last line
    elif case == "unknown":
        rows[6]["item_id"] = "conv-99:nope"
    elif case == "duplicate":
        rows[8]["item_id"] = rows[2]["item_id"]
    else:
        rows[11]["aligned"] = "yes"
    path = predictions_file(rows)
    with pytest.raises(CommandError) as refused:
        run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed")
    assert f"deployed.jsonl:{line}: " in str(refused.value) and message in str(refused.value)
    assert not SystemRun.objects.exists() and not RunPrediction.objects.exists()


def test_a_run_against_a_key_whose_hash_does_not_verify_is_refused(released_keys, predictions_file):
    path = predictions_file(predictions_file.rows)
    key_triggers.uninstall(connection)  # what only a database superuser could do
    try:
        KeyEntry.objects.filter(key=released_keys["TWIST-v1.0"], external_id=DROPPED_IN_V11).update(gold="aligned")
    finally:
        key_triggers.install(connection)
    with pytest.raises(CommandError, match="'TWIST-v1.0' does not verify"):
        run_command("score_import", "TWIST-v1.0", str(path), "--system", "deployed")
    assert not SystemRun.objects.exists()
    with pytest.raises(CommandError, match="does not verify"):
        run_command("score_report", "TWIST-v1.0", "--json")


def test_the_released_file_is_scored_against_v1_1_on_its_items_and_the_dropped_item_is_listed(released_keys, client):
    from django.urls import reverse

    import_results("TWIST-v1.1")
    v11 = released_keys["TWIST-v1.1"]
    runs = SystemRun.objects.filter(key=v11)
    assert runs.count() == 13 and not report_json("TWIST-v1.1")["unscorable"]
    report = report_json("TWIST-v1.1")
    assert report["outside_key"] == {name: [DROPPED_IN_V11] for name in report["runs"]}
    assert report["runs"][DEPLOYED]["CR"]["n"] == v11.entries.filter(gold="contradicting").count()
    page = client.get(reverse("scoring:scores", args=["TWIST-v1.1"])).content.decode()
    assert DROPPED_IN_V11 in page[page.index('data-testid="outside-key"'):]
    assert f"- {DEPLOYED}: {DROPPED_IN_V11}" in run_command("score_report", "TWIST-v1.1", "--markdown")


def test_a_run_missing_an_item_of_the_derived_key_is_still_refused(released_keys, tmp_path):
    data = json.loads(require_shared_data(*RESULTS).read_text())
    v11_ids = {e.item_id for e in score_selectors.key_items(released_keys["TWIST-v1.1"])}
    missing = sorted(v11_ids)[0]
    data["results"] = {name: [row for row in rows if row["item_id"] != missing] for name, rows in data["results"].items()}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError, match=f"no prediction for key item '{missing}'"):
        run_command("score_import", "TWIST-v1.1", str(path), "--format", "results")
    assert not SystemRun.objects.exists()


def test_an_item_no_version_of_the_key_held_is_still_refused(released_keys, predictions_file):
    rows = [*predictions_file.rows, {"item_id": "conv-99:nowhere", "aligned": True, "evidence": []}]
    with pytest.raises(CommandError, match="unknown item 'conv-99:nowhere'"):
        run_command("score_import", "TWIST-v1.1", str(predictions_file(rows)), "--system", "deployed")
    assert not SystemRun.objects.exists()


def test_v1_1_after_a_drop_erratum_differs_exactly_where_the_dropped_item_counted(released_keys):
    import_results()
    v10, v11 = released_keys["TWIST-v1.0"], released_keys["TWIST-v1.1"]
    changes = score_selectors.score_changes(v10, v11)
    assert changes["before"]["sha256"] == v10.sha256 and changes["after"]["sha256"] == v11.sha256
    assert changes["items"] == [{"item": DROPPED_IN_V11, "change": "dropped", "before": "contradicting", "after": None}]
    released = results_parse(path=require_shared_data(*RESULTS),
                             key={e.item_id: e for e in score_selectors.key_items(v10)})
    expected = set()
    for name, predictions in released.items():
        p = predictions[DROPPED_IN_V11]
        expected |= {(name, "CR"), (name, "GCR")}  # one contradicting item fewer in every run
        if not p.aligned:  # caught: Attr's and fact-only's denominators move too
            expected |= {(name, "Attr"), (name, "fact_only")}
    assert {(row["run"], row["metric"]) for row in changes["changed"]} == expected
    assert not any(row["metric"] in ("AS", "HNS") for row in changes["changed"])
    assert {t["before"]["class"] for t in changes["mcnemar_changed"]} <= {"contradicting"}
    assert changes["family_size"] == {"before": 156, "after": 156}


INGEST2 = ("twist-v1", "results", "track_b_results_v1.0_ingest2_scores.json")


def import_ingest2(*extra) -> str:
    return run_command("score_import", "TWIST-v1.0", str(require_shared_data(*INGEST2)), "--format", "scores", *extra)


def test_the_released_score_level_ingest_imports_and_joins_each_systems_per_item_run(released_keys, client):
    from django.urls import reverse

    from scoring.models import ScoreLevelIngest

    import_results()
    out = import_ingest2("--ingest", "2")
    assert "4 score-level ingest(s) imported against TWIST-v1.0" in out and "mindtwin@ingest2: CR 0.421" in out
    stored = {i.name: i for i in ScoreLevelIngest.objects.all()}
    assert set(stored) == {"mindtwin@ingest2", "flatrag:openai@ingest2", "flatrag:anthropic@ingest2", "flatrag:gemini@ingest2"}
    assert stored["flatrag:openai@ingest2"].scores == {"CR": 0.974, "AS": 0.705, "HNS": 0.419, "Attr": 0.541}
    assert "TPM limit" in stored["mindtwin@ingest2"].note
    report = score_selectors.score_report(released_keys["TWIST-v1.0"], replicates=200)
    deployed = report["multi_ingest"][DEPLOYED]
    assert deployed["ingests"] == {"per_item": 1, "score_level": 1} and deployed["runs"] == [DEPLOYED]
    assert [round(p, 3) for p in deployed["CR"]["points"]] == [0.421, 0.421]
    assert [round(p, 3) for p in deployed["Attr"]["points"]] == [0.438, 0.375]  # 7/16 computed, 0.375 as given
    assert deployed["GCR"]["points"] == [7 / 38]  # the score-level file reports no GCR
    assert [s["name"] for s in deployed["score_level"]] == ["mindtwin@ingest2"]
    flat = report["multi_ingest"]["flatrag:openai"]
    assert [round(p, 3) for p in flat["HNS"]["points"]] == [0.565, 0.419]
    assert set(report["multi_ingest"]) == {DEPLOYED, "flatrag:openai", "flatrag:anthropic", "flatrag:gemini"}
    page = client.get(reverse("scoring:scores", args=["TWIST-v1.0"])).content.decode()
    section = page[page.index('data-testid="multi-ingest"'):]
    assert 'data-score-level="flatrag:openai@ingest2"' in section and "track_b_results_v1.0_ingest2_scores.json" in section
    row = section[section.index('data-system="flatrag:openai" data-ingest-metric="HNS"'):]
    assert "0.565, 0.419" in row[:row.index("</tr>")]


def test_the_json_and_markdown_reports_carry_the_multi_ingest_section_the_page_shows(released_keys):
    import_results()
    import_ingest2("--ingest", "2")
    selector = score_selectors.score_report(released_keys["TWIST-v1.0"])["multi_ingest"]
    printed = report_json()["multi_ingest"]
    assert set(printed) == set(selector) and DEPLOYED in printed
    assert printed[DEPLOYED]["CR"]["mean"] == pytest.approx(selector[DEPLOYED]["CR"]["mean"])
    assert printed[DEPLOYED]["CR"]["hierarchical"] == pytest.approx(selector[DEPLOYED]["CR"]["hierarchical"])
    markdown = run_command("score_report", "TWIST-v1.0", "--markdown")
    section = markdown[markdown.index("## Ingests"):]
    low, high = selector[DEPLOYED]["CR"]["hierarchical"]
    row = next(line for line in section.splitlines() if line.startswith(f"| {DEPLOYED} |") and "| CR |" in line)
    assert f"{selector[DEPLOYED]['CR']['mean']:.3f}" in row and f"[{low:.2f}, {high:.2f}]" in row
    assert "track_b_results_v1.0_ingest2_scores.json" in section and "mindtwin@ingest2 (ingest 2, scores only)" in section


def test_a_score_level_ingest_cannot_take_an_ingest_a_run_already_has(released_keys):
    from scoring.models import ScoreLevelIngest

    import_results("TWIST-v1.0", "--system", "flatrag")
    with pytest.raises(CommandError, match="already has ingest 1 of flatrag:anthropic, flatrag:gemini, flatrag:openai"):
        import_ingest2()  # default ingest 1: the per-item runs hold it
    assert not ScoreLevelIngest.objects.exists()
    import_ingest2("--ingest", "2", "--system", "mindtwin")
    with pytest.raises(CommandError, match="already has ingest 2 of mindtwin"):
        import_ingest2("--ingest", "2")  # all or nothing: the three new systems are not stored either
    assert [i.name for i in ScoreLevelIngest.objects.all()] == ["mindtwin@ingest2"]
    with pytest.raises(CommandError, match="already has ingest 2 of mindtwin"):
        import_results("TWIST-v1.0", "--ingest", "2", "--system", "mindtwin")


def test_a_bad_score_level_file_is_refused_with_its_line_and_field_and_nothing_is_stored(released_keys, tmp_path):
    from scoring.models import ScoreLevelIngest

    data = json.loads(require_shared_data(*INGEST2).read_text())
    data["scores"]["flatrag:gemini"]["hard_negative_acc"] = "high"
    path = tmp_path / "ingest2.json"
    path.write_text(json.dumps(data, indent=1))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if '"high"' in text)
    with pytest.raises(CommandError) as refused:
        run_command("score_import", "TWIST-v1.0", str(path), "--format", "scores", "--ingest", "2")
    assert f"ingest2.json:{line}: scores.flatrag:gemini.hard_negative_acc: must be a number in [0, 1], got 'high'" in str(refused.value)
    assert not ScoreLevelIngest.objects.exists()


RECORD_GROUNDED = [f"{system}:{backend}" for system in ("flatrag", "fullcontext", "oracle")
                   for backend in ("openai", "anthropic", "gemini")]
AGAINST_EVERY_BASELINE = "pairs:" + ",".join(f"{DEPLOYED}~{run}" for run in RECORD_GROUNDED)


def deployed_tests(report) -> list[dict]:
    return [t for t in report["mcnemar"] if t["class"] == "contradicting"
            and {t["a"], t["b"]} & {DEPLOYED} and {t["a"], t["b"]} & set(RECORD_GROUNDED)]


def test_deployed_is_below_every_record_grounded_baseline_in_the_papers_family_and_not_over_all_pairs(released_keys):
    # TWIST §7.3 (6): "significantly below every record-grounded baseline (exact McNemar, Holm-adjusted p < 0.05)".
    import_results()
    stated = json.loads(run_command("score_report", "TWIST-v1.0", "--json", "--family", AGAINST_EVERY_BASELINE,
                                    "--classes", "contradicting"))
    assert stated["family_size"] == 9 and stated["family"]["spec"] == AGAINST_EVERY_BASELINE
    tests = deployed_tests(stated)
    assert len(tests) == 9 and all(t["family_size"] == 9 for t in tests)
    assert all(t["c_count"] > t["b_count"] and t["p_holm"] < 0.05 for t in tests)  # a = deployed, worse each time
    every_pair = report_json()
    assert every_pair["family_size"] == 156
    assert any(t["p_holm"] >= 0.05 for t in deployed_tests(every_pair))  # the wider family does not reproduce it
    markdown = run_command("score_report", "TWIST-v1.0", "--markdown", "--family", AGAINST_EVERY_BASELINE,
                           "--classes", "contradicting")
    assert "the 9 listed pairs on contradicting items" in markdown and "| family size |" in markdown


def test_a_family_naming_a_run_the_report_lacks_is_refused_with_the_option(released_keys):
    import_results()
    with pytest.raises(CommandError, match="--family: 'mindtwin~nobody' is not two runs of the report"):
        run_command("score_report", "TWIST-v1.0", "--json", "--family", "pairs:mindtwin~nobody")
    with pytest.raises(CommandError, match="--family: 'some' is not one of"):
        run_command("score_report", "TWIST-v1.0", "--json", "--family", "some")


def test_the_floors_family_pairs_each_run_with_its_own_backends_draft_only_run(released_keys, client):
    from django.urls import reverse

    import_results()
    report = client.get(reverse("api-key-scores", args=["TWIST-v1.0"]), {"family": "floors:draftonly"}).json()
    pairs = {(t["a"], t["b"]) for t in report["mcnemar"]}
    assert ("draftonly:openai", "flatrag:openai") in pairs and ("draftonly:gemini", "mindtwin") not in pairs
    assert len(pairs) == 9 and report["family_size"] == 18 and report["family"]["description"].startswith("each run against")
    page = client.get(reverse("scoring:scores", args=["TWIST-v1.0"]), {"family": "floors:draftonly"}).content.decode()
    assert "Family: <strong>18</strong> tests" in page and "floors:draftonly" in page
    assert client.get(reverse("api-key-scores", args=["TWIST-v1.0"]), {"family": "against:nobody"}).status_code == 400


def test_every_record_grounded_run_exceeds_its_own_draft_only_floor_on_contradicting_items(released_keys):
    # TWIST §7.3 (4): "Every record-grounded configuration significantly exceeds its own draft-only floor
    # (Holm-adjusted McNemar p < 0.05)": it reproduces on contradiction recall, each run against its backend's floor.
    import_results()
    report = json.loads(run_command("score_report", "TWIST-v1.0", "--json", "--family", "floors:draftonly",
                                    "--classes", "contradicting"))
    grounded = [t for t in report["mcnemar"] if t["b"] in RECORD_GROUNDED]
    assert report["family_size"] == len(grounded) == 9  # mindtwin has no configuration, so no floor of its own
    assert all(t["a"] == "draftonly:" + t["b"].split(":")[1] for t in grounded)
    assert all(t["c_count"] > t["b_count"] and t["p_holm"] < 0.05 for t in grounded)  # c = the run right, its floor wrong
