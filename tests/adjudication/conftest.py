"""Fixtures for agreement and adjudication: the released TWIST trail as a campaign."""

import pytest

from annotation.services import campaign_create
from annotation.transfer import answers_import


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The personas' passwords are hashed at creation; the production hasher costs ~1 s per user."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def twist_trail(twist_corpus, annotator_a, author, shared_data):
    """The 200 v1 candidates in a two-annotator campaign holding the released answers A and B
    (A is the author, who annotated; B the external annotator)."""
    campaign = campaign_create(
        slug="twist-v1", item_set=twist_corpus, annotators=[author, annotator_a], per_item=2, seed=20260919
    )
    folder = shared_data("twist-v1", "annotation")
    answers_import(campaign=campaign, path=folder / "twist_v1_answers_A.json", annotator="A")
    answers_import(campaign=campaign, path=folder / "twist_v1_answers_B.json", annotator="B")
    return campaign


def make_twist_campaign(annotators, answers: dict, *, slug="small", seed=7, gold=None):
    """A TWIST campaign over synthetic items. `answers` maps an item id to the two annotators' values
    ({} = not answered); `gold` maps an item id to its gold type (default contradicting)."""
    from annotation.models import Assignment
    from annotation.services import answer_save
    from items.models import Item, ItemKind
    from items.parsing import batch_of
    from items.services import item_set_get_or_create

    item_set = item_set_get_or_create(name=f"synthetic {slug}", kind=ItemKind.TWIST)
    gold = gold or {}
    Item.objects.bulk_create(
        Item(
            item_set=item_set,
            kind=ItemKind.TWIST,
            external_id=item_id,
            recipient="Caroline",
            draft=f"Draft {item_id}",
            gold_type=gold.get(item_id, "contradicting"),
            family="B2 negated-commitment",
            contradicted_quote="the quote",
            rationale="the generator's reason",
            history_turns=500,
            batch=batch_of(item_id),
        )
        for item_id in answers
    )
    campaign = campaign_create(slug=slug, item_set=item_set, annotators=list(annotators), per_item=2, seed=seed)
    assignments = {
        (a.enrollment.pseudonym, a.item.external_id): a
        for a in Assignment.objects.filter(enrollment__campaign=campaign).select_related("enrollment__campaign", "item")
    }
    for item_id, pair in answers.items():
        for pseudonym, values in zip(("A", "B"), pair, strict=True):
            if values:
                answer_save(assignment=assignments[(pseudonym, item_id)], values=values, source="import")
    return campaign


AGREE = ({"q1": "contradicts", "q2": "yes", "q2quote": "yes"}, {"q1": "contradicts", "q2": "yes", "q2quote": "yes"})
DISAGREE = ({"q1": "contradicts", "q1note": "left note", "q2": "yes", "q2quote": "yes"}, {"q1": "consistent", "q1note": "right note", "q2": "yes", "q2quote": "yes"})
NOT_SELF_CONTAINED = ({"q1": "consistent", "q2": "no", "q2quote": "yes"}, {"q1": "contradicts", "q2": "no", "q2quote": "no"})


@pytest.fixture
def small_campaign(annotator_a, annotator_b):
    """Five synthetic contradicting items: two answered alike and right, three queued."""
    return make_twist_campaign(
        [annotator_a, annotator_b],
        {
            "conv-1:v1b1": AGREE,
            "conv-1:v1b2": AGREE,
            "conv-1:v1b3": DISAGREE,
            "conv-1:v1c4": NOT_SELF_CONTAINED,
            "conv-1:v1b5": ({"q1": "contradicts"}, {}),
        },
    )
