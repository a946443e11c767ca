"""What a key's manifest records about the council: the models the endpoints reported, per member."""

import pytest

from council.models import CouncilMember, CouncilVote
from items.models import Item
from keys.selectors import council_members
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db


def test_each_member_lists_the_models_and_fingerprints_its_votes_were_answered_by(author, annotator_b):
    campaign = make_campaign(slug="c", n=3, annotators=[author, annotator_b])
    items = list(Item.objects.filter(item_set=campaign.item_set).order_by("external_id"))
    live = CouncilMember.objects.create(name="openai-gpt-4o", model="gpt-4o")
    imported = CouncilMember.objects.create(name="replayed", model="")
    reported = [("gpt-4o-2024-08-06", "fp_a"), ("gpt-4o-2024-08-06, gpt-4o-2024-11-20", "fp_a, fp_b"), ("", "")]
    for item, (model, fingerprint) in zip(items, reported, strict=True):
        CouncilVote.objects.create(campaign=campaign, member=live, item=item, prompt_version="p",
                                   response_model=model, system_fingerprint=fingerprint)
        CouncilVote.objects.create(campaign=campaign, member=imported, item=item, prompt_version="imported")
    assert council_members(campaign) == [
        {"name": "openai-gpt-4o", "model": "gpt-4o", "is_generator": False,
         "reported_models": ["gpt-4o-2024-08-06", "gpt-4o-2024-11-20"], "system_fingerprints": ["fp_a", "fp_b"]},
        {"name": "replayed", "model": "", "is_generator": False, "reported_models": [], "system_fingerprints": []},
    ]


def test_key_entries_decode_every_entrys_evidence_as_the_model_does(draft):
    """The entries' evidence texts are decoded in one call: each entry still gets its own list."""
    from keys.models import KeyEntry
    from keys.selectors import key_entries

    KeyEntry.objects.filter(key=draft, external_id="s-0002").update(evidence=[])  # a draft's rows may change
    KeyEntry.objects.filter(key=draft, external_id="s-0003").update(evidence=["D1:1", "D2:7", "ü"])
    rows = key_entries(draft)
    assert [(r.external_id, r.evidence) for r in rows] == [
        (e.external_id, e.evidence) for e in KeyEntry.objects.filter(key=draft).order_by("external_id")
    ]
    assert rows[1].evidence == [] and rows[2].evidence == ["D1:1", "D2:7", "ü"]
    assert rows[0].evidence is not rows[3].evidence
