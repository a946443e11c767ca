"""PATCH merges the given fields into my answer; PUT replaces the whole answer (fields left out are
cleared) — and both obey the same phase lock, through the same service."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.annotation.conftest import answer_all_phase1, enrollment_of

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _url(campaign, user, **filters) -> str:
    pk = enrollment_of(campaign, user).assignments.filter(**filters).order_by("position").first().pk
    return f"/api/annotation/assignments/{pk}/answer/"


def test_patch_merges_the_given_fields(twist_campaign, annotator_a):
    client, url = _client(annotator_a), _url(twist_campaign, annotator_a)
    client.patch(url, {"values": {"q1": "consistent"}}, format="json")
    merged = client.patch(url, {"values": {"q1note": "why"}}, format="json")
    assert merged.status_code == 200 and merged.json()["values"] == {"q1": "consistent", "q1note": "why"}


def test_put_replaces_the_answer(twist_campaign, annotator_a):
    client, url = _client(annotator_a), _url(twist_campaign, annotator_a)
    client.patch(url, {"values": {"q1": "consistent", "q1note": "first thought"}}, format="json")
    replaced = client.put(url, {"values": {"q1": "contradicts"}}, format="json")
    assert replaced.status_code == 200 and replaced.json()["values"] == {"q1": "contradicts"}
    assert replaced.json()["revision"] == 2


def test_put_cannot_clear_a_locked_phase1_answer(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    assignment = enrollment.assignments.filter(item__gold_label="aligned").select_related("answer").first()
    refused = _client(annotator_a).put(f"/api/annotation/assignments/{assignment.pk}/answer/", {"values": {"q3": "clean"}},
                                       format="json")
    assert refused.status_code == 403
    assignment.answer.refresh_from_db()
    assert assignment.answer.values == {"q1": "consistent"}


def test_patch_on_someone_elses_assignment_is_404(twist_campaign, annotator_a, annotator_b):
    refused = _client(annotator_a).patch(_url(twist_campaign, annotator_b), {"values": {"q1": "consistent"}}, format="json")
    assert refused.status_code == 404
