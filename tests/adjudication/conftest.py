"""Fixtures for agreement, adjudication and gold keys: the released TWIST trail as a campaign (decided\nwith the council and the released decisions for keys), and small synthetic keys."""


import random

import pytest
from django.db import connection

from adjudication import selectors
from adjudication.models import Decision
from adjudication.services import decisions_import
from annotation.models import Answer, Assignment, Campaign
from annotation.services import campaign_close, campaign_create
from annotation.transfer import answers_import
from council.services import council_votes_import
from goldkey import roles
from items.models import Item
from items.services import item_set_get_or_create
from keys import triggers as key_triggers
from tests.conftest import _user, close_campaign


def _council_import(campaign, folder) -> None:
    """The released council answer files as votes, through the council's own importer; GPT-4o generated
    the items (TWIST paper), so it is marked as the generator."""
    for path in sorted(folder.glob("twist_v1_answers_*.json")):
        member = path.stem.removeprefix("twist_v1_answers_")
        council_votes_import(campaign=campaign, path=path, member_name=member, is_generator="gpt-4o" in member)


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
    campaign_close(campaign=campaign, user=author)
    return campaign


@pytest.fixture
def twist_decided(twist_trail, author, shared_data):
    """The released trail with the council's votes and the author's released decisions."""
    folder = shared_data("twist-v1", "annotation")
    _council_import(twist_trail, folder / "council")
    decisions_import(campaign=twist_trail, path=folder / "adjudication_decisions.json", user=author)
    return twist_trail


@pytest.fixture
def frozen_rows_teardown(db):
    """For transactional tests that freeze keys: flushing the database between tests deletes every
    row, which the immutability triggers rightly refuse — lift them for the teardown only."""
    yield
    key_triggers.uninstall(connection)
    try:
        from keys.models import Erratum, GoldKey, KeyEntry, KeyPublication, Release, ReleaseFile

        ReleaseFile.objects.all().delete()
        Release.objects.all().delete()
        Erratum.objects.all().delete()
        KeyEntry.objects.all().delete()
        KeyPublication.objects.all().delete()
        GoldKey.objects.filter(parent__isnull=False).delete()
        GoldKey.objects.all().delete()
        # Unseal the campaigns too, so that the flush can delete their answers and decisions.
        Campaign.objects.filter(status=Campaign.Status.FROZEN).update(status=Campaign.Status.CLOSED)
    finally:
        key_triggers.install(connection)


TYPES = ["contradicting", "aligned", "hard_negative"]
VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}


def make_campaign(*, slug: str, n: int, annotators: list, disagree: tuple[int, ...] = ()):
    """A small synthetic TWIST campaign: item i has type TYPES[i % 3]; both annotators answer with
    the gold verdict except on the `disagree` indexes, where B says cannot-tell (a queued item)."""
    from annotation.models import Assignment
    from annotation.services import answer_save
    from items.models import Conversation, Evidence, Session, Turn
    from items.services import item_set_get_or_create

    item_set = item_set_get_or_create(name=f"synthetic {slug}", kind="twist")
    # One conversation in which Ana said the quoted sentence, so that every item cites a real turn of its
    # recipient and the structural gates (which a derived key must pass) hold.
    conversation = Conversation.objects.create(external_id=f"conv-{slug}", speaker_a="Ana", speaker_b="Bo",
                                               license="cc-by-4.0")  # written for the tests, not LoCoMo
    session = Session.objects.create(conversation=conversation, number=1, date_time_raw="1:00 pm on 1 May, 2023")
    said = Turn.objects.create(conversation=conversation, session=session, dia_id="D1:1", speaker="Ana",
                               text="Yes, she said so. Honestly, she really said so.", order=0)
    items = Item.objects.bulk_create(
        Item(
            item_set=item_set, kind="twist", external_id=f"s-{i:04d}", recipient="Ana", draft=f"Draft ünïcode {i}",
            gold_label=TYPES[i % 3], family=f"F{i % 3}", contradicted_quote="she said so" if i % 3 == 0 else "",
            history_turns=400 + i, conversation=conversation,
        )
        for i in range(n)
    )
    Evidence.objects.bulk_create(Evidence(item=item, turn=said, position=0) for item in items)
    campaign = campaign_create(slug=slug, item_set=item_set, annotators=annotators, seed=7, pseudonyms=["A", "B"])
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment__campaign"):
        index = int(assignment.item.external_id[2:])
        q1 = VERDICT[assignment.item.gold_label]
        if index in disagree and assignment.enrollment.pseudonym == "B":
            q1 = "cannot-tell"
        answer_save(assignment=assignment, values={"q1": q1}, source="import")
    close_campaign(campaign)
    return campaign


@pytest.fixture
def key_campaign(author, annotator_b):
    """9 synthetic items, items 1 and 4 queued (B disagrees), not yet decided."""
    return make_campaign(slug="small", n=9, annotators=[author, annotator_b], disagree=(1, 4))


def decide(campaign, external_id: str, action: str, user, new_gold: str = "") -> Decision:
    item = Item.objects.get(item_set=campaign.item_set, external_id=external_id)
    return Decision.objects.create(campaign=campaign, item=item, action=action, new_gold=new_gold, decided_by=user)


@pytest.fixture
def frozen_key(key_campaign, author):
    """TWIST-test-v1.0 frozen from the small campaign and published: s-0001 dropped, s-0004 kept after
    adjudication (`embargoed_key`: the same, not published)."""
    from keys.services import key_publish

    key = _freeze_small(key_campaign, author)
    key_publish(key=key, user=author)
    return key


@pytest.fixture
def embargoed_key(key_campaign, author):
    """TWIST-test-v1.0 frozen from the small campaign, not yet published."""
    return _freeze_small(key_campaign, author)


def _freeze_small(campaign, author):
    from keys.services import key_freeze

    decide(campaign, "s-0001", "drop", author)
    decide(campaign, "s-0004", "keep", author)
    return key_freeze(campaign=campaign, version="TWIST-test-v1.0", user=author)


def make_twist_campaign(annotators, answers: dict, *, slug="small", seed=7, gold=None, close=True):
    """A TWIST campaign over synthetic items. `answers` maps an item id to the two annotators' values
    ({} = not answered); `gold` maps an item id to its gold type (default contradicting)."""
    from annotation.models import Answer, Assignment
    from items.models import Item
    from items.parsing import batch_of
    from items.services import item_set_get_or_create

    item_set = item_set_get_or_create(name=f"synthetic {slug}", kind="twist")
    gold = gold or {}
    Item.objects.bulk_create(
        Item(
            item_set=item_set,
            kind="twist",
            external_id=item_id,
            recipient="Caroline",
            draft=f"Draft {item_id}",
            gold_label=gold.get(item_id, "contradicting"),
            family="B2 negated-commitment",
            contradicted_quote="the quote",
            rationale="the generator's reason",
            history_turns=500,
            batch=batch_of(item_id),
        )
        for item_id in answers
    )
    campaign = campaign_create(slug=slug, item_set=item_set, annotators=list(annotators), per_item=2, seed=seed)
    # Answers are written directly: these fixtures set up what adjudication reads, and the annotation
    # flow's own rules (phase locks, order) are tested with the annotation app.
    assignments = {
        (a.enrollment.pseudonym, a.item.external_id): a
        for a in Assignment.objects.filter(enrollment__campaign=campaign).select_related("enrollment", "item")
    }
    Answer.objects.bulk_create(
        Answer(assignment=assignments[(pseudonym, item_id)], values=values, revision=1)
        for item_id, pair in answers.items()
        for pseudonym, values in zip(("A", "B"), pair, strict=True)
        if values
    )
    if close:  # annotation over: its disagreements can be decided
        close_campaign(campaign)
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


SKILL = {"A": 0.9, "B": 0.75, "C": 0.55, "D": 0.8}  # how often each annotator gives the gold verdict


def rated_campaign(annotators, *, per_item: int, n: int = 36, slug: str = "three", close: bool = True):
    """A TWIST campaign whose answers follow each annotator's SKILL (seeded per annotator and item), its
    queue decided: every queued item kept, except the first, dropped."""
    item_set = item_set_get_or_create(name=f"raters {slug}", kind="twist")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="twist", external_id=f"conv-7:v1b{i:02d}", gold_label=TYPES[i % 3],
             recipient="Ana", draft=f"Draft {i}", history_turns=500, family="F")
        for i in range(n)
    )
    campaign = campaign_create(slug=slug, item_set=item_set, annotators=annotators, per_item=per_item, seed=11)
    answers = []
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment"):
        pseudonym = assignment.enrollment.pseudonym
        draw = random.Random(f"{pseudonym}:{assignment.item.external_id}")
        gold = VERDICT[assignment.item.gold_label]
        q1 = gold if draw.random() < SKILL[pseudonym] else draw.choice(["contradicts", "consistent", "cannot-tell"])
        answers.append(Answer(assignment=assignment, values={"q1": q1}, revision=1))
    Answer.objects.bulk_create(answers)
    if close:
        close_campaign(campaign)
        undecided = [e.item.external_id for e in selectors.campaign_queue(campaign) if e.needs_decision]
        for n_, external_id in enumerate(sorted(undecided)):
            decide(campaign, external_id, "drop" if n_ == 0 else "keep", None)
    return campaign


@pytest.fixture
def annotator_c(db):
    """A third annotator, for campaigns with more than two."""
    return _user("ann_c", roles.ANNOTATOR)
