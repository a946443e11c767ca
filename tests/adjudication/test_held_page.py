"""The next item's page fetched ahead: `items/<id>/next/` is the page a decision on <id> leads to, and a
decision naming that page's key (X-Goldkey-Held) is answered by 204 "current" only when the page held is
the very page the answer would have been; every other case gets the page itself, as before."""

import re
from html import unescape
from urllib.parse import unquote

import pytest
from django.urls import reverse

import protocols
from adjudication.models import Decision
from council.models import CouncilMember, CouncilVote
from items.models import Item

pytestmark = pytest.mark.django_db

NEXT = {"X-Goldkey-Next": "page"}


def item_url(campaign, external_id, query=""):
    return reverse("adjudication:item", args=[campaign.slug, Item.objects.get(external_id=external_id).id]) + query


def ahead_url(campaign, external_id, query=""):
    return reverse("adjudication:next", args=[campaign.slug, Item.objects.get(external_id=external_id).id]) + query


def key_of(html: str) -> str:
    """The key as the page's script reads it (the attribute's value, its entities decoded)."""
    return unescape(re.search(r'id="decision-form" data-key="([^"]+)"', html).group(1))


def fetch_ahead(client, campaign, external_id, query=""):
    response = client.get(ahead_url(campaign, external_id, query))
    assert response.status_code == 200, response.status_code
    return response, key_of(response.content.decode())


def same_page(held: str, now: str) -> bool:
    """The same page, but for the CSRF token's mask and the page's own key (what the next page fetched
    ahead from it is compared by; the page shown is not)."""
    def strip(page):
        return re.sub(r'value="[^"]{64}"| data-key="[^"]*"', "", page)

    return strip(held) == strip(now)


def test_the_page_ahead_is_the_next_undecided_items_page_with_its_url(client, small_campaign, author):
    client.force_login(author)
    response, _ = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    assert response["X-Goldkey-Url"] == item_url(small_campaign, "conv-1:v1b3")
    html = response.content.decode()
    assert "<h1>conv-1:v1b3</h1>" in html
    # The item page names it for its script, with the filter and reveal of the page.
    page = client.get(item_url(small_campaign, "conv-1:v1c4", "?reason=q1_disagreement&reveal=1")).content.decode()
    assert f'data-ahead="{ahead_url(small_campaign, "conv-1:v1c4")}?reason=q1_disagreement&amp;reveal=1"' in page


def test_a_held_page_still_current_is_answered_204_with_its_url_and_the_message(client, small_campaign, author):
    client.force_login(author)
    held, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"},
                           headers={**NEXT, "X-Goldkey-Held": key})
    assert response.status_code == 204 and response["X-Goldkey-Held"] == "current"
    assert response["X-Goldkey-Url"] == item_url(small_campaign, "conv-1:v1b3")
    assert unquote(response["X-Goldkey-Message"]) == "conv-1:v1c4: keep recorded."
    assert Decision.objects.get().item.external_id == "conv-1:v1c4"
    # The page held is the page a request now renders (but for the CSRF token's mask), and the message
    # is not left behind for a later page.
    again = client.get(response["X-Goldkey-Url"]).content.decode()
    assert "keep recorded" not in again
    assert same_page(held.content.decode(), again)


def test_the_page_ahead_shows_no_message_and_leaves_it_for_the_next_page(client, small_campaign, author):
    client.force_login(author)
    client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"})  # a redirect: message stored
    response, _ = fetch_ahead(client, small_campaign, "conv-1:v1b3")
    assert "keep recorded" not in response.content.decode()
    assert "conv-1:v1c4: keep recorded." in client.get(item_url(small_campaign, "conv-1:v1b3")).content.decode()


def test_a_message_with_characters_beyond_latin_1_travels_in_the_header(client, small_campaign, author):
    Item.objects.filter(external_id="conv-1:v1c4").update(external_id="conv-1:v1c4-ü-中")
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4-ü-中")
    response = client.post(item_url(small_campaign, "conv-1:v1c4-ü-中"), {"action": "keep"},
                           headers={**NEXT, "X-Goldkey-Held": key})
    assert response.status_code == 204 and unquote(response["X-Goldkey-Message"]) == "conv-1:v1c4-ü-中: keep recorded."


def _answer_with_page(response, client, external_id):
    assert response.status_code == 200 and "X-Goldkey-Held" not in response
    html = response.content.decode()
    assert f"<h1>{external_id}</h1>" in html and "keep recorded." in html
    return html


def test_a_decision_by_someone_else_since_the_page_was_fetched_gets_the_page_itself(client, small_campaign, author):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")  # b3 is next, b5 after it
    other = client.post(item_url(small_campaign, "conv-1:v1b5"), {"action": "keep"})  # another tab, another item
    assert other.status_code == 302
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    _answer_with_page(response, client, "conv-1:v1b3")


def test_the_held_item_decided_since_gets_the_page_of_the_one_after_it(client, small_campaign, author):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")  # holds b3
    client.post(item_url(small_campaign, "conv-1:v1b3"), {"action": "keep"})
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    _answer_with_page(response, client, "conv-1:v1b5")


def test_a_council_vote_written_since_the_page_was_fetched_gets_the_page_itself(client, small_campaign, author):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    member = CouncilMember.objects.create(name="late-member")
    CouncilVote.objects.create(campaign=small_campaign, member=member, item=Item.objects.get(external_id="conv-1:v1b3"),
                               prompt_version="v1", values={"q1": "contradicts"})
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    assert "late-member" in _answer_with_page(response, client, "conv-1:v1b3")


def test_the_same_decision_again_gets_the_page_itself_and_a_changed_one_the_held_page(client, small_campaign, author):
    client.force_login(author)
    client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"})
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    same = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    assert same.status_code == 200 and "X-Goldkey-Held" not in same  # nothing written: no version to compare
    held, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    changed = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "drop", "note": "not stated"},
                          headers={**NEXT, "X-Goldkey-Held": key})
    assert changed.status_code == 204 and changed["X-Goldkey-Held"] == "current"
    assert Decision.objects.get().revision == 2
    assert same_page(held.content.decode(), client.get(changed["X-Goldkey-Url"]).content.decode())


@pytest.mark.parametrize("held", ["", "garbage", "1.2.3", "9" * 300, "conv-1:v1b3", "\u00e9"])
def test_a_held_key_that_is_not_current_gets_the_page_itself_never_an_error(client, small_campaign, author, held):
    client.force_login(author)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": held})
    _answer_with_page(response, client, "conv-1:v1b3")


@pytest.mark.parametrize("fetched, posted", [("?reveal=1", ""), ("", "?reveal=1"), ("?reason=q1_disagreement", "")])
def test_a_page_held_under_another_filter_or_reveal_gets_the_page_itself(client, small_campaign, author, fetched, posted):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4", fetched)  # b3 next, whichever the filter
    response = client.post(item_url(small_campaign, "conv-1:v1c4", posted), {"action": "keep"},
                           headers={**NEXT, "X-Goldkey-Held": key})
    _answer_with_page(response, client, "conv-1:v1b3")


def test_a_page_held_under_the_filter_and_reveal_it_was_posted_with_is_current(client, small_campaign, author):
    client.force_login(author)
    query = "?reason=q1_disagreement&reveal=1"
    held, key = fetch_ahead(client, small_campaign, "conv-1:v1c4", query)
    response = client.post(item_url(small_campaign, "conv-1:v1c4", query), {"action": "keep"},
                           headers={**NEXT, "X-Goldkey-Held": key})
    assert response.status_code == 204 and response["X-Goldkey-Url"] == item_url(small_campaign, "conv-1:v1b3", query)
    assert same_page(held.content.decode(), client.get(response["X-Goldkey-Url"]).content.decode())


def test_a_page_held_ahead_of_another_item_gets_the_page_itself(client, small_campaign, author):
    client.force_login(author)
    held, key = fetch_ahead(client, small_campaign, "conv-1:v1b3")  # the page after b3: b5
    assert "<h1>conv-1:v1b5</h1>" in held.content.decode()
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    _answer_with_page(response, client, "conv-1:v1b3")


def test_an_item_page_opened_directly_carries_no_key_only_where_to_fetch_ahead(client, small_campaign, author):
    client.force_login(author)
    page = client.get(item_url(small_campaign, "conv-1:v1c4")).content.decode()
    assert "data-key" not in page and f'data-ahead="{ahead_url(small_campaign, "conv-1:v1c4")}"' in page


def test_without_the_page_header_a_held_key_changes_nothing_the_form_is_redirected(client, small_campaign, author):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={"X-Goldkey-Held": key})
    assert response.status_code == 302 and response["Location"] == item_url(small_campaign, "conv-1:v1b3")


def test_sealing_lifted_by_the_decision_makes_the_held_page_stale(client, small_campaign, author, monkeypatch):
    """A protocol that shows detector labels once few items are undecided: the page held while they were
    sealed is not the page after the decision that unseals them."""
    spec = protocols.get(small_campaign.protocol)
    monkeypatch.setattr(type(spec), "detectors_sealed", lambda self, undecided: undecided > 2)
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")  # 3 undecided: sealed
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    _answer_with_page(response, client, "conv-1:v1b3")  # 2 undecided now: not sealed
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1b3")  # not sealed, and not after the next decision
    response = client.post(item_url(small_campaign, "conv-1:v1b3"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    assert response.status_code == 204 and response["X-Goldkey-Held"] == "current"


def test_the_page_ahead_is_204_when_no_other_item_is_undecided_and_404_for_a_foreign_item(client, small_campaign, author):
    client.force_login(author)
    client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"})
    client.post(item_url(small_campaign, "conv-1:v1b3"), {"action": "keep"})
    assert client.get(ahead_url(small_campaign, "conv-1:v1b5")).status_code == 204
    assert client.get(reverse("adjudication:next", args=[small_campaign.slug, 10**9])).status_code == 404
    assert client.post(ahead_url(small_campaign, "conv-1:v1b5")).status_code == 405


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_annotators_and_outsiders_are_refused_the_page_ahead(client, small_campaign, persona, request):
    client.force_login(request.getfixturevalue(persona))
    response = client.get(ahead_url(small_campaign, "conv-1:v1c4"))
    assert response.status_code == 403 and "X-Goldkey-Url" not in response
    assert "conv-1:v1b3" not in response.content.decode()


def test_a_held_key_from_someone_refused_decides_nothing(client, small_campaign, author, annotator_a):
    client.force_login(author)
    _, key = fetch_ahead(client, small_campaign, "conv-1:v1c4")
    client.force_login(annotator_a)
    response = client.post(item_url(small_campaign, "conv-1:v1c4"), {"action": "keep"}, headers={**NEXT, "X-Goldkey-Held": key})
    assert response.status_code == 403 and "X-Goldkey-Url" not in response and not Decision.objects.exists()
