"""The released TWIST-v1.0 key and its bundle, byte for byte: the key bytes are the published artifact,
so their SHA-256 is pinned here, and so is every file of the bundle as the code wrote it before the key
hash moved to json.dumps and the bundle to the standard library's indented writer."""

import hashlib
import json
from datetime import UTC, datetime
from unittest import mock

import pytest

from keys import bundle
from keys.canonical import CANONICAL_OPTIONS, sha256_hex
from keys.releases import release_files
from keys.selectors import bundle_data, key_canonical_bytes
from keys.services import key_freeze

pytestmark = [pytest.mark.django_db, pytest.mark.realdata]

# SHA-256 of key.jsonl of the published TWIST-v1.0 (161 entries).
TWIST_V1_0_SHA256 = "b97602452c3b397a410cf30cbe88f377dea919c50d5fac1fdf618e21b0ce0f11"
CLOCK = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
# The bundle of TWIST-v1.0 frozen from the released trail under CLOCK, file by file.
BUNDLE_SHA256 = {
    "CHANGELOG.md": "cc467b238aff8285632459ed43041d952e930f14fb64be948c24b307b698d618",
    # stats.json gained "parent_sha256" (the hash chain over the key line; null for a first version), then
    # the council members' reported models, the count of decisions whose adjudicator is unknown and where
    # each annotator's order came from; the datasheet says the imported council votes do not record the
    # answering model and that the imported answers' order is not recorded.
    # hf/README.md's YAML header is now built as data (licences of the items and of LoCoMo, languages,
    # creators, source datasets, tags) with a licence and citation section; croissant.json, CITATION.cff
    # and the trail's tables are new. MANIFEST.sha256 lists them all: those changed on purpose, no other
    # file did (croissant.json lists the datasheet's and stats.json's hashes, so it follows them).
    "MANIFEST.sha256": "948312fa55a03aa92ec7023c26df39e42e538da7cd31eef8a57c318b5832bf61",
    "CITATION.cff": "43b47ec72b49b840a7af407c1ef4874162b39ed85d75fee3809dd1da5875cfbd",
    "croissant.json": "5a8902b80aa5e86ee0799aac1f6c7fe0e0b247b710784b07a07489d59a2a9ef9",
    "annotation/tables/answers.jsonl": "c688454cb58b2ca7a30b3f9e3a7ef582b8cfa1183c4d6a96ccf5c08b84ad70fd",
    "annotation/tables/council_votes.jsonl": "cf551fae51e28e232972fa4d8cf7de5935af5b9633c8308aa9d43a8420e89cf1",
    "annotation/tables/decisions.jsonl": "a315aa514d1822eaecd39105ccc97574e446592b08d662943c45fc511f28ed7d",
    "annotation/adjudication_decisions.json": "61a0f634431bbc363cdfb0a06c2e3436472e04f94cf873fa2d3e2b725924123a",
    "annotation/adjudication_queue.jsonl": "2c37c813138ee12f412e98e2b03ac7e4cd2c1ea99a8398be0711c7f4f5cf1920",
    "annotation/answers_A.json": "843a31fd9d55060ddb658c31a677a244728f9c0b9ad36910b7631e0fbc97566d",
    "annotation/answers_B.json": "5a109f26d6ad6cc80500b453e1f22273411c9229265380975f9da6fe33485133",
    "annotation/council/anthropic-claude-sonnet-4-6.json": "f17491f7a38dad80e3983eaa5fd8d1574a8e805461d5d017cd7b4eb7674bf131",
    "annotation/council/gemini-gemini-3.5-flash.json": "7b14b86f5be84b9d3f8e288e6251e9d09952084cab32728970ca241f7f97569c",
    "annotation/council/openai-gpt-4o.json": "994cecc2cadc22d5c7ab28ad1ab46f1fba77c5d4d07813082c3ec301fbaa0bee",
    "candidates.jsonl": "c9c37dace794710eaa251acf0e5780ef7a25b7d5996d114f0694c9160c140554",
    "datasheet.md": "9767c801a41ca5bd32b02124db51ef9e475c788403ed44dcabc233611330a389",
    "errata.jsonl": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "generation_rejects.jsonl": "2816e34dd4132a08c0af21c66e5a25e9636bf58f7c8fd9eb7ba2aca7625e25b5",
    "hf/README.md": "d2a74fed290e6e1c054fe245473f4d894da68b9dbeb6cd208e656dcf85480bc8",
    "hf/test.jsonl": "f8294bd22808c8ac877944b56ee764ca1d89bef944f0dd146cfa1fa8e0083921",
    "key.jsonl": TWIST_V1_0_SHA256,
    # stats.json's agreement figures are now summed in one order on every machine (goldkey/lib/statistics.py,
    # _REPRODUCIBLE): their last bits had followed the BLAS kernel of the CPU that froze the key.
    "stats.json": "8a78535aeae5425506b8e0c59f1044864b93198dd6d08aea23b27ef866454385",
}
# Those are the files of release format 2, which a key frozen before format 3 holds (no leakage audit in its
# manifest). Format 3 adds leakage.json, the audit in stats.json's manifest, the datasheet and the card, and
# croissant.json's descriptions of the content fields from the TWIST content schema; MANIFEST.sha256 lists
# the new hashes. No other file moved.
BUNDLE_SHA256_FORMAT_2 = BUNDLE_SHA256
BUNDLE_SHA256 = {
    **BUNDLE_SHA256_FORMAT_2,
    "MANIFEST.sha256": "4fcc112cfe0eab86b8296fcdb446d08b230c30192341961c5e396f2f4c030202",
    "croissant.json": "bfbe6fc19ea16beeb5de3e8ff75f5ec9040adcaa7bc4dd812d45c0b1d07d13b5",
    "datasheet.md": "008afa9474ccfe6ba7bdadf4ad030306a8225bb7bb5fbab0fdbbb97a408c0fd8",
    "hf/README.md": "f5a614b96310b8344e764a22c4ad4fb2432b55830dfc24504500a68107abfd8f",
    "leakage.json": "f75386810663272554906b9781be08ac3f95e5eccad60c34c2f176b4224d92c0",
    "stats.json": "99c48f401f0fc4a9e81aa133c1168ca54d31bf803588f72bea909886b3f725db",
}


@pytest.fixture
def pinned_clock():
    """Requested before the trail fixtures, so every recorded time (answers, decisions, freezing) is CLOCK."""
    with mock.patch("django.utils.timezone.now", return_value=CLOCK):
        yield


def test_the_released_key_has_the_published_bytes_and_hash(pinned_clock, twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    data = key_canonical_bytes(key)
    assert key.sha256 == sha256_hex(data) == TWIST_V1_0_SHA256
    # The bytes are json.dumps with the canonical options, one record a line, sorted by id.
    records = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert [r["id"] for r in records] == sorted(r["id"] for r in records) and len(records) == 161
    assert data == "".join(json.dumps(r, **CANONICAL_OPTIONS) + "\n" for r in records).encode("utf-8")


def test_the_released_bundle_is_byte_for_byte_what_it_was(pinned_clock, twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    files = bundle.render(bundle_data(key))
    assert {path: hashlib.sha256(content).hexdigest() for path, content in files.items()} == BUNDLE_SHA256
    # The release the freeze sealed from its own data (entry records, key bytes, evidence turns) is the
    # same bytes as the one rendered from the rows.
    assert release_files(key) == files
    # The same key as it was frozen before the audit shipped (none in its manifest), in format 2: the
    # files it was sealed with then, byte for byte.
    data = bundle_data(key)
    data["key"] = {**data["key"], "manifest": {k: v for k, v in key.manifest.items() if k != "leakage"}}
    before = bundle.render(data, fmt=2)
    assert {path: hashlib.sha256(content).hexdigest() for path, content in before.items()} == BUNDLE_SHA256_FORMAT_2
