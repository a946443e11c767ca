"""The council commands: --json shapes, human summaries, refusals, and the fake server as a real process."""

import json
import socket
import subprocess
import sys
import urllib.request
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from council.models import CouncilBatch, CouncilMember, CouncilRun, CouncilVote
from tests.council.conftest import COUNCIL_FILES


def _json(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_council_member_add_creates_then_updates_a_member():
    first = _json("council_member_add", "gpt", "--base-url", "http://127.0.0.1:8765/v1", "--model", "fake-ok", "--generator")
    again = _json("council_member_add", "gpt", "--base-url", "http://127.0.0.1:8765/v1", "--model", "fake-429-once")
    assert first["created"] and first["is_generator"]
    assert not again["created"]
    assert CouncilMember.objects.get(name="gpt").model == "fake-429-once"


@pytest.mark.django_db
def test_council_import_and_report_reproduce_the_papers_bands_from_the_command_line(twist_campaign, shared_data):
    folder = shared_data("twist-v1", "annotation", "council")
    for member, filename in COUNCIL_FILES.items():
        extra = ["--generator"] if member == "openai-gpt-4o" else []
        result = _json("council_import", "twist-v1", str(folder / filename), "--member", member, *extra)
        assert result["created"] == 200
    report = _json("council_report", "twist-v1")
    assert report["bands"] == {"unanimous_match": 115, "majority_match": 43, "abstain_heavy": 34, "majority_against": 8}
    assert set(report["pairwise_kappa"]) == {
        "anthropic-claude-sonnet-4-6|gemini-gemini-3.5-flash",
        "anthropic-claude-sonnet-4-6|openai-gpt-4o",
        "gemini-gemini-3.5-flash|openai-gpt-4o",
    }
    assert [m["name"] for m in report["members"] if m["is_generator"]] == ["openai-gpt-4o"]


@pytest.mark.django_db
def test_council_import_dry_run_writes_nothing(twist_campaign, shared_data):
    path = shared_data("twist-v1", "annotation", "council", COUNCIL_FILES["openai-gpt-4o"])
    result = _json("council_import", "twist-v1", str(path), "--member", "gpt", "--dry-run")
    assert result["created"] == 200 and result["dry_run"]
    assert not CouncilVote.objects.exists()


@pytest.mark.django_db
def test_council_report_on_an_unknown_campaign_fails_cleanly():
    with pytest.raises(CommandError, match="no campaign"):
        call_command("council_report", "nope")


@pytest.mark.django_db
def test_gates_run_reports_checked_passed_and_rejections_per_gate(twist_corpus):
    result = _json("gates_run", "TWIST Track B v1 candidates")
    assert (result["checked"], result["passed"]) == (200, 200)
    assert result["rejected_by_gate"] == {"recipient_speaker": 0, "verbatim_quote": 0, "evidence_ids": 0}


@pytest.mark.django_db
def test_gates_run_with_an_unknown_llm_member_fails_cleanly(small_twist):
    with pytest.raises(CommandError, match="no council member"):
        call_command("gates_run", "small", "--llm", "ghost")


@pytest.mark.django_db
def test_council_run_enqueues_the_run_and_prints_progress(
    small_twist, annotator_a, annotator_b, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.services import campaign_create
    from council import tasks

    campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)
    sent = []
    monkeypatch.setattr(tasks.council_batch, "delay", lambda *args: sent.append(args))
    call_command("council_member_add", "m1", "--base-url", "http://127.0.0.1:9/v1", "--model", "x", stdout=StringIO())
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("council_run", "small", "--members", "m1", stdout=out)
    assert "m1: 0 done, 0 errors, 3 remaining" in out.getvalue()
    assert [len(CouncilBatch.objects.get(pk=batch_id).item_ids) for (batch_id,) in sent] == [3]


@pytest.mark.django_db
def test_council_run_resume_sends_only_the_missing_tasks(
    small_twist, annotator_a, annotator_b, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.services import campaign_create
    from council import tasks

    campaign = campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)
    monkeypatch.setattr(tasks.council_batch, "delay", lambda *args: None)
    call_command("council_member_add", "m1", "--base-url", "http://127.0.0.1:9/v1", "--model", "x", stdout=StringIO())
    call_command("council_run", "small", "--members", "m1", stdout=StringIO())
    run = CouncilRun.objects.get()
    CouncilVote.objects.create(campaign=campaign, member=run.members.get(), item=small_twist.items.first(),
                               prompt_version=run.prompt_version.name, values={"q1": "consistent"})
    sent = []
    monkeypatch.setattr(tasks.council_batch, "delay", lambda *args: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("council_run", "small", "--resume", str(run.pk), stdout=StringIO())
    assert [len(CouncilBatch.objects.get(pk=batch_id).item_ids) for (batch_id,) in sent] == [2]


@pytest.mark.django_db
def test_council_run_with_an_unknown_member_fails_cleanly(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)
    with pytest.raises(CommandError, match="no council member"):
        call_command("council_run", "small", "--members", "ghost")


@pytest.mark.django_db
def test_leakage_audit_prints_balanced_accuracy(twist_campaign):
    result = _json("leakage_audit", "twist-v1")
    assert result["scope"] == "candidates"
    assert 0.0 <= result["balanced_accuracy"] <= 1.0
    assert set(result["draft_words_mean"]) == {"aligned", "contradicting", "hard_negative"}


def test_the_fake_llm_server_command_serves_the_openai_protocol_over_http():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "manage.py", "fake_llm_server", "--port", str(port)], cwd=settings.BASE_DIR,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        assert "fake LLM server on" in process.stdout.readline().decode()
        import openai

        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=5)
        reply = client.chat.completions.create(
            model="fake-ok", messages=[{"role": "user", "content": 'q? JSON_SCHEMA: {"q1": ["contradicts", "consistent"]}'}]
        )
        assert json.loads(reply.choices[0].message.content)["q1"] in ("contradicts", "consistent")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
            assert any(m["id"] == "fake-429-once" for m in json.load(response)["data"])
    finally:
        process.terminate()
        process.wait(5)
