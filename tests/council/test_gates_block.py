"""Blocking gate verdicts keep a candidate out of campaigns and keys; it ships with the rejects."""

import pytest

from annotation.models import Assignment
from annotation.selectors import campaign_item_counts
from annotation.services import campaign_create
from council.gates import gates_run
from goldkey.errors import ApplicationError
from items.models import Item, ItemSet
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def pilot(twist_corpus, shared_data):
    from items.services import items_import_twist

    items_import_twist(path=shared_data("twist-v1", "track_b_items_v0.jsonl"), item_set_name="TWIST Track B v0 pilot")
    return ItemSet.objects.get(name="TWIST Track B v0 pilot")


def test_after_the_gates_a_pilot_campaign_holds_exactly_the_130_items_that_pass(pilot, annotator_a, annotator_b):
    result = gates_run(item_set_id=pilot.pk)
    assert (result["checked"], result["passed"]) == (153, 130)
    campaign = campaign_create(slug="pilot", item_set=pilot, annotators=[annotator_a, annotator_b], seed=1)
    held = set(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item_id", flat=True))
    assert len(held) == 130
    assert not Item.objects.filter(pk__in=held, gate_rejected=True).exists()
    assert campaign_item_counts(campaign) == {"items": 130, "candidates": 153, "gate_rejected": 23}


def test_rerunning_the_gates_clears_a_flag_that_no_longer_holds(pilot):
    gates_run(item_set_id=pilot.pk)
    flipped = Item.objects.filter(item_set=pilot, gate_rejected=True).first()
    flipped.recipient = flipped.conversation.other_speaker(flipped.recipient)
    flipped.save()
    gates_run(item_set_id=pilot.pk)
    flipped.refresh_from_db()
    assert Item.objects.filter(item_set=pilot, gate_rejected=True).count() in (22, 23)
    assert flipped.gate_rejected is (Item.objects.filter(pk=flipped.pk, gate_verdicts__passed=False,
                                                         gate_verdicts__blocking=True).exists())


def test_a_campaign_over_an_item_set_the_gates_rejected_whole_is_refused_with_the_count(small_twist, annotator_a, annotator_b):
    Item.objects.filter(item_set=small_twist).update(gate_rejected=True)
    with pytest.raises(ApplicationError, match=r"no items that passed the gates \(3 rejected\)"):
        campaign_create(slug="none", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


def test_a_key_cannot_hold_an_item_the_gates_rejected_after_the_campaign_began(author, annotator_b):
    from keys.services import key_freeze

    campaign = make_campaign(slug="late", n=6, annotators=[author, annotator_b])
    late = Item.objects.filter(item_set=campaign.item_set).order_by("external_id").first()
    Item.objects.filter(pk=late.pk).update(gate_rejected=True)  # the gates ran after the campaign was created
    with pytest.raises(ApplicationError, match=f"rejected by a blocking gate.*{late.external_id}"):
        key_freeze(campaign=campaign, version="LATE-v1.0", user=author)


def test_the_release_ships_goldkeys_own_gate_rejects_with_their_verdicts(author, annotator_b):
    import json

    from council.models import GateVerdict
    from keys.releases import release_files
    from keys.services import key_freeze

    campaign = make_campaign(slug="rel", n=6, annotators=[author, annotator_b])
    template = Item.objects.filter(item_set=campaign.item_set).order_by("external_id").first()
    rejected = Item.objects.create(
        item_set=campaign.item_set, kind=template.kind, external_id="s-9999", conversation=template.conversation,
        recipient=template.recipient, draft="a role flip", gold_label=template.gold_label, gate_rejected=True,
    )
    GateVerdict.objects.create(item_set=campaign.item_set, item=rejected, gate="recipient_speaker", passed=False,
                               blocking=True, detail="evidence turn D1:1 is spoken by Bo, not the recipient")
    files = release_files(key_freeze(campaign=campaign, version="REL-v1.0", user=author))
    rejects = [json.loads(line) for line in files["generation_rejects.jsonl"].splitlines()]
    candidates = [json.loads(line) for line in files["candidates.jsonl"].splitlines()]
    assert [(r["id"], r["_dropped_by"], r["_verdict"]) for r in rejects] == [
        ("s-9999", "recipient_speaker", "evidence turn D1:1 is spoken by Bo, not the recipient")
    ]
    assert "s-9999" not in {c["id"] for c in candidates} and len(candidates) == 6
