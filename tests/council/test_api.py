"""The council API: authors add members and start, follow and cancel runs — the pages' services and
access rule (an author who annotates the campaign is blind to its council until they submit)."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from council.models import CouncilBatch, CouncilMember, CouncilRun
from council.services import council_member_add

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


@pytest.fixture
def sent(monkeypatch):
    """The tasks a run enqueues (the worker itself is exercised in test_tasks and the end-to-end test)."""
    from council import tasks

    calls = []
    monkeypatch.setattr(tasks.council_batch, "delay", lambda batch_id: calls.append(batch_id))
    return calls


def test_an_author_adds_a_member_then_updates_it(author):
    client = token_client(author)
    body = {"name": "m1", "base_url": "http://127.0.0.1:9/v1", "model": "x", "api_key_env": "M1_KEY"}
    assert client.post("/api/council/members/", body, format="json").status_code == 201
    again = client.post("/api/council/members/", {**body, "concurrency": 2}, format="json")
    assert again.status_code == 200 and again.json()["concurrency"] == 2
    assert [m["name"] for m in client.get("/api/council/members/").json()] == ["m1"]
    assert CouncilMember.objects.get().api_key_env == "M1_KEY"


def test_a_member_with_a_bad_url_or_concurrency_is_a_400_naming_the_field(author):
    response = token_client(author).post("/api/council/members/", {"name": "m", "base_url": "not a url", "concurrency": 0},
                                         format="json")
    assert response.status_code == 400 and {"base_url", "concurrency"} <= set(response.json())
    assert not CouncilMember.objects.exists()


def test_an_author_starts_follows_and_cancels_a_run(small_campaign, author, sent, django_capture_on_commit_callbacks):
    council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x")
    client = token_client(author)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/api/council/runs/", {"campaign": "small", "members": ["m1"]}, format="json")
    assert started.status_code == 201, started.json()
    run_id = started.json()["run"]
    assert started.json()["members"] == [{"member": "m1", "is_generator": False, "done": 0, "errors": 0, "remaining": 3, "total": 3}]
    assert [len(CouncilBatch.objects.get(pk=pk).item_ids) for pk in sent] == [3]  # one batch: 1 member × 3 items
    assert client.get(f"/api/council/runs/{run_id}/").json()["status"] == "running"
    assert [r["id"] for r in client.get("/api/council/runs/?campaign=small").json()] == [run_id]
    cancelled = client.post(f"/api/council/runs/{run_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
    assert CouncilRun.objects.get().status == "cancelled"


def test_a_run_with_an_unknown_member_is_a_400_and_starts_nothing(small_campaign, author, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(author).post("/api/council/runs/", {"campaign": "small", "members": ["ghost"]}, format="json")
    assert response.status_code == 400 and "ghost" in response.json()["detail"]
    assert not CouncilRun.objects.exists() and sent == []


def test_an_author_who_annotates_the_campaign_cannot_start_or_read_its_runs(small_twist, author, annotator_b, sent):
    from annotation.services import campaign_create

    campaign_create(slug="mine", item_set=small_twist, annotators=[author, annotator_b], seed=1)
    council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x")
    client = token_client(author)
    assert client.post("/api/council/runs/", {"campaign": "mine", "members": ["m1"]}, format="json").status_code == 404
    assert client.get("/api/council/runs/?campaign=mine").status_code == 404
    assert not CouncilRun.objects.exists()


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_authors_reach_no_council_endpoint(small_campaign, persona, request, sent):
    member = council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x")[0]
    run = CouncilRun.objects.create(campaign=small_campaign, prompt_version=_prompt(), total_items=3,
                                    members_count=1, status="running")
    run.members.set([member])
    client = token_client(request.getfixturevalue(persona))
    assert client.get("/api/council/members/").status_code == 403
    assert client.post("/api/council/members/", {"name": "m2"}, format="json").status_code == 403
    assert client.post("/api/council/runs/", {"campaign": "small", "members": ["m1"]}, format="json").status_code == 403
    assert client.get(f"/api/council/runs/{run.pk}/").status_code == 403
    assert client.post(f"/api/council/runs/{run.pk}/cancel/").status_code == 403
    assert CouncilRun.objects.get().status == "running" and CouncilMember.objects.count() == 1


def test_a_missing_run_or_campaign_is_404(author):
    client = token_client(author)
    assert client.get("/api/council/runs/999/").status_code == 404
    assert client.post("/api/council/runs/999/cancel/").status_code == 404
    assert client.get("/api/council/runs/?campaign=nope").status_code == 404


def _prompt():
    from council.services import prompt_version_default

    return prompt_version_default(protocol="twist_b")


@pytest.mark.parametrize("field", ["name", "model", "api_key_env"])
def test_a_member_text_over_its_column_is_a_400_naming_the_field(author, field):
    n = CouncilMember._meta.get_field(field).max_length
    body = {"name": "m1", "base_url": "http://127.0.0.1:9/v1", "model": "x", "api_key_env": "M1_KEY"}
    client = token_client(author)
    response = client.post("/api/council/members/", {**body, field: "M" * (n + 1)}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert not CouncilMember.objects.exists()
    assert client.post("/api/council/members/", {**body, field: "M" * n}, format="json").status_code == 201
