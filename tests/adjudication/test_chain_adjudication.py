"""A TWIST Track C campaign in adjudication: the queue follows TWIST's rules over the chain's relation, the
adjudicator sees the chain with its values, and agreement reports q1 kappa with intervals overall and per
family (page, API and command)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from adjudication.agreement import campaign_agreement
from adjudication.selectors import campaign_snapshot
from annotation.services import answer_save, campaign_create, enrollment_submit
from items.models import Item
from protocols.twist_c import FAMILIES, Q3_NOT_SELF_CONTAINED

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain_campaign(demo_chains, annotator_a, annotator_b):
    campaign = campaign_create(slug="chains", item_set=demo_chains,
                               annotators=[annotator_a, annotator_b], seed=2)
    for n, enrollment in enumerate(campaign.enrollments.order_by("pk")):
        for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
            item = assignment.item
            # The second annotator says the coexistence chain is not self-contained.
            q3 = "no" if n == 1 and item.family == "HN-C1" else "yes"
            answer_save(assignment=assignment, values={"q1": item.gold_label, "q2": "yes", "q3": q3})
        enrollment_submit(enrollment=enrollment)
    return campaign


def test_the_queue_holds_what_an_annotator_says_is_not_self_contained_and_nothing_else(chain_campaign):
    queued = {e.item.external_id: e.reasons for e in campaign_snapshot(chain_campaign).queue if e.reasons}
    assert queued == {"tc-hn-hobbies": [Q3_NOT_SELF_CONTAINED]}


def test_agreement_reports_q1_kappa_with_intervals_overall_and_per_family(chain_campaign):
    figures = campaign_agreement(chain_campaign)
    assert figures["q1"]["agree"] == figures["q1"]["n"] == Item.objects.count()
    assert set(figures["strata"]["family"]) == set(FAMILIES)
    assert all("ci95" in s for s in figures["strata"]["family"].values())


def test_the_agreement_page_shows_every_family(client, chain_campaign, author):
    client.force_login(author)
    page = client.get(f"/adjudicate/{chain_campaign.slug}/agreement/").content.decode()
    for family in FAMILIES:
        assert f'data-testid="agree-{family}"' in page


def test_the_adjudicators_item_page_shows_the_chain_its_values_and_superseded_values(client, chain_campaign, author):
    client.force_login(author)
    item = Item.objects.get(external_id="tc-c2-career")
    page = client.get(f"/adjudicate/{chain_campaign.slug}/items/{item.pk}/").content.decode()
    assert "Superseded" in page and " → ".join(item.superseded) in page and "C2" in page


def test_the_agreement_command_prints_each_family(chain_campaign):
    out = StringIO()
    call_command("agreement", chain_campaign.slug, stdout=out)
    text = out.getvalue()
    assert "q1 relation, all items" in text and all(f"{family}:" in text for family in FAMILIES)


def test_the_agreement_api_answers_for_a_track_c_campaign(client, chain_campaign, author):
    client.force_login(author)
    response = client.get(f"/api/adjudication/{chain_campaign.slug}/agreement/")
    assert response.status_code == 200 and json.loads(response.content)["q1"]["n"] == Item.objects.count()
