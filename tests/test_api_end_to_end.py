"""A lab's script, using nothing but the REST API with token auth: import an item set, create a campaign,
annotate, read progress, run the council against the local OpenAI-compatible server through a real
Celery worker, close the campaign and read the agreement."""

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from council.fakellm import serve_in_thread
from tests.items.conftest import locomo_conversation, twist_record

pytestmark = pytest.mark.worker


def api_as(user) -> APIClient:
    """A client holding the token `manage.py drf_create_token USER` prints (the documented way to get one)."""
    out = io.StringIO()
    call_command("drf_create_token", user.username, stdout=out)
    key = out.getvalue().split()[2]  # "Generated token <key> for user <username>"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def upload(name: str, text: str) -> io.BytesIO:
    handle = io.BytesIO(text.encode())
    handle.name = name
    return handle


@pytest.fixture
def llm_server():
    server = serve_in_thread(port=0)
    yield server
    server.shutdown()
    server.server_close()


def test_a_script_runs_a_campaign_end_to_end_through_the_api(celery_worker_process, llm_server, author, annotator_a, annotator_b):
    lab = api_as(author)

    corpus = lab.post("/api/item-sets/import/", {"kind": "locomo", "file": upload("1.json", json.dumps(locomo_conversation()))})
    assert corpus.status_code == 201, corpus.content
    assert corpus.json()["created"] == 1
    items = "\n".join(json.dumps(twist_record(n, type=t)) for n, t in [(1, "contradicting"), (2, "aligned"), (3, "hard_negative")])
    imported = lab.post("/api/item-sets/import/", {"kind": "twist", "item_set": "E2E", "file": upload("e2e.jsonl", items)})
    assert imported.status_code == 201, imported.content
    assert imported.json() == {"created": 3, "unchanged": 0, "rejects_created": 0, "rejects_unchanged": 0,
                               "gate_rejects": [], "item_set": "E2E", "dry_run": False}
    listed = {s["name"]: s for s in lab.get("/api/item-sets/").json()}
    assert listed["E2E"]["items"] == 3 and listed["E2E"]["kind"] == "twist"

    created = lab.post("/api/campaigns/", {"slug": "e2e", "item_set": "E2E", "annotators": ["ann_a", "ann_b"], "seed": 3},
                       format="json")
    assert created.status_code == 201, created.content
    assert [(a["pseudonym"], a["username"], a["assigned"]) for a in created.json()["annotators"]] == [
        ("A", "ann_a", 3), ("B", "ann_b", 3)]

    for annotator, verdict in ((annotator_a, "contradicts"), (annotator_b, "consistent")):
        me = api_as(annotator)
        for assignment in me.get("/api/annotation/assignments/?campaign=e2e").json()["results"]:
            saved = me.patch(f"/api/annotation/assignments/{assignment['id']}/answer/", {"values": {"q1": verdict}}, format="json")
            assert saved.status_code == 200, saved.content

    progress = lab.get("/api/campaigns/e2e/progress/").json()
    assert [(a["pseudonym"], a["phase1"]["done"], a["phase1"]["total"]) for a in progress["annotators"]] == [
        ("A", 3, 3), ("B", 3, 3)]
    assert progress["complete"] is False

    member = lab.post("/api/council/members/", {"name": "local", "base_url": llm_server.base_url, "model": "fake-ok",
                                                "requests_per_minute": 0, "timeout_seconds": 10}, format="json")
    assert member.status_code == 201, member.content
    started = lab.post("/api/council/runs/", {"campaign": "e2e", "members": ["local"]}, format="json")
    assert started.status_code == 201, started.content
    run_id = started.json()["run"]

    def finished():
        state = lab.get(f"/api/council/runs/{run_id}/").json()
        return state if state["finished"] else None

    state = celery_worker_process.wait_for(finished, timeout=60, what="the council run finishing")
    assert state["members"] == [{"member": "local", "is_generator": False, "done": 3, "errors": 0, "remaining": 0, "total": 3}]
    assert llm_server.state.requests >= 3

    # The annotators have not handed in: the script ends their enrollments explicitly (recorded, and disclosed).
    closed = lab.post("/api/campaigns/e2e/close/", {"end_open": True}, format="json")
    assert closed.status_code == 200, closed.content
    assert closed.json()["status"] == "closed"

    agreement = lab.get("/api/adjudication/e2e/agreement/").json()
    assert agreement["n_items"] == 3 and agreement["annotators"] == ["A", "B"]
    assert agreement["q1"]["n"] == 3 and agreement["q1"]["agree"] == 0
    queue = lab.get("/api/adjudication/e2e/queue/").json()["queue"]
    assert len(queue) == 3  # every item is a disagreement

