"""Queue, undecided and retained-set selectors over a small synthetic campaign."""

import pytest

from adjudication import selectors
from adjudication.services import decision_save
from council.models import CouncilMember, CouncilVote
from items.models import Item
from tests.adjudication.conftest import AGREE, make_twist_campaign

pytestmark = pytest.mark.django_db


def ids(entries):
    return [e.item.external_id for e in entries]


def test_queue_holds_every_queued_item_with_its_reasons_drop_suggestions_first(small_campaign):
    entries = selectors.campaign_queue(small_campaign)
    assert ids(entries) == ["conv-1:v1c4", "conv-1:v1b3", "conv-1:v1b5"]
    assert entries[0].suggestion == "drop"
    assert entries[0].reasons == ["q1_disagreement", "q2_not_self_contained", "q2_quote_wrong"]
    assert entries[2].reasons == ["missing_answers"]
    assert all(e.decision is None for e in entries)


def test_undecided_items_shrink_as_decisions_are_recorded(small_campaign, author):
    item = Item.objects.get(external_id="conv-1:v1b3")
    assert len(selectors.undecided_items(small_campaign)) == 3
    decision_save(campaign=small_campaign, item=item, action="keep", user=author)
    assert [i.external_id for i in selectors.undecided_items(small_campaign)] == ["conv-1:v1c4", "conv-1:v1b5"]


def test_retained_items_say_how_each_item_was_kept(small_campaign, author):
    items = {i.external_id: i for i in Item.objects.all()}
    decision_save(campaign=small_campaign, item=items["conv-1:v1b3"], action="keep", user=author)
    decision_save(campaign=small_campaign, item=items["conv-1:v1c4"], action="drop", note="not stated", user=author)
    decision_save(campaign=small_campaign, item=items["conv-1:v1b5"], action="relabel", new_gold="aligned", note="it is consistent", user=author)
    retained = {item.external_id: (gold, how) for item, gold, how in selectors.retained_items(small_campaign)}
    assert retained == {
        "conv-1:v1b1": ("contradicting", "kept_unanimous"),
        "conv-1:v1b2": ("contradicting", "kept_unanimous"),
        "conv-1:v1b3": ("contradicting", "kept_after_adjudication"),
        "conv-1:v1b5": ("aligned", "relabelled"),
    }


def test_queued_items_without_a_decision_are_not_retained(small_campaign):
    retained = {item.external_id for item, _, _ in selectors.retained_items(small_campaign)}
    assert retained == {"conv-1:v1b1", "conv-1:v1b2"}


def test_council_majority_against_queues_an_item_the_annotators_agreed_on(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-2:v1b1": AGREE})
    item = Item.objects.get(external_id="conv-2:v1b1")
    for name in ("gpt", "claude", "gemini"):
        member = CouncilMember.objects.create(name=name, is_generator=name == "claude")
        CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="v1", values={"q1": "consistent"})
    entry = selectors.campaign_queue(campaign)[0]
    assert entry.reasons == ["council_majority_against"]
    assert [b.member for b in entry.council] == ["claude", "gemini", "gpt"]
    assert entry.council[0].is_generator


def test_only_the_latest_prompt_version_of_a_member_counts(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-2:v1b1": AGREE})
    item = Item.objects.get()
    member = CouncilMember.objects.create(name="gpt")
    CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="v1", values={"q1": "consistent"})
    CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="v2", values={"q1": "contradicts"})
    assert selectors.campaign_queue(campaign) == []


def test_campaign_is_not_frozen_before_any_key_exists(small_campaign):
    assert selectors.campaign_is_frozen(small_campaign) is False
