"""A judge audit ends like every campaign: its human verdicts freeze into a gold key whose records are in
the protocol's shape (question_id, verdict), sealed with the release."""

import json

import pytest

from keys.models import GoldKey
from keys.releases import release_files
from keys.serializers import RECORD_SERIALIZERS, KeyRecordField
from keys.services import key_freeze
from protocols import judged
from tests.judges.conftest import TRUTH, adjudicate

pytestmark = pytest.mark.django_db


def test_the_decided_verdicts_freeze_into_a_key_of_question_ids_and_verdicts(labelled, author):
    # labelled: two annotators' verdicts with two disagreements, the campaign closed
    adjudicate(labelled, author)
    key = key_freeze(campaign=labelled, version="JUDGED-v1", user=author)
    assert GoldKey.objects.get(pk=key.pk).status == "frozen"
    files = release_files(key)
    key_file = next(text for name, text in files.items() if name.endswith(".jsonl") and "key" in name)
    records = [json.loads(line) for line in key_file.decode().splitlines()]
    assert {r["id"]: r["verdict"] for r in records} == TRUTH


def test_a_judged_keys_records_in_the_api_are_the_declared_judged_record(labelled, author, client):
    adjudicate(labelled, author)
    key = key_freeze(campaign=labelled, version="JUDGED-v1", user=author)
    client.force_login(author)
    records = client.get(f"/api/keys/{key.version}/").json()["records"]
    declared = RECORD_SERIALIZERS[judged.SPEC.name]
    assert records and all(set(record) == set(declared().fields) for record in records)
    assert all(declared(data=record).is_valid() for record in records)
    assert KeyRecordField().to_internal_value(records[0]) == records[0]
