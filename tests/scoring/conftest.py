"""The released TWIST trail frozen into TWIST-v1.0 (and v1.1 after a drop erratum), once per module.

The key is not read from a file: the candidates, both annotators' answers, the council and the
adjudicator's decisions are imported and frozen by the key service, as the key tests do. The import
costs ~20 s, so a module shares it inside one transaction rolled back at the end; each test's own
writes (runs) are rolled back after it, as usual.
"""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from adjudication.services import decisions_import
from annotation.services import campaign_close, campaign_create
from annotation.transfer import answers_import
from goldkey import roles
from items.models import ItemSet
from items.services import corpus_import_locomo, items_import_twist
from keys.services import erratum_decide, erratum_file, key_derive, key_freeze, key_publish
from tests.adjudication.conftest import _council_import
from tests.conftest import require_shared_data
from tests.keys.conftest import *  # noqa: F403  (runs are scored against the key tests' keys: frozen_key, draft)

RESULTS = ("twist-v1", "results", "track_b_results_v1.0.json")
DROPPED_IN_V11 = "conv-26:v1b1"  # a contradicting item the deployed system caught with gold evidence


def _persona(username: str, *groups: str):
    # No password: these users only sign the key, and hashing one costs about a second.
    user = get_user_model().objects.create(username=username)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture(scope="module")
def released_keys(django_db_setup, django_db_blocker):
    """{"TWIST-v1.0": GoldKey, "TWIST-v1.1": GoldKey, "author": the user who froze them}."""
    data = require_shared_data()
    with django_db_blocker.unblock(), transaction.atomic():
        corpus_import_locomo(path=data / "locomo10")
        items_import_twist(
            path=data / "twist-v1" / "track_b_items_v1_candidates.jsonl",
            item_set_name="TWIST Track B v1 candidates",
            rejects_path=data / "twist-v1" / "track_b_v1_generation_rejects.jsonl",
        )
        # Not the shared personas' names: a test in the module may still ask for those fixtures.
        author = _persona("trail_author", roles.AUTHOR, roles.ANNOTATOR)
        annotator = _persona("trail_annotator", roles.ANNOTATOR)
        campaign = campaign_create(
            slug="twist-v1", item_set=ItemSet.objects.get(name="TWIST Track B v1 candidates"),
            annotators=[author, annotator], per_item=2, seed=20260919,
        )
        folder = data / "twist-v1" / "annotation"
        answers_import(campaign=campaign, path=folder / "twist_v1_answers_A.json", annotator="A")
        answers_import(campaign=campaign, path=folder / "twist_v1_answers_B.json", annotator="B")
        campaign_close(campaign=campaign, user=author)  # decisions are taken on a closed campaign
        _council_import(campaign, folder / "council")
        decisions_import(campaign=campaign, path=folder / "adjudication_decisions.json", user=author)
        v10 = key_freeze(campaign=campaign, version="TWIST-v1.0", user=author)
        erratum = erratum_file(key=v10, item_external_id=DROPPED_IN_V11, kind="drop", user=author,
                               description="scoring test: one item dropped by erratum")
        erratum_decide(erratum=erratum, accept=True, note="accepted for the test", user=author)
        v11 = key_derive(parent=v10, version="TWIST-v1.1", user=author)
        for key in (v10, v11):  # released keys: public
            key_publish(key=key, user=author)
        yield {"TWIST-v1.0": v10, "TWIST-v1.1": v11, "author": author}
        transaction.set_rollback(True)

from tests.council.conftest import fake_llm  # noqa: E402,F401 (the local OpenAI-compatible server, for Track C runs)
