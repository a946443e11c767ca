"""score_import on small synthetic keys: what is stored, and the keys a run cannot be scored against."""

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment
from annotation.services import answer_save, campaign_close, campaign_create
from goldkey.errors import ApplicationError
from items.models import Item
from items.services import item_set_get_or_create
from keys.services import key_build, key_freeze, key_publish
from scoring import selectors as score_selectors
from scoring import services as score_services
from scoring.models import RunPrediction, SystemRun

pytestmark = pytest.mark.django_db


def write_run(path, entries, *, aligned=None, evidence=None):
    path.write_text("".join(
        json.dumps({"item_id": e.item_id, "aligned": (e.gold != "contradicting") if aligned is None else aligned,
                    "evidence": list(e.evidence) if evidence is None else evidence}) + "\n"
        for e in entries))
    return path


def test_a_predictions_run_is_stored_as_given_and_scored_from_its_rows(frozen_key, author, tmp_path):
    entries = score_selectors.key_items(frozen_key)
    path = write_run(tmp_path / "perfect.jsonl", entries, evidence=["D1:1", "fact:2"])
    [run] = score_services.score_import(version=frozen_key.version, path=path, system="oracle:openai",
                                        metadata={"model": "gpt-4o"}, user=author)
    assert (run.system, run.configuration, run.name, run.imported_by) == ("oracle", "openai", "oracle:openai", author)
    stored = dict(RunPrediction.objects.filter(run=run).values_list("item_external_id", "evidence"))
    assert set(stored) == {e.item_id for e in entries} and set(map(tuple, stored.values())) == {("D1:1", "fact:2")}
    figures = score_selectors.score_report(frozen_key, bootstrap=False)["runs"]["oracle:openai"]
    assert (figures["CR"]["k"], figures["CR"]["n"]) == (figures["CR"]["n"], sum(e.gold == "contradicting" for e in entries))
    assert figures["HNS"]["value"] == figures["AS"]["value"] == 1.0


def test_a_draft_key_takes_no_run(key_campaign, author, tmp_path):
    from tests.adjudication.conftest import decide

    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="TWIST-draft", user=author)
    path = write_run(tmp_path / "run.jsonl", score_selectors.key_items(draft))
    with pytest.raises(ApplicationError, match="'TWIST-draft' is a draft"):
        score_services.score_import(version="TWIST-draft", path=path, system="x")
    assert not SystemRun.objects.exists()


def test_the_results_format_with_a_system_imports_only_its_configurations(frozen_key, tmp_path):
    entries = score_selectors.key_items(frozen_key)
    rows = [{"item_id": e.item_id, "pred_aligned": True, "attributed": None, "cited_fact_only": False} for e in entries]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": {"flatrag:openai": rows, "flatrag:gemini": rows, "mindtwin": rows}}, indent=1))
    runs = score_services.score_import(version=frozen_key.version, path=path, fmt="results", system="flatrag")
    assert [run.name for run in runs] == ["flatrag:openai", "flatrag:gemini"]
    with pytest.raises(ApplicationError, match="no configuration of system 'other'"):
        score_services.score_import(version=frozen_key.version, path=path, fmt="results", system="other")


def test_a_key_with_other_gold_than_track_b_is_refused_for_scoring_with_a_message(author, annotator_b, client, tmp_path):
    item_set = item_set_get_or_create(name="lapse synthetic", kind="lapse")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="lapse", external_id=f"g{i:03d}", request="Write the invite", response=f"r{i}",
             key_fact="the Marbury Residences")
        for i in range(3)
    )
    campaign = campaign_create(slug="lapse", item_set=item_set, annotators=[author, annotator_b], seed=3)
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment__campaign"):
        answer_save(assignment=assignment, values={"label": "PROCEED"})
    campaign_close(campaign=campaign, user=author, end_open=True)  # answered, never handed in
    key = key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)
    key_publish(key=key, user=author)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"item_id": f"g{i:03d}", "aligned": True, "evidence": []}) + "\n" for i in range(3)))
    with pytest.raises(ApplicationError, match="cannot be scored with the Track B metrics: unknown gold type"):
        score_services.score_import(version=key.version, path=path, system="x")
    response = client.get(reverse("scoring:scores", args=[key.version]))
    assert response.status_code == 400 and b"cannot be scored with the Track B metrics" in response.content


def test_a_key_without_runs_shows_how_to_import_one(client, frozen_key):
    page = client.get(reverse("scoring:scores", args=[frozen_key.version])).content.decode()
    assert frozen_key.sha256 in page and f"score_import {frozen_key.version} FILE --system NAME" in page


def test_score_import_dry_run_checks_the_file_and_stores_nothing(frozen_key, tmp_path):
    path = write_run(tmp_path / "run.jsonl", score_selectors.key_items(frozen_key))
    out = io.StringIO()
    call_command("score_import", frozen_key.version, str(path), "--system", "deployed", "--dry-run", stdout=out)
    assert "1 run(s) would be imported against TWIST-test-v1.0" in out.getvalue()
    assert not SystemRun.objects.exists() and not RunPrediction.objects.exists()


# --- names longer than their columns: refused naming file, line and field, nothing stored --------------------

def _limit(model, field: str) -> int:
    return model._meta.get_field(field).max_length


def _results(tmp_path, entries, *names):
    rows = [{"item_id": e.item_id, "pred_aligned": True, "attributed": None, "cited_fact_only": False} for e in entries]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": {name: rows for name in names}}, indent=1))
    return path


@pytest.mark.parametrize("part", ["system", "configuration"])
def test_a_results_configuration_named_over_its_column_is_refused_naming_its_line(frozen_key, tmp_path, part):
    from goldkey.lib.jsonio import ImportFailed

    n = _limit(SystemRun, part)
    name = f"{'s' * (n + 1)}:openai" if part == "system" else f"flatrag:{'c' * (n + 1)}"
    path = _results(tmp_path, score_selectors.key_items(frozen_key), "flatrag:openai", name)
    with pytest.raises(ImportFailed) as failed:
        score_services.score_import(version=frozen_key.version, path=path, fmt="results")
    line = path.read_text().splitlines().index(f'  "{name}": [') + 1
    assert failed.value.errors == [f"results.json:{line}: results: the name's {part}: a text of {n + 1} characters (at most {n})"]
    assert not SystemRun.objects.exists()


def test_a_results_configuration_named_to_exactly_its_columns_imports(frozen_key, tmp_path):
    name = f"{'s' * _limit(SystemRun, 'system')}:{'c' * _limit(SystemRun, 'configuration')}"
    path = _results(tmp_path, score_selectors.key_items(frozen_key), name)
    [run] = score_services.score_import(version=frozen_key.version, path=path, fmt="results")
    assert run.name == name


def test_a_predictions_run_named_over_its_column_is_refused_naming_the_option(frozen_key, tmp_path):
    n = _limit(SystemRun, "system")
    path = write_run(tmp_path / "run.jsonl", score_selectors.key_items(frozen_key))
    with pytest.raises(ApplicationError, match=rf"--system: the name's system: a text of {n + 1} characters \(at most {n}\)"):
        score_services.score_import(version=frozen_key.version, path=path, system="s" * (n + 1))
    assert not SystemRun.objects.exists()
    [run] = score_services.score_import(version=frozen_key.version, path=path, system="s" * n)
    assert run.system == "s" * n


def test_a_score_level_system_named_over_its_column_is_refused_and_of_exactly_it_imports(frozen_key, tmp_path):
    from goldkey.lib.jsonio import ImportFailed
    from scoring.models import ScoreLevelIngest

    n = _limit(ScoreLevelIngest, "system")
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"scores": {"s" * (n + 1): {"contradicting_acc": 0.5}}}, indent=1))
    with pytest.raises(ImportFailed) as failed:
        score_services.score_level_import(version=frozen_key.version, path=path)
    assert failed.value.errors == [f"scores.json:3: scores: the name's system: a text of {n + 1} characters (at most {n})"]
    assert not ScoreLevelIngest.objects.exists()
    path.write_text(json.dumps({"scores": {"s" * n: {"contradicting_acc": 0.5}}}, indent=1))
    [ingest] = score_services.score_level_import(version=frozen_key.version, path=path)
    assert ingest.system == "s" * n
