"""The queue page narrowed by reason and type, a page at a time, in the same number of queries whatever
the campaign size; the item page's way back lands on the page that lists the item."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from adjudication import stored_queue
from adjudication.models import QueueItem
from adjudication.services import queue_sync
from council.models import CouncilMember, CouncilVote
from items.models import Item
from tests.adjudication.conftest import DISAGREE, NOT_SELF_CONTAINED, make_twist_campaign

pytestmark = pytest.mark.django_db

GOLD = ["contradicting", "aligned", "hard_negative"]


def _items(n: int, slug: str) -> tuple[dict, dict]:
    """n queued items: even ones disagree on q1, odd ones are not self-contained; gold types cycle."""
    answers = {f"conv-1:v1b{i:04d}-{slug}": (DISAGREE if i % 2 == 0 else NOT_SELF_CONTAINED) for i in range(n)}
    gold = {item: GOLD[i % 3] for i, item in enumerate(answers)}
    return answers, gold


@pytest.fixture
def campaigns(client, author, annotator_a, annotator_b):
    client.force_login(author)
    made = []
    for slug, n in (("f-30", 30), ("f-300", 300)):
        answers, gold = _items(n, slug)
        campaign = make_twist_campaign([annotator_a, annotator_b], answers, gold=gold, slug=slug)
        queue_sync(campaign=campaign)
        made.append(campaign)
    return made


def _queued(campaign, **where):
    rows = QueueItem.objects.filter(campaign=campaign, queued=True).select_related("item").order_by("sort_key")
    return [r for r in rows if all(r.item.gold_label == v if k == "type" else v in r.reasons for k, v in where.items())]


def test_the_queue_filtered_by_reason_lists_only_items_with_that_reason(client, campaigns):
    campaign = campaigns[0]
    url = reverse("adjudication:queue", args=[campaign.slug])
    html = client.get(url, {"reason": "q2_not_self_contained"}).content.decode()
    expected = _queued(campaign, reason="q2_not_self_contained")
    assert 0 < len(expected) < 30
    assert f"{len(expected)} of 30 queued items match" in html
    for row in _queued(campaign):
        assert (f">{row.item.external_id}<" in html) == (row in expected), row.item.external_id


def test_the_queue_filtered_by_type_and_reason_pages_through_the_matches_keeping_the_filter(client, author, annotator_a, annotator_b):
    client.force_login(author)
    answers, gold = _items(4 * stored_queue.PAGE_SIZE, "big")
    campaign = make_twist_campaign([annotator_a, annotator_b], answers, gold=gold, slug="big")
    queue_sync(campaign=campaign)
    url = reverse("adjudication:queue", args=[campaign.slug])
    expected = [r.item.external_id for r in _queued(campaign, type="aligned", reason="q1_disagreement")]
    first = client.get(url, {"type": "aligned", "reason": "q1_disagreement"}).content.decode()
    second = client.get(url, {"type": "aligned", "reason": "q1_disagreement", "page": 2}).content.decode()
    assert stored_queue.PAGE_SIZE < len(expected) < 2 * stored_queue.PAGE_SIZE < len(_queued(campaign))
    assert "page 1 of 2" in first and "page 2 of 2" in second
    assert "?page=2&amp;reason=q1_disagreement&amp;type=aligned" in first
    assert expected[stored_queue.PAGE_SIZE - 1] in first and expected[-1] not in first
    assert expected[-1] in second and expected[0] not in second


def test_an_unknown_filter_value_shows_the_whole_queue(client, campaigns):
    url = reverse("adjudication:queue", args=[campaigns[0].slug])
    html = client.get(url, {"reason": "nonsense", "type": "<script>"}).content.decode()
    assert "0 of 30 queued items decided" in html and "queued items match" not in html and "<script>" not in html


def test_a_filter_that_matches_nothing_says_so_and_links_the_whole_queue(client, campaigns):
    url = reverse("adjudication:queue", args=[campaigns[0].slug])
    html = client.get(url, {"reason": "council_majority_against"}).content.decode()
    assert 'data-testid="queue-empty"' in html and "0 of 30 queued items match" in html


def test_the_way_back_from_an_item_lands_on_the_page_listing_it(client, author, annotator_a, annotator_b):
    client.force_login(author)
    answers, gold = _items(2 * stored_queue.PAGE_SIZE + 5, "back")
    campaign = make_twist_campaign([annotator_a, annotator_b], answers, gold=gold, slug="back")
    queue_sync(campaign=campaign)
    late = _queued(campaign)[stored_queue.PAGE_SIZE + 3].item
    item_html = client.get(reverse("adjudication:item", args=[campaign.slug, late.id])).content.decode()
    back = reverse("adjudication:queue", args=[campaign.slug]) + f"?at={late.id}"
    assert f'href="{back}" id="to-queue"' in item_html
    html = client.get(back).content.decode()
    assert "page 2 of 3" in html and f'data-at="{late.id}"' in html and f">{late.external_id}<" in html


def _count(client, url: str, data: dict) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, data).status_code == 200
    return len(queries)


@pytest.mark.parametrize("where", [{"reason": "q1_disagreement"}, {"type": "aligned"},
                                   {"reason": "q2_not_self_contained", "type": "hard_negative", "page": 2}, {"at": "last"}])
def test_a_filtered_queue_page_runs_the_same_queries_for_30_and_300_items(client, campaigns, where):
    counts = []
    for campaign in campaigns:
        data = dict(where)
        if data.get("at") == "last":
            data["at"] = _queued(campaign)[-1].item_id
        url = reverse("adjudication:queue", args=[campaign.slug])
        _count(client, url, data)  # the figures cached for this state
        counts.append(_count(client, url, data))
    assert counts[0] == counts[1], counts


def test_another_campaigns_item_as_the_way_back_shows_this_queue_from_its_start(client, campaigns):
    other = _queued(campaigns[1])[0].item
    html = client.get(reverse("adjudication:queue", args=[campaigns[0].slug]), {"at": other.id}).content.decode()
    assert other.external_id not in html and "0 of 30 queued items decided" in html
    assert Item.objects.filter(pk=other.id).exists()


def test_the_next_step_to_the_key_appears_once_every_queued_item_of_every_page_is_decided(client, author, annotator_a, annotator_b):
    from adjudication.models import Decision

    client.force_login(author)
    answers, gold = _items(stored_queue.PAGE_SIZE + 10, "all")
    campaign = make_twist_campaign([annotator_a, annotator_b], answers, gold=gold, slug="all")
    queue_sync(campaign=campaign)
    url = reverse("adjudication:queue", args=[campaign.slug])
    rows = _queued(campaign)
    Decision.objects.bulk_create(Decision(campaign=campaign, item_id=r.item_id, action="keep") for r in rows[1:])
    assert 'data-testid="next-step"' not in client.get(url).content.decode()  # one undecided, on page 1
    Decision.objects.create(campaign=campaign, item_id=rows[0].item_id, action="keep")
    html = client.get(url, {"page": 2}).content.decode()
    assert 'data-testid="next-step"' in html and f'href="/keys/new/{campaign.slug}/"' in html


def _council_on(campaign, verdicts: dict[str, str]) -> None:
    """Two council members voting `verdicts` (external id -> q1 answer) on the campaign's items."""
    members = [CouncilMember.objects.create(name=name) for name in ("judge-1", "judge-2")]
    for item in Item.objects.filter(external_id__in=verdicts):
        for member in members:
            CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="v1",
                                       values={"q1": verdicts[item.external_id]})


def test_the_queue_filtered_by_council_band_lists_only_that_band_and_shows_each_rows_band(client, campaigns):
    campaign = campaigns[0]
    rows = _queued(campaign)
    # Gold contradicting: "contradicts" matches it, "consistent" opposes it.
    contradicting = [r.item.external_id for r in rows if r.item.gold_label == "contradicting"]
    _council_on(campaign, {ext: ("contradicts" if i % 2 else "consistent") for i, ext in enumerate(contradicting)})
    url = reverse("adjudication:queue", args=[campaign.slug])
    html = client.get(url, {"band": "majority_against"}).content.decode()
    against = [ext for i, ext in enumerate(contradicting) if not i % 2]
    assert against and f"{len(against)} of 30 queued items match" in html and 'name="band"' in html
    for row in QueueItem.objects.filter(campaign=campaign, queued=True).select_related("item"):
        assert (f">{row.item.external_id}<" in html) == (row.item.external_id in against), row.item.external_id
    assert html.count('data-testid="band">majority_against<') == len(against)


def test_without_a_council_there_is_no_band_filter_and_a_band_in_the_address_is_ignored(client, campaigns):
    url = reverse("adjudication:queue", args=[campaigns[0].slug])
    html = client.get(url, {"band": "majority_against"}).content.decode()
    assert 'name="band"' not in html and "queued items match" not in html


def _item_url(campaign, item, query: str = "") -> str:
    return reverse("adjudication:item", args=[campaign.slug, item.id]) + query


def test_the_item_page_reached_from_a_filtered_queue_steps_through_that_filter(client, campaigns):
    campaign = campaigns[0]
    query = "?type=aligned"
    matching, everything = [r.item for r in _queued(campaign, type="aligned")], [r.item for r in _queued(campaign)]
    # An item whose next in the whole queue is not its next under the filter (nor its previous).
    n = next(n for n in range(1, len(matching) - 1)
             if everything[everything.index(matching[n]) + 1] not in matching
             and everything[everything.index(matching[n]) - 1] not in matching)
    second = matching[n]
    queue_html = client.get(reverse("adjudication:queue", args=[campaign.slug]) + query).content.decode()
    assert f'href="{_item_url(campaign, second, query)}"' in queue_html  # the queue's rows keep the filter
    html = client.get(_item_url(campaign, second, query)).content.decode()
    assert f'id="prev" href="{_item_url(campaign, matching[n - 1], query)}"' in html
    assert f'id="next" href="{_item_url(campaign, matching[n + 1], query)}"' in html
    assert f"item {everything.index(second) + 1} of {len(everything)}" in html  # its place in the whole queue
    back = reverse("adjudication:queue", args=[campaign.slug]) + f"?at={second.id}&amp;type=aligned"
    assert f'href="{back}" id="to-queue"' in html
    # Without the filter the same page steps through the whole queue, whose neighbours are other items.
    whole = client.get(_item_url(campaign, second)).content.decode()
    at = everything.index(second)
    assert f'id="next" href="{_item_url(campaign, everything[at + 1])}"' in whole
    assert f'id="prev" href="{_item_url(campaign, everything[at - 1])}"' in whole


def test_save_and_next_from_a_filtered_queue_goes_to_the_next_undecided_item_within_it(client, campaigns, author):
    from adjudication.services import decision_save

    campaign = campaigns[0]
    query = "?type=aligned"
    matching = [r.item for r in _queued(campaign, type="aligned")]
    response = client.post(_item_url(campaign, matching[0], query), {"action": "keep"})
    assert response.status_code == 302 and response["Location"] == _item_url(campaign, matching[1], query)
    for item in matching[1:-1]:
        decision_save(campaign=campaign, item=item, action="keep", user=author)
    # The filter's last undecided item: back to the filtered queue, though other items are undecided.
    response = client.post(_item_url(campaign, matching[-1], query), {"action": "keep"})
    assert response["Location"] == reverse("adjudication:queue", args=[campaign.slug]) + query
    assert QueueItem.objects.filter(campaign=campaign, queued=True, decided=False).exists()


def test_a_band_filter_the_queue_does_not_offer_is_not_followed_by_the_item_page(client, campaigns):
    campaign = campaigns[0]  # no council: the queue offers no band filter
    first = _queued(campaign)[0].item
    html = client.get(_item_url(campaign, first, "?band=abstain_heavy")).content.decode()
    assert 'id="next" href="' in html and "band=" not in html and 'data-testid="item-filter"' not in html


def test_the_queue_rows_escape_every_value_they_write(client, author, annotator_a, annotator_b):
    """The queue table's rows are written by a template tag, not the template engine: what an import or
    a user name could carry is still text on the page, never markup."""
    from django.contrib.auth import get_user_model

    from adjudication.services import decision_save

    client.force_login(author)
    hostile = 'conv-1:<img src=x onerror="alert(1)">'
    campaign = make_twist_campaign([annotator_a, annotator_b], {hostile: DISAGREE, "conv-1:plain": DISAGREE}, slug="esc")
    author.username = "<b>author</b>"
    get_user_model().objects.filter(pk=author.pk).update(username=author.username)
    decision_save(campaign=campaign, item=Item.objects.get(external_id=hostile), action="relabel",
                  new_gold="aligned", note="a reason", user=author)
    html = client.get(reverse("adjudication:queue", args=[campaign.slug])).content.decode()
    assert "<img src=x" not in html and "<b>author</b>" not in html
    assert "conv-1:&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "by &lt;b&gt;author&lt;/b&gt;" in html and "relabel</strong> → aligned" in html
