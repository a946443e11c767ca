"""Judged-answer fixtures: the demo's files (written by us in LongMemEval's shapes) and the local fake
OpenAI-compatible server with its judge behaviours."""

from pathlib import Path

import pytest
from django.conf import settings

from adjudication.services import decision_save
from annotation.services import campaign_create
from annotation.transfer import answers_load
from items.models import Item, ItemSet
from judges.services import judged_import
from tests.conftest import close_campaign

DEMO = Path(settings.BASE_DIR) / "demo" / "judged"
QUESTIONS, HYPOTHESES, LABELS = DEMO / "questions.json", DEMO / "hypotheses.jsonl", DEMO / "judge_labels.jsonl"
SET = "judged demo"



@pytest.fixture
def judged_set(db) -> ItemSet:
    judged_import(questions=QUESTIONS, hypotheses=HYPOTHESES, labels=LABELS, item_set_name=SET, run="SECRET-RUN-demo")
    return ItemSet.objects.get(name=SET)


# What a careful human says of each demo answer (the demo judge gets three wrong: a hedge, a stale
# answer and an invented licence plate).
TRUTH = {
    "demo-ssu-01": "correct", "demo-ssu-02": "incorrect", "demo-ssa-01": "correct", "demo-ssa-02": "incorrect",
    "demo-ssp-01": "correct", "demo-ms-01": "correct", "demo-ms-02": "incorrect", "demo-ku-01": "correct",
    "demo-ku-02": "incorrect", "demo-ku-03": "correct", "demo-tr-01": "correct", "demo-tr-02": "incorrect",
    "demo-ssu-03_abs": "correct", "demo-ku-04_abs": "incorrect",
}
FLIPPED = ("demo-ssa-01", "demo-ku-01")
FLIP = {"correct": "incorrect", "incorrect": "correct"}


@pytest.fixture
def labelled(judged_set, annotator_a, annotator_b, author):
    campaign = campaign_create(slug="jd", item_set=judged_set, annotators=[annotator_a, annotator_b], seed=5)
    answers_load(campaign=campaign, annotator="A", answers={q: {"verdict": v} for q, v in TRUTH.items()})
    answers_load(campaign=campaign, annotator="B", answers={
        q: {"verdict": FLIP[v] if q in FLIPPED else v} for q, v in TRUTH.items()
    })
    close_campaign(campaign, author)
    return campaign


def adjudicate(campaign, author):
    for question_id in FLIPPED:
        item = Item.objects.get(item_set=campaign.item_set, external_id=question_id)
        decision_save(campaign=campaign, item=item, action="relabel", new_gold=TRUTH[question_id], note="by the rubric",
                      user=author)
