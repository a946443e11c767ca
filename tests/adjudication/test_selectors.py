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


def test_agreement_pairs_each_items_own_two_annotators_when_three_rotate(annotator_a, annotator_b, author):
    from adjudication.agreement import campaign_agreement
    from annotation.models import Answer, Assignment
    from annotation.services import campaign_create
    from items.services import item_set_get_or_create

    item_set = item_set_get_or_create(name="rotating", kind="twist")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="twist", external_id=f"conv-5:v1b{i}", gold_label="aligned") for i in range(6)
    )
    campaign = campaign_create(slug="rot", item_set=item_set, annotators=[annotator_a, annotator_b, author], per_item=2, seed=3)
    Answer.objects.bulk_create(
        Answer(assignment=assignment, values={"q1": "consistent", "q3": "clean"}, revision=1)
        for assignment in Assignment.objects.filter(enrollment__campaign=campaign)
    )
    result = campaign_agreement(campaign)
    assert result["q1"]["n"] == 6 and result["q1"]["agree"] == 6 and result["q1"]["left_out"] == 0
    assert result["queue"]["n"] == 0
    assert sum(result["retained"]["gold_agreement_detail"][p]["n"] for p in ("A", "B", "C")) == 12


def test_items_with_identical_answers_are_queued_by_their_own_gold_and_council_votes(annotator_a, annotator_b):
    # campaign_data shares one dict per answer combination and the queue memoises on it: the gold type
    # and the council's votes must still tell the items apart.
    items = ["conv-1:v1b1", "conv-1:v1b2", "conv-1:v1b3", "conv-1:v1b4"]
    campaign = make_twist_campaign(
        [annotator_a, annotator_b], dict.fromkeys(items, AGREE), slug="shared", gold={"conv-1:v1b2": "aligned"}
    )
    members = [CouncilMember.objects.create(name=name) for name in ("gpt", "claude")]
    for member in members:
        CouncilVote.objects.create(campaign=campaign, member=member, item=Item.objects.get(external_id="conv-1:v1b3"),
                                   prompt_version="v1", values={"q1": "consistent"})
        CouncilVote.objects.create(campaign=campaign, member=member, item=Item.objects.get(external_id="conv-1:v1b4"),
                                   prompt_version="v1", values={"q1": "contradicts"})
    entries = {e.item.external_id: e.reasons for e in selectors.campaign_queue(campaign)}
    assert entries == {"conv-1:v1b2": ["q1_agreed_against_gold"], "conv-1:v1b3": ["council_majority_against"]}


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_and_summarising_a_campaign_leave_the_garbage_collector_as_they_found_it(small_campaign, enabled):
    import gc

    from adjudication.agreement import campaign_agreement

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        campaign_agreement(small_campaign)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
