"""The annotator API serves a judged answer as the page does: question, gold answer, hypothesis, type and the
rubric the judge gets, the question's date; never the judge's label, model, run or the question_id."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Assignment
from annotation.services import campaign_create
from items.models import Item
from protocols import judged

pytestmark = pytest.mark.django_db


def test_the_api_item_carries_the_rubric_of_its_type_and_nothing_hidden(judged_set, annotator_a, annotator_b):
    campaign = campaign_create(slug="jd-api", item_set=judged_set, annotators=[annotator_a, annotator_b], seed=5)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=annotator_a)[0].key}")
    assignments = Assignment.objects.filter(enrollment__campaign=campaign, enrollment__annotator=annotator_a)
    for assignment in assignments.select_related("item"):
        response = client.get(f"/api/annotation/assignments/{assignment.pk}/")
        assert response.status_code == 200
        shown = response.json()["item"]
        question_type, abstention = judged.split_family(assignment.item.family)
        assert shown["rubric"] == judged.rubric_for(question_type, abstention) and shown["rubric"]
        assert shown["question_type"] == question_type and shown["abstention"] == abstention
        body = json.dumps(response.json())
        hidden = Item.objects.get(pk=assignment.item_id).hidden
        assert assignment.item.external_id not in body
        assert hidden["run"] not in body
        # The question's date is the question's own, shown (a temporal question is answered from it).
        assert shown["question_date"] == assignment.item.context.content["question_date"] != ""
        assert "judge" not in body  # no label, no model, not even the word
        if hidden.get("judge"):
            assert hidden["judge"]["judge_model"] not in body


def test_the_agreement_api_serves_a_judged_campaign_as_the_command_prints_it(client, labelled, author):
    out = StringIO()
    call_command("agreement", labelled.slug, "--json", stdout=out)
    client.force_login(author)
    response = client.get(f"/api/adjudication/{labelled.slug}/agreement/")
    assert response.status_code == 200
    assert response.json() == json.loads(out.getvalue())
    assert response.json()["protocol"] == judged.SPEC.name
