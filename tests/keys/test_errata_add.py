"""A later version may add items kept in another campaign's frozen key, with their trail in its release."""

import json

import pytest

from goldkey.errors import ApplicationError
from keys.models import KeyEntry, Provenance
from keys.releases import release_files
from keys.services import erratum_decide, erratum_file, key_derive, key_freeze
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def later_key(author, annotator_b):
    campaign = make_campaign(slug="later", n=12, annotators=[author, annotator_b])
    return key_freeze(campaign=campaign, version="TWIST-later-v1.0", user=author)


def _add(key, item, source, author):
    erratum = erratum_file(key=key, item_external_id=item, kind="add", value=source, description="style-matched draft", user=author)
    return erratum_decide(erratum=erratum, accept=True, note="yes", user=author)


def test_an_item_of_another_frozen_key_is_added_with_its_trail(frozen_key, later_key, author):
    _add(frozen_key, "s-0011", later_key.version, author)
    derived = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    entry = KeyEntry.objects.get(key=derived, external_id="s-0011")
    source = KeyEntry.objects.get(key=later_key, external_id="s-0011")
    assert (entry.item_id, entry.gold, entry.provenance) == (source.item_id, source.gold, Provenance.ADDED_BY_ERRATUM)
    files = release_files(derived)
    trail = json.loads(files["annotation/added/later/adjudication_decisions.json"])
    assert trail["source_key"] == "TWIST-later-v1.0"
    answers = json.loads(files["annotation/added/later/answers_A.json"])
    assert set(answers["answers"]) == {"s-0011"}
    [candidate] = [json.loads(line) for line in files["annotation/added/later/candidates.jsonl"].splitlines()]
    assert candidate["id"] == "s-0011" and candidate["draft"] == "Draft ünïcode 11"
    test_split = {json.loads(line)["id"]: json.loads(line) for line in files["hf/test.jsonl"].splitlines()}
    assert test_split["s-0011"]["draft"] == "Draft ünïcode 11"
    assert "annotation/added/later/answers_A.json" in files["MANIFEST.sha256"].decode()


def test_what_cannot_be_added_is_refused_naming_why(frozen_key, later_key, author):
    with pytest.raises(ApplicationError, match="the frozen key version to take"):
        erratum_file(key=frozen_key, item_external_id="s-0011", kind="add", value="nope", description="d", user=author)
    with pytest.raises(ApplicationError, match="is not an item of TWIST-later-v1.0"):
        erratum_file(key=frozen_key, item_external_id="s-0099", kind="add", value=later_key.version, description="d", user=author)
    with pytest.raises(ApplicationError, match="already in TWIST-test-v1.0"):
        erratum_file(key=frozen_key, item_external_id="s-0002", kind="add", value=later_key.version, description="d", user=author)
    with pytest.raises(ApplicationError, match="own campaign"):
        erratum_file(key=later_key, item_external_id="s-0011", kind="add", value=later_key.version, description="d", user=author)
