"""The answer API under hostile bodies: a JSON 400 naming the field, nothing saved; notes and time on item
have limits."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import AnswerRevision
from annotation.services import MAX_TIME_PER_SAVE_MS
from goldkey.lib.jsonsafe import MAX_JSON_DEPTH
from protocols.base import MAX_NOTE_CHARS
from tests.annotation.conftest import enrollment_of


@pytest.fixture
def answer_url(twist_campaign, annotator_a):
    pk = enrollment_of(twist_campaign, annotator_a).assignments.order_by("position").first().pk
    return f"/api/annotation/assignments/{pk}/answer/"


@pytest.fixture
def api(annotator_a):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator_a).key}")
    return client


def _post(api, url, body: str):
    return api.post(url, data=body, content_type="application/json")


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ('{"values": {"q1": "consistent"}, "time_on_item_ms": NaN}', "JSON parse error - NaN is not a JSON number"),
        ('{"values": ' + "[" * 100_000 + "]" * 100_000 + "}", f"JSON parse error - nested more than {MAX_JSON_DEPTH}"),
        ('{"values": {"q1": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["a"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}', "values.q1[0]"),
        ('{"values": {"q1note": "' + "n" * 100_001 + '"}}', "values.q1note: a text of 100,001 characters"),
    ],
)
def test_the_answer_api_answers_hostile_bodies_with_a_json_400(api, answer_url, body, detail):
    response = _post(api, answer_url, body)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith(detail)
    assert AnswerRevision.objects.count() == 0


def test_a_note_over_the_limit_is_refused_naming_the_field(api, answer_url):
    response = api.post(answer_url, {"values": {"q1note": "n" * (MAX_NOTE_CHARS + 1)}}, format="json")
    assert response.status_code == 400
    assert "field 'q1note': 10,001 characters; a note holds at most 10,000" in response.json()["detail"]
    assert AnswerRevision.objects.count() == 0


def test_a_note_at_the_limit_is_saved(api, answer_url):
    response = api.post(answer_url, {"values": {"q1note": "n" * MAX_NOTE_CHARS}}, format="json")
    assert response.status_code == 200


def test_one_save_adds_at_most_the_per_save_time(api, answer_url, twist_campaign, annotator_a):
    api.post(answer_url, {"values": {"q1": "consistent"}, "time_on_item_ms": 86_400_000}, format="json")
    api.post(answer_url, {"values": {}, "time_on_item_ms": 5_000}, format="json")
    answer = enrollment_of(twist_campaign, annotator_a).assignments.order_by("position").first().answer
    assert answer.time_on_item_ms == MAX_TIME_PER_SAVE_MS + 5_000
