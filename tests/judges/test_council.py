"""Council members can judge a judged-answer campaign: each is asked the type's rubric with the three
texts an annotator reads (never the imported judge's label, model or run), and is compared with the
human gold on the agreement page like Lapse's judge."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from adjudication.agreement import campaign_agreement
from council import execution
from council.models import CouncilBatch, CouncilRun, CouncilVote
from council.prompts import build_steps
from council.services import council_member_add, prompt_version_default
from items.models import Item
from judges.selectors import judge_audit
from protocols import judged
from tests.judges.conftest import adjudicate

pytestmark = pytest.mark.django_db


def test_the_council_prompt_is_the_rubric_and_the_blind_texts_only(judged_set):
    item = Item.objects.get(item_set=judged_set, external_id="demo-ku-04_abs")
    prompt = prompt_version_default(protocol="judged")
    (step,) = build_steps(prompt, "judged", judged.SPEC.blind_view(item), [], None)
    assert step.user.startswith(judged.ABSTENTION_RUBRIC + "\n\nQuestion: What is my new car's license plate?")
    assert "\n\nExplanation: The plate was never mentioned" in step.user
    assert step.keys == ("verdict", "notes")
    for hidden in ("demo-ku-04_abs", "demo-judge-gpt", "SECRET-RUN-demo", "2024/08/06"):
        assert hidden not in step.user


def test_a_council_judge_votes_verdicts_and_is_compared_with_the_gold_once_decided(labelled, author, fake_llm):
    member = council_member_add(name="council-judge", base_url=fake_llm.base_url, model="fake-judge-strict",
                                requests_per_minute=0)[0]
    run = CouncilRun.objects.create(campaign=labelled, prompt_version=prompt_version_default(protocol="judged"),
                                    status="running", total_items=14, members_count=1)
    run.members.set([member])
    items = list(Item.objects.filter(item_set=labelled.item_set))
    batch = CouncilBatch.objects.create(run=run, member=member, item_ids=[i.pk for i in items], sent_at=timezone.now())
    execution.batch_work(batch_id=batch.pk, holder="test")
    votes = dict(CouncilVote.objects.filter(member=member).values_list("item__external_id", "values__verdict"))
    # The strict fake accepts only the calibration's gold frame: every real hypothesis is "incorrect".
    assert votes == {i.external_id: "incorrect" for i in items}
    assert campaign_agreement(labelled)["judge_gold"] is None  # sealed: two disagreements undecided
    adjudicate(labelled, author)
    judge = campaign_agreement(labelled)["judge_gold"]
    assert judge["judge"] == "council-judge" and judge["items"] == 14 and judge["five_way"]["agree"] == 6
    audit = judge_audit(labelled)
    assert [j["judge_model"] for j in audit["judges"]] == ["council-judge (council)", "demo-judge-gpt"]
    assert audit["rows"][0]["human_judge"]["council-judge (council)"]["agree"] == 6
    client = Client()
    client.force_login(author)
    page = client.get(f"/adjudicate/{labelled.slug}/agreement/").content.decode()
    assert "council-judge" in page and 'data-testid="council-judge-kappa"' in page
    out = StringIO()
    call_command("agreement", labelled.slug, stdout=out)
    assert "council judge council-judge vs gold: kappa" in out.getvalue()
