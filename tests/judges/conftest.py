"""Judged-answer fixtures: the demo's files (written by us in LongMemEval's shapes) and the local fake
OpenAI-compatible server with its judge behaviours."""

from pathlib import Path

import pytest
from django.conf import settings

from council.fakellm import serve_in_thread
from items.models import ItemSet
from judges.services import judged_import

DEMO = Path(settings.BASE_DIR) / "demo" / "judged"
QUESTIONS, HYPOTHESES, LABELS = DEMO / "questions.json", DEMO / "hypotheses.jsonl", DEMO / "judge_labels.jsonl"
SET = "judged demo"


@pytest.fixture
def fake_llm():
    server = serve_in_thread(port=0)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def judged_set(db) -> ItemSet:
    judged_import(questions=QUESTIONS, hypotheses=HYPOTHESES, labels=LABELS, item_set_name=SET, run="SECRET-RUN-demo")
    return ItemSet.objects.get(name=SET)
