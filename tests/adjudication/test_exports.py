"""The agreement figures and the queue with its decisions as CSV downloads: the same figures as the pages,
formula-safe cells, and the pages' authorization (an annotator never reaches either: blindness)."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from adjudication.agreement import campaign_agreement
from adjudication.models import Decision
from annotation.models import Campaign, Enrollment
from items.models import Item
from tests.adjudication.conftest import AGREE, DISAGREE, NOT_SELF_CONTAINED, make_twist_campaign

pytestmark = pytest.mark.django_db

CSV_PAGES = ("adjudication:agreement-csv", "adjudication:queue-csv")


def rows_of(response) -> list[dict]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8"))))


def test_the_agreement_csv_holds_the_pages_figures(client, small_campaign, author):
    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[small_campaign.slug])).content.decode()
    url = reverse("adjudication:agreement-csv", args=[small_campaign.slug])
    assert f'href="{url}"' in page
    rows = rows_of(client.get(url))
    figures = {r["figure"]: r["value"] for r in rows}
    assert {r["campaign"] for r in rows} == {small_campaign.slug}
    expected = campaign_agreement(small_campaign)
    assert figures["n_items"] == "5"
    assert figures["annotators"] == "A; B"
    assert int(figures["q1.n"]) == expected["q1"]["n"] and int(figures["q1.agree"]) == expected["q1"]["agree"]
    if expected["q1"]["kappa"] is None:
        assert figures["q1.kappa"] == ""
    else:
        assert float(figures["q1.kappa"]) == expected["q1"]["kappa"]  # written as repr: the exact float
    categories = expected["q1"]["confusion"]["categories"]
    counts = expected["q1"]["confusion"]["counts"]
    for i, row_category in enumerate(categories):
        for j, column_category in enumerate(categories):
            assert int(figures[f"q1.confusion.{row_category}.{column_category}"]) == counts[i][j]


def test_the_queue_csv_lists_each_queued_item_with_its_answers_and_decision(client, small_campaign, author):
    item = Item.objects.get(external_id="conv-1:v1b3")
    Decision.objects.create(campaign=small_campaign, item=item, action="drop", note="=HYPERLINK(\"http://x\")", decided_by=author)
    client.force_login(author)
    page = client.get(reverse("adjudication:queue", args=[small_campaign.slug])).content.decode()
    url = reverse("adjudication:queue-csv", args=[small_campaign.slug])
    assert f'href="{url}"' in page
    rows = {r["item"]: r for r in rows_of(client.get(url))}
    assert set(rows) == {"conv-1:v1b3", "conv-1:v1c4", "conv-1:v1b5"}  # the queue page's items
    dropped = rows["conv-1:v1b3"]
    assert (dropped["gold"], dropped["A_q1"], dropped["B_q1"]) == ("contradicting", "contradicts", "consistent")
    assert dropped["reasons"] == "q1_disagreement"
    assert (dropped["decision"], dropped["decided_by"]) == ("drop", author.username)
    assert dropped["note"] == "'=HYPERLINK(\"http://x\")"  # an apostrophe first: a spreadsheet shows it as text
    assert rows["conv-1:v1c4"]["decision"] == "" and "q2_not_self_contained" in rows["conv-1:v1c4"]["reasons"]
    assert rows["conv-1:v1b5"]["B_q1"] == "" and rows["conv-1:v1b5"]["reasons"] == "missing_answers"


@pytest.mark.parametrize("persona", ["annotator_a", "annotator_b", "outsider"])
def test_annotators_and_outsiders_are_refused_each_csv(client, small_campaign, persona, request):
    client.force_login(request.getfixturevalue(persona))
    for name in CSV_PAGES:
        response = client.get(reverse(name, args=[small_campaign.slug]))
        assert response.status_code == 403, name
        assert b"conv-1:" not in response.content


def test_an_author_still_annotating_the_campaign_is_refused_each_csv(client, annotator_a, author):
    campaign = make_twist_campaign([author, annotator_a], {"conv-3:v1b1": DISAGREE}, slug="blind", close=False)
    client.force_login(author)
    for name in CSV_PAGES:  # blind to items they still label: 404, as if the CSV did not exist
        assert client.get(reverse(name, args=[campaign.slug])).status_code == 404, name
    Enrollment.objects.filter(campaign=campaign, annotator=author).update(submitted_at="2026-01-01T00:00Z")
    for name in CSV_PAGES:
        assert client.get(reverse(name, args=[campaign.slug])).status_code == 200, name


def test_anonymous_visitors_are_sent_to_log_in_and_unknown_campaigns_are_404(client, small_campaign, author):
    for name in CSV_PAGES:
        response = client.get(reverse(name, args=[small_campaign.slug]))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.force_login(author)
    for name in CSV_PAGES:
        assert client.get(reverse(name, args=["nope"])).status_code == 404


def test_the_csv_downloads_refuse_writes(client, small_campaign, author):
    client.force_login(author)
    for name in CSV_PAGES:
        assert client.post(reverse(name, args=[small_campaign.slug])).status_code == 405


@pytest.mark.parametrize("name", CSV_PAGES)
def test_each_csv_runs_the_same_number_of_queries_for_small_and_large_campaigns(client, author, annotator_a, annotator_b, name):
    client.force_login(author)
    kinds = [AGREE, DISAGREE, NOT_SELF_CONTAINED]
    counts = []
    for slug, n in (("small-c", 6), ("large-c", 90)):
        make_twist_campaign([annotator_a, annotator_b], {f"conv-1:v1b{i}": kinds[i % 3] for i in range(n)}, slug=slug)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse(name, args=[slug])).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_a_lapse_agreement_csv_holds_the_protocols_own_section_and_a_queue_without_gold(client, author, tmp_path):
    from django.core.management import call_command

    from lapse.selectors import scorer_validation
    from tests.adjudication.test_commands import lapse_folder

    call_command("lapse_gold_import", str(lapse_folder(tmp_path)), "--campaign", "lg", stdout=None)
    client.force_login(author)
    figures = {r["figure"]: r["value"] for r in rows_of(client.get(reverse("adjudication:agreement-csv", args=["lg"])))}
    validation = scorer_validation(Campaign.objects.get(slug="lg"))
    assert figures["scorer_validation.n_gold"] == str(validation["n_gold"])
    assert figures["scorer_validation.applicable"] == "true"
    assert "five_way.kappa" in figures
    queue = rows_of(client.get(reverse("adjudication:queue-csv", args=["lg"])))
    assert "gold" not in queue[0]  # the gold is the annotators' label here, not the item's own
    pseudonyms = Enrollment.objects.filter(campaign__slug="lg").order_by("pseudonym").values_list("pseudonym", flat=True)
    assert [c for c in queue[0] if c.endswith("_label")] == [f"{p}_label" for p in pseudonyms]
    assert {"g002", "g003"} <= {r["item"] for r in queue}
