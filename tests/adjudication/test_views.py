"""Adjudication pages: who may open them, what they show, decisions through the form, and a constant
number of queries whatever the campaign size."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from adjudication.models import Decision
from adjudication.pages import sides_for
from annotation.models import Enrollment
from items.models import Item
from tests.adjudication.conftest import AGREE, DISAGREE, NOT_SELF_CONTAINED, make_twist_campaign

pytestmark = pytest.mark.django_db


def queue_url(campaign):
    return reverse("adjudication:queue", args=[campaign.slug])


def item_url(campaign, external_id):
    return reverse("adjudication:item", args=[campaign.slug, Item.objects.get(external_id=external_id).id])


def test_author_sees_the_queue_with_reasons_and_suggestions(client, small_campaign, author):
    client.force_login(author)
    page = client.get(queue_url(small_campaign)).content.decode()
    assert "conv-1:v1c4" in page and "q2_not_self_contained" in page and "conv-1:v1b1" not in page
    assert "3 queued items still undecided" in page


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_annotators_and_outsiders_are_refused_every_adjudication_page(client, small_campaign, persona, request):
    client.force_login(request.getfixturevalue(persona))
    for url in (queue_url(small_campaign), reverse("adjudication:agreement", args=[small_campaign.slug]),
                item_url(small_campaign, "conv-1:v1b3"), reverse("adjudication:campaigns")):
        assert client.get(url).status_code == 403, url


def test_author_who_annotates_the_campaign_is_refused_until_they_submit(client, annotator_a, author):
    campaign = make_twist_campaign([author, annotator_a], {"conv-3:v1b1": DISAGREE}, slug="blind", close=False)
    client.force_login(author)
    assert client.get(queue_url(campaign)).status_code == 404
    Enrollment.objects.filter(campaign=campaign, annotator=author).update(submitted_at="2026-01-01T00:00Z")
    assert client.get(queue_url(campaign)).status_code == 200


def test_anonymous_visitors_are_sent_to_log_in(client, small_campaign):
    response = client.get(queue_url(small_campaign))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_unknown_campaign_and_foreign_item_are_404(client, small_campaign, author, annotator_a, annotator_b):
    client.force_login(author)
    assert client.get(reverse("adjudication:queue", args=["nope"])).status_code == 404
    make_twist_campaign([annotator_a, annotator_b], {"conv-9:v1b1": AGREE}, slug="other")
    foreign = Item.objects.get(external_id="conv-9:v1b1").id
    assert client.get(reverse("adjudication:item", args=[small_campaign.slug, foreign])).status_code == 404
    assert client.post(reverse("adjudication:item", args=[small_campaign.slug, foreign]), {"action": "keep"}).status_code == 404


def test_item_page_shows_both_answers_with_notes_gold_and_suggestion_but_hides_identities(client, small_campaign, author):
    client.force_login(author)
    page = client.get(item_url(small_campaign, "conv-1:v1b3")).content.decode()
    assert "left note" in page and "right note" in page
    assert "contradicting" in page and "the quote" in page and "Suggestion" in page
    assert "ann_a" not in page and "ann_b" not in page and "annotator A" not in page


def test_reveal_shows_which_annotator_wrote_each_side(client, small_campaign, author):
    client.force_login(author)
    page = client.get(item_url(small_campaign, "conv-1:v1b3") + "?reveal=1").content.decode()
    assert "annotator A (ann_a)" in page and "annotator B (ann_b)" in page


def test_sides_are_randomized_per_item_but_stable():
    from annotation.models import Campaign

    campaign = Campaign(seed=42)
    orders = [tuple(sides_for(campaign, item_id, ["A", "B"])) for item_id in range(40)]
    assert set(orders) == {("A", "B"), ("B", "A")}
    assert orders == [tuple(sides_for(campaign, item_id, ["B", "A"])) for item_id in range(40)]


def test_keep_through_the_form_records_the_author_and_moves_to_the_next_undecided_item(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep", "note": ""})
    assert response.status_code == 302
    assert response["Location"] == item_url(small_campaign, "conv-1:v1b3")
    decision = Decision.objects.get()
    assert (decision.item.external_id, decision.action, decision.decided_by) == ("conv-1:v1c4", "keep", author)


def test_keep_asked_for_the_next_page_answers_with_that_page_and_its_url(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep", "note": ""},
                           headers={"X-Goldkey-Next": "page"})
    assert response.status_code == 200
    assert response["X-Goldkey-Url"] == item_url(small_campaign, "conv-1:v1b3")
    html = response.content.decode()
    assert "<h1>conv-1:v1b3</h1>" in html and "conv-1:v1c4: keep recorded." in html
    # The same page a GET of that URL shows (but for the message, shown once, and the CSRF token's mask).
    again = client.get(item_url(small_campaign, "conv-1:v1b3")).content.decode()
    assert "keep recorded" not in again

    def strip(page: str) -> str:
        return re.sub(r'value="[^"]{64}"', "", re.sub(r'<ul class="messages">.*?</ul>', "", page))

    assert strip(html) == strip(again)
    decision = Decision.objects.get()
    assert (decision.item.external_id, decision.action, decision.decided_by) == ("conv-1:v1c4", "keep", author)


def test_the_next_page_asked_for_keeps_the_filter_and_reveal_of_the_page_it_came_from(client, small_campaign, author):
    client.force_login(author)
    query = "?reason=q1_disagreement&reveal=1"
    first = client.get(item_url(small_campaign, "conv-1:v1b3") + query)
    assert first.status_code == 200
    response = client.post(item_url(small_campaign, "conv-1:v1b3") + query, {"action": "keep"},
                           headers={"X-Goldkey-Next": "page"})
    plain = client.post(item_url(small_campaign, "conv-1:v1b3") + query, {"action": "keep"})
    assert response.status_code == 200 and plain.status_code == 302
    assert response["X-Goldkey-Url"] == plain["Location"]
    assert "annotator A (ann_a)" in response.content.decode()


def test_the_last_decision_asked_for_the_next_page_names_the_queue_and_renders_nothing(client, small_campaign, author):
    client.force_login(author)
    client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": "not stated"})
    client.post(item_url(small_campaign, "conv-1:v1b3"), {"action": "keep"})
    response = client.post(item_url(small_campaign, "conv-1:v1b5"), {"action": "keep"}, headers={"X-Goldkey-Next": "page"})
    assert response.status_code == 204 and response["X-Goldkey-Url"] == queue_url(small_campaign)
    assert "conv-1:v1b5: keep recorded." in client.get(queue_url(small_campaign)).content.decode()  # kept for it


def test_a_refused_decision_asked_for_the_next_page_shows_this_item_with_the_reason(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": ""},
                           headers={"X-Goldkey-Next": "page"})
    html = response.content.decode()
    assert response.status_code == 400 and "needs a note" in html and "<h1>conv-1:v1c4</h1>" in html
    assert "X-Goldkey-Url" not in response and not Decision.objects.exists()


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_annotators_and_outsiders_asking_for_the_next_page_are_refused_and_decide_nothing(
        client, small_campaign, persona, request):
    client.force_login(request.getfixturevalue(persona))
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={"X-Goldkey-Next": "page"})
    assert response.status_code == 403 and "X-Goldkey-Url" not in response
    assert "conv-1:v1b3" not in response.content.decode() and not Decision.objects.exists()


def test_drop_without_a_note_is_refused_with_the_reason_on_the_page(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": ""})
    assert response.status_code == 400 and "needs a note" in response.content.decode()
    assert not Decision.objects.exists()


def test_relabel_without_a_new_label_keeps_the_chosen_action_and_note_and_says_what_is_missing(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "relabel", "new_gold": "", "note": "reads as aligned"})
    html = response.content.decode()
    assert response.status_code == 400 and "a relabel needs a new label: choose one of contradicting" in html
    assert 'value="relabel" checked' in html and 'value="drop" checked' not in html and "reads as aligned</textarea>" in html
    assert not Decision.objects.exists()


def test_saving_without_choosing_a_decision_asks_for_one_in_plain_words(client, small_campaign, author):
    client.force_login(author)
    html = client.post(item_url(small_campaign, "conv-1:v1c4"), {"note": "x"}).content.decode()
    assert "choose a decision: keep, drop or relabel" in html and "is not one of" not in html


def test_the_last_decision_returns_to_the_queue_with_retained_statistics(client, small_campaign, author):
    client.force_login(author)
    client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": "not stated"})
    client.post(item_url(small_campaign, "conv-1:v1b3"), {"action": "keep"})
    response = client.post(item_url(small_campaign, "conv-1:v1b5"), {"action": "relabel", "new_gold": "aligned", "note": "consistent"})
    assert response["Location"] == queue_url(small_campaign)
    page = client.get(queue_url(small_campaign)).content.decode()
    assert 'data-testid="retained-n">4<' in page and "pre-registered bar 0.8" in page


def test_agreement_page_draws_kappa_intervals_and_the_confusion_matrix_as_svg(client, small_campaign, author):
    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[small_campaign.slug])).content.decode()
    assert page.count("<svg") == 2 and "Confusion matrix" in page and "all items" in page
    assert "<script" not in page.split("<main>")[1]


def many_items(n: int) -> dict:
    kinds = [AGREE, DISAGREE, NOT_SELF_CONTAINED]
    return {f"conv-1:v1b{i}": kinds[i % 3] for i in range(n)}


@pytest.mark.parametrize("page", ["queue", "agreement", "item"])
def test_pages_run_the_same_number_of_queries_for_small_and_large_campaigns(client, author, annotator_a, annotator_b, page):
    client.force_login(author)
    counts = []
    for slug, n in (("small-c", 6), ("large-c", 90)):
        campaign = make_twist_campaign([annotator_a, annotator_b], many_items(n), slug=slug)
        if page == "item":
            url = reverse("adjudication:item", args=[slug, Item.objects.filter(item_set=campaign.item_set).order_by("id")[1].id])
        else:
            url = reverse(f"adjudication:{page}", args=[slug])
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_lapse_item_page_marks_placeholders_shows_the_judge_and_offers_a_label_not_keep(client, author, tmp_path):
    from django.core.management import call_command

    from tests.adjudication.test_commands import lapse_folder

    call_command("lapse_gold_import", str(lapse_folder(tmp_path)), "--campaign", "lg", stdout=None)
    client.force_login(author)
    page = client.get(reverse("adjudication:item", args=["lg", Item.objects.get(external_id="g003").id])).content.decode()
    assert "Text not released" in page and "label_disagreement" in page
    assert "local/j" in page and "HEDGE" in page
    assert 'value="keep"' not in page and 'value="relabel"' in page
    queue = client.get(reverse("adjudication:queue", args=["lg"])).content.decode()
    assert "g002" in queue and "g003" in queue and "g001" not in queue


def test_a_note_over_the_limit_is_refused_on_the_page_and_the_form_keeps_it(client, small_campaign, author):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": "n" * 12000})
    html = response.content.decode()
    assert response.status_code == 400 and "the note is 12,000 characters long" in html and "n" * 12000 in html
    assert not Decision.objects.exists()
