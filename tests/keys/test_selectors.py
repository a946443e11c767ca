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
