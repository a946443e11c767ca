"""A frozen Track C key over the demo chains, a judge admissible on its decoys, and a run's answers file."""

import json
from pathlib import Path

import pytest

from adjudication.selectors import campaign_snapshot
from adjudication.services import decision_save
from annotation.services import answer_save, campaign_close, campaign_create, enrollment_submit
from council.services import council_member_add
from items.models import Item
from judges.services import judge_calibration_run
from keys.services import key_freeze


def answers_file(tmp_path, answers: dict[str, str]) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"item_id": i, "answer": a}) + "\n" for i, a in answers.items()))
    return path


@pytest.fixture
def chain_key(demo_chains, annotator_a, annotator_b, author):
    item_set = demo_chains
    campaign = campaign_create(slug="chains", item_set=item_set, annotators=[annotator_a, annotator_b], seed=2)
    for enrollment in campaign.enrollments.all():
        for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
            answer_save(assignment=assignment, values={"q1": assignment.item.gold_label, "q2": "yes", "q3": "yes"})
        enrollment_submit(enrollment=enrollment)
    campaign_close(campaign=campaign, user=author)
    for entry in campaign_snapshot(campaign).undecided:
        decision_save(campaign=campaign, item=Item.objects.get(pk=entry.item.id), action="keep", user=author)
    return key_freeze(campaign=campaign, version="tc-v1", user=author)


@pytest.fixture
def strict_judge(chain_key, fake_llm, author):
    member, _ = council_member_add(name="strict", base_url=fake_llm.base_url, model="fake-judge-strict", timeout_seconds=5)
    judge_calibration_run(item_set=chain_key.campaign.item_set, member=member, seed=1, user=author)
    return member
