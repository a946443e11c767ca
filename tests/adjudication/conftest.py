"""Fixtures for gold keys: the released TWIST trail as a decided campaign, and small synthetic keys."""

import json

import pytest
from django.db import connection

from adjudication import key_triggers
from adjudication.models import Decision
from annotation.services import campaign_create
from annotation.transfer import answers_import
from council.models import CouncilMember, CouncilVote
from items.models import Item


def _decisions_import(campaign, path, user) -> None:
    """The released decisions as Decision rows. (Uses adjudication.services.decisions_import when the
    adjudication engineer's service is on this branch.)"""
    try:
        from adjudication.services import decisions_import
    except ImportError:
        decisions_import = None
    if decisions_import is not None:
        decisions_import(campaign=campaign, path=path, user=user)
        return
    data = json.loads(path.read_text())["decisions"]
    items = {i.external_id: i for i in Item.objects.filter(item_set=campaign.item_set, external_id__in=list(data))}
    Decision.objects.bulk_create(
        Decision(campaign=campaign, item=items[item_id], action=d["action"], note=d.get("note", ""), decided_by=user)
        for item_id, d in data.items()
    )


def _council_import(campaign, folder) -> None:
    items = {i.external_id: i for i in Item.objects.filter(item_set=campaign.item_set)}
    for path in sorted(folder.glob("twist_v1_answers_*.json")):
        data = json.loads(path.read_text())
        member, _ = CouncilMember.objects.get_or_create(
            name=data["annotator"], defaults={"is_generator": "gpt-4o" in data["annotator"]}
        )
        CouncilVote.objects.bulk_create(
            CouncilVote(campaign=campaign, member=member, item=items[item_id], prompt_version="imported", values=values)
            for item_id, values in data["answers"].items()
        )


@pytest.fixture
def twist_trail(twist_corpus, shared_data, author, annotator_b):
    """The released TWIST v1 trail: 200 candidates, answers A (the author) and B, council, decisions."""
    annotation = shared_data("twist-v1", "annotation")
    campaign = campaign_create(
        slug="twist-v1", item_set=twist_corpus, annotators=[author, annotator_b], seed=20260919, pseudonyms=["A", "B"]
    )
    answers_import(campaign=campaign, path=annotation / "twist_v1_answers_A.json", annotator="A")
    answers_import(campaign=campaign, path=annotation / "twist_v1_answers_B.json", annotator="B")
    _council_import(campaign, annotation / "council")
    _decisions_import(campaign, annotation / "adjudication_decisions.json", author)
    return campaign


@pytest.fixture
def frozen_rows_teardown(db):
    """For transactional tests that freeze keys: flushing the database between tests deletes every
    row, which the immutability triggers rightly refuse — lift them for the teardown only."""
    yield
    key_triggers.uninstall(connection)
    try:
        from adjudication.key_models import Erratum, GoldKey, KeyEntry

        Erratum.objects.all().delete()
        KeyEntry.objects.all().delete()
        GoldKey.objects.filter(parent__isnull=False).delete()
        GoldKey.objects.all().delete()
    finally:
        key_triggers.install(connection)
