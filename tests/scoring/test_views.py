"""Score pages and the report API against TWIST-v1.0 frozen from the released trail."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from scoring import selectors as score_selectors
from scoring import services as score_services
from scoring.models import SystemRun
from scoring.serializers import McNemarTestSerializer, ScoreReportSerializer
from tests.conftest import require_shared_data
from tests.scoring.conftest import DROPPED_IN_V11, RESULTS

pytestmark = [pytest.mark.realdata, pytest.mark.django_db]


def import_released(system: str = "", produced_by: str = SystemRun.ProducedBy.UNSTATED):
    return score_services.score_import(version="TWIST-v1.0", path=require_shared_data(*RESULTS), fmt="results", system=system,
                                       produced_by=produced_by)


def test_the_leaderboard_cites_the_key_and_shows_cr_with_as_and_hns_and_the_forest_plot(client, released_keys):
    import_released()
    key = released_keys["TWIST-v1.0"]
    page = client.get(reverse("scoring:scores", args=[key.version])).content.decode()
    assert key.version in page and key.sha256 in page
    assert page.count('data-metric="CR"') == page.count('data-metric="HNS"') == page.count('data-metric="AS"') == 13
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart forest scores"' in page
    assert "mindtwin CR 0.421 (16/38)" in page  # the point's tooltip in the forest plot
    assert "Family: <strong>156</strong> tests" in page
    assert "W 0.28–0.58" in page  # the deployed system's Wilson interval


def test_the_leaderboard_costs_the_same_queries_for_3_runs_and_for_13(client, released_keys):
    url = reverse("scoring:scores", args=["TWIST-v1.0"])
    import_released(system="flatrag")
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    import_released(system="fullcontext")
    import_released(system="oracle")
    import_released(system="draftonly")
    import_released(system="mindtwin")
    assert SystemRun.objects.count() == 13
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]


def test_the_run_page_shows_the_run_its_strata_and_its_pairs(client, released_keys):
    runs = import_released()
    deployed = next(run for run in runs if run.name == "mindtwin")
    page = client.get(reverse("scoring:score-run", args=["TWIST-v1.0", deployed.pk])).content.decode()
    assert released_keys["TWIST-v1.0"].sha256 in page and deployed.source_sha256 in page
    assert "history&lt;=620" in page and "history&gt;620" in page
    assert "0.480" in page and "0.308" in page  # the 620-turn split: 12/25 and 4/13
    pairs = page.split('data-testid="mcnemar"')[1].split("</table>")[0]
    assert pairs.count("<tr") - 1 == 2 * 12 and pairs.count("<td>mindtwin</td>") == 2 * 12  # 12 pairs, both classes


def test_a_run_of_another_key_version_is_not_found_under_this_one(client, released_keys):
    run = import_released(system="mindtwin")[0]
    assert client.get(reverse("scoring:score-run", args=["TWIST-v1.1", run.pk])).status_code == 404


def test_the_changes_page_shows_the_dropped_item_and_the_moved_figures_only(client, released_keys):
    import_released()
    page = client.get(reverse("scoring:score-changes", args=["TWIST-v1.0", "TWIST-v1.1"])).content.decode()
    assert released_keys["TWIST-v1.0"].sha256 in page and released_keys["TWIST-v1.1"].sha256 in page
    assert f"<td>{DROPPED_IN_V11}</td><td>dropped</td>" in page
    changes = score_selectors.score_changes(released_keys["TWIST-v1.0"], released_keys["TWIST-v1.1"])
    assert page.count("<td>CR</td>") == 13 and "<td>HNS</td>" not in page and "<td>AS</td>" not in page
    assert len(changes["changed"]) == page.count("</td></tr>") - 1 - len(changes["mcnemar_changed"])


def test_the_report_api_is_the_commands_report(client, released_keys):
    import_released()
    data = client.get(reverse("api-key-scores", args=["TWIST-v1.0"])).json()
    assert data["key"] == {"version": "TWIST-v1.0", "sha256": released_keys["TWIST-v1.0"].sha256}
    report = score_selectors.score_report(released_keys["TWIST-v1.0"])
    assert data["runs"]["mindtwin"]["CR"] == report["runs"]["mindtwin"]["CR"]
    assert data["family_size"] == 156 and len(data["mcnemar"]) == 156


def test_a_real_report_has_the_shape_the_schema_declares(client, released_keys):
    import_released()
    score_services.score_level_import(
        version="TWIST-v1.0", path=require_shared_data("twist-v1", "results", "track_b_results_v1.0_ingest2_scores.json"),
        ingest=2, metadata={"model": "as released"},
    )
    data = client.get(reverse("api-key-scores", args=["TWIST-v1.0"])).json()
    shape = ScoreReportSerializer(data=data)
    assert shape.is_valid(), shape.errors
    assert data["multi_ingest"]["mindtwin"]["score_level"][0]["scores"]["CR"] == 0.421
    declared = set(ScoreReportSerializer().fields["multi_ingest"].child.fields["score_level"].child.fields)
    assert set(data["multi_ingest"]["mindtwin"]["score_level"][0]) == declared
    declared = set(ScoreReportSerializer().fields["runs"].child.fields)
    assert set(data["runs"]["mindtwin"]) == declared
    assert set(data["mcnemar"][0]) == set(McNemarTestSerializer().fields)


def test_the_key_page_links_to_its_scores(client, released_keys):
    page = client.get(reverse("keys:detail", args=["TWIST-v1.0"])).content.decode()
    assert reverse("scoring:scores", args=["TWIST-v1.0"]) in page


def test_an_unknown_key_has_no_score_page(client, released_keys):
    assert client.get(reverse("scoring:scores", args=["TWIST-v9"])).status_code == 404
    assert client.get(reverse("api-key-scores", args=["TWIST-v9"])).status_code == 404


def test_the_leaderboard_links_the_scores_csv_which_anyone_may_download_for_a_frozen_key(client, released_keys):
    import_released(system="flatrag")
    key = released_keys["TWIST-v1.0"]
    url = reverse("scoring:scores-csv", args=[key.version])
    assert f'href="{url}"' in client.get(reverse("scoring:scores", args=[key.version])).content.decode()
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{key.version}.scores.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    report = score_selectors.score_report(key)
    assert {r["run"] for r in rows} == set(report["runs"]) and len(rows) == 6 * len(report["runs"])
    first = next(r for r in rows if r["metric"] == "CR")
    assert (int(first["k"]), int(first["n"])) == (report["runs"][first["run"]]["CR"]["k"], report["runs"][first["run"]]["CR"]["n"])
    assert client.get(reverse("scoring:scores-csv", args=["no-such-key"])).status_code == 404


def test_the_key_page_counts_the_runs_by_the_systems_own_authors_in_a_constant_number_of_queries(client, released_keys):
    key = released_keys["TWIST-v1.0"]
    url = reverse("keys:detail", args=[key.version])
    import_released("flatrag", SystemRun.ProducedBy.KEY_AUTHORS)
    with CaptureQueriesContext(connection) as before:
        page = client.get(url).content.decode()
    line = page[page.index('data-testid="run-authorship"'):]
    assert "3 runs against TWIST-v1.0;\n  0 independent" in line and "at least 2 external systems" in line
    import_released("oracle", SystemRun.ProducedBy.SYSTEM_AUTHORS)
    import_released("mindtwin", SystemRun.ProducedBy.SYSTEM_AUTHORS)
    with CaptureQueriesContext(connection) as after:
        page = client.get(url).content.decode()
    line = page[page.index('data-testid="run-authorship"'):]
    assert "7 runs against TWIST-v1.0;\n  4 independent" in line and "mindtwin, oracle" in line
    assert "may drop" in line and len(after) == len(before)
    report = client.get(reverse("api-key-scores", args=[key.version])).json()
    assert report["run_records"]["mindtwin"]["produced_by"] == "system_authors"
    assert report["run_records"]["flatrag:openai"]["produced_by"] == "key_authors"


def test_an_unknown_authorship_is_refused_and_nothing_is_stored(released_keys):
    from goldkey.errors import ApplicationError

    with pytest.raises(ApplicationError, match="--produced-by: 'me' is not one of"):
        import_released(produced_by="me")
    assert not SystemRun.objects.exists()
