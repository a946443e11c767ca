"""A frozen Track C key's score page and its API: every stored run's figures with their intervals beside the
calibration of the judge that scored it, for authors only, in a constant number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chains.scores import chain_run_import, chain_run_report
from chains.selectors import chain_run_reports
from chains.serializers import ChainScoresSerializer
from items.models import Item
from protocols import judged
from tests.chains.conftest import answers_file

pytestmark = pytest.mark.django_db
GOLD_FRAME = judged.TEMPLATES[judged.GOLD]


def _answers(key, *, stale: bool) -> dict[str, str]:
    """Every item answered: with the belief the chain replaced (`stale`, where there is one) or with the gold."""
    items = Item.objects.filter(item_set=key.campaign.item_set)
    return {i.external_id: GOLD_FRAME.format(answer=(i.superseded[-1] if stale and i.superseded else i.answer).rstrip("."))
            for i in items}


@pytest.fixture
def scored(chain_key, strict_judge, tmp_path):
    path = answers_file(tmp_path, _answers(chain_key, stale=True))
    chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="memsys")
    return chain_run_report(version=chain_key.version, path=path, member=strict_judge)


def test_the_page_shows_each_figure_of_the_run_with_its_interval_beside_the_judge(client, author, chain_key, scored):
    client.force_login(author)
    page = client.get(reverse("chains:scores", args=[chain_key.version])).content.decode()
    assert chain_key.sha256 in page and 'data-run="memsys"' in page
    for name, m in scored["metrics"].items():
        row = page.split(f'<tr data-metric="{name}">')[1].split("</tr>")[0]
        if m.get("wilson") and m["n"]:
            assert f"{m['k']} / {m['n']}" in row and f"[{m['wilson'][0]:.3f}, {m['wilson'][1]:.3f}] Wilson" in row
        elif m.get("newcombe"):
            assert f"{m['rate']:.3f}" in row and f"[{m['newcombe'][0]:.3f}, {m['newcombe'][1]:.3f}] Newcombe" in row
    assert scored["metrics"]["stale_answer_rate"]["k"] > 0  # the stale run shows the failure the track measures
    judge = page.split('data-testid="chain-judge"')[1].split("</p>")[0]
    assert "fake-judge-strict" in judge and "twist-c-judge/1" in judge and "judged-decoys/2" in judge
    calibration = page.split('data-testid="chain-calibration"')[1].split("</table>")[0]
    for name, c in scored["judge"]["calibration"]["classes"].items():
        assert f'data-class="{name}"' in calibration and f"{c['rejected']} / {c['n']}" in calibration
    forest = page.split('data-testid="chain-forest"')[1].split("</section>")[0]
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart forest scores"' in forest
    assert forest.count("<circle") == sum(1 for m in scored["metrics"].values() if m["rate"] is not None)


def test_the_api_gives_the_figures_of_chain_scores_in_the_shape_its_schema_declares(client, author, chain_key, scored):
    client.force_login(author)
    data = client.get(reverse("api-chain-scores", args=[chain_key.version])).json()
    assert ChainScoresSerializer(data=data).is_valid()
    (run,) = data["runs"]
    assert data["key"] == chain_key.version and data["sha256"] == chain_key.sha256
    assert {k: run[k] for k in scored} == scored
    assert set(run) == set(ChainScoresSerializer().fields["runs"].child.fields)


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_anyone_but_an_author_is_refused_the_page_and_the_api(client, request, persona, chain_key, scored):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(reverse("chains:scores", args=[chain_key.version])).status_code == 403
    assert client.get(reverse("api-chain-scores", args=[chain_key.version])).status_code == 403


def test_an_anonymous_visitor_is_sent_to_log_in_and_refused_by_the_api(client, chain_key, scored):
    page = client.get(reverse("chains:scores", args=[chain_key.version]))
    assert page.status_code == 302 and reverse("login") in page["Location"]
    assert client.get(reverse("api-chain-scores", args=[chain_key.version])).status_code in (401, 403)
    assert "memsys" not in client.get(reverse("api-chain-scores", args=[chain_key.version])).content.decode()


def test_a_key_that_is_not_a_frozen_track_c_key_is_not_found(client, author, chain_key):
    client.force_login(author)
    assert client.get(reverse("chains:scores", args=["no-such-key"])).status_code == 404


def test_the_key_score_page_sends_an_author_to_the_judged_runs(client, author, chain_key):
    client.force_login(author)
    response = client.get(reverse("scoring:scores", args=[chain_key.version]))
    assert response.status_code == 302 and response["Location"] == reverse("chains:scores", args=[chain_key.version])


def test_the_key_score_page_sends_no_one_else_there(client, annotator_a, chain_key):
    for user in (None, annotator_a):
        if user:
            client.force_login(user)
        response = client.get(reverse("scoring:scores", args=[chain_key.version]))
        assert response.status_code != 302 and "scores/chains" not in response.content.decode()


def test_the_page_and_the_api_cost_the_same_queries_for_one_run_and_for_three(client, author, chain_key, scored,
                                                                                strict_judge, tmp_path):
    client.force_login(author)
    urls = [reverse("chains:scores", args=[chain_key.version]), reverse("api-chain-scores", args=[chain_key.version])]
    with CaptureQueriesContext(connection) as one:
        for url in urls:
            assert client.get(url).status_code == 200
    for system in ("second", "third"):
        chain_run_import(version=chain_key.version, path=answers_file(tmp_path, _answers(chain_key, stale=False)),
                         member=strict_judge, system=system)
    assert len(chain_run_reports(chain_key)) == 3
    with CaptureQueriesContext(connection) as three:
        for url in urls:
            assert client.get(url).status_code == 200
    assert len(three) == len(one), [q["sql"] for q in three.captured_queries]


def test_an_author_with_open_work_on_the_keys_items_is_refused_as_the_key_pages_refuse_them(client, author, annotator_b,
                                                                                           chain_key, scored):
    from annotation.services import campaign_create

    campaign_create(slug="again", item_set=chain_key.campaign.item_set, annotators=[author, annotator_b], seed=3)
    client.force_login(author)
    assert client.get(reverse("chains:scores", args=[chain_key.version])).status_code == 404
    assert client.get(reverse("api-chain-scores", args=[chain_key.version])).status_code == 404
