"""The one council band (PROTOCOL §4): the queue and the triage page compute it alike, and every
council member counts — a member whose call failed on an item is no vote, like an abstention."""

import pytest

from adjudication import queue as q
from adjudication.selectors import campaign_data, queue_from_data
from council.models import CouncilMember, CouncilVote
from council.selectors import band_for, triage
from protocols.base import council_band
from tests.adjudication.conftest import AGREE, make_twist_campaign

OPPOSING = {"consistent"}  # against a gold verdict of "contradicts"


def test_two_opposing_votes_of_five_members_with_two_errors_are_abstain_heavy():
    votes = ["consistent", "consistent", "contradicts", None, None]
    assert council_band("contradicts", votes, opposing=OPPOSING) == "abstain_heavy"
    assert band_for("contradicts", votes, protocol="twist_b") == "abstain_heavy"


def test_a_failed_call_never_makes_the_council_unanimous():
    assert council_band("contradicts", ["contradicts"] * 3 + [None, None], opposing=OPPOSING) == "majority_match"


def test_three_opposing_votes_of_five_are_majority_against():
    votes = ["consistent"] * 3 + [None, "cannot-tell"]
    assert council_band("contradicts", votes, opposing=OPPOSING) == "majority_against"


@pytest.mark.django_db
def test_queue_and_triage_agree_when_members_errored(annotator_a, annotator_b):
    """5 members; on one item 2 calls failed and the votes are 2 against / 1 match: abstain_heavy on
    both pages, so the queue raises no council reason for it."""
    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-1:v1b1": AGREE, "conv-1:v1b2": AGREE}, slug="band")
    items = {i.external_id: i for i in campaign.item_set.items.all()}
    members = [CouncilMember.objects.create(name=f"m{n}") for n in range(5)]
    ok = CouncilVote.Status.OK
    for member in members:  # the first item: every member votes, all against gold
        CouncilVote.objects.create(campaign=campaign, member=member, item=items["conv-1:v1b1"], prompt_version="p",
                                   values={"q1": "consistent"})
    second = [("consistent", ok), ("consistent", ok), ("contradicts", ok), ("", "error"), ("", "error")]
    for member, (q1, status) in zip(members, second, strict=True):
        CouncilVote.objects.create(campaign=campaign, member=member, item=items["conv-1:v1b2"], prompt_version="p",
                                   status=status, values={"q1": q1} if q1 else {}, error="timeout" if not q1 else "")

    rows = {r["external_id"]: r for r in triage(campaign)["rows"]}
    assert rows["conv-1:v1b1"]["band"] == "majority_against"
    assert rows["conv-1:v1b2"]["band"] == "abstain_heavy"

    data = campaign_data(campaign)
    queued = {e.item.external_id: e.reasons for e in queue_from_data(data)}
    assert queued == {"conv-1:v1b1": [q.COUNCIL_MAJORITY_AGAINST]}
    votes = data.council_votes(items["conv-1:v1b2"].id)
    assert votes[3:] == [{}, {}]
    assert q.council_band("contradicting", votes, protocol="twist_b") == rows["conv-1:v1b2"]["band"]
