"""Fixtures for agreement and adjudication: the released TWIST trail as a campaign."""

import pytest

from annotation.services import campaign_create
from annotation.transfer import answers_import


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
