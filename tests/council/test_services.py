"""Runs and their batches (start, resume, cancel), the sweep that makes every run finish, replay, retries."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from council import services
from council.models import CouncilBatch, CouncilMember, CouncilRun, CouncilVote
from council.services import (
    council_member_add,
    council_run_cancel,
    council_run_resume,
    council_run_start,
    council_sweep,
    council_votes_import,
    retry_delay,
)
from goldkey.errors import ApplicationError
from items.models import Item


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


@pytest.fixture
def sent(monkeypatch):
    """Task sends, captured (batch ids) instead of going to the broker."""
    from council import tasks

    captured = []
    monkeypatch.setattr(tasks.council_batch, "delay", lambda batch_id: captured.append(batch_id))
    return captured


def _members(*names):
    return [council_member_add(name=n, base_url="http://127.0.0.1:9/v1", model=n)[0] for n in names]


def _started(campaign, *names, capture):
    with capture(execute=True):
        return council_run_start(campaign=campaign, members=_members(*names))


def _vote(run, member, item, status="ok"):
    return CouncilVote.objects.create(campaign=run.campaign, member=member, item=item, prompt_version=run.prompt_version.name,
                                      status=status, values={"q1": "consistent"} if status == "ok" else {})


def _age(batch, seconds, **fields):
    """Make a batch look sent `seconds` ago (and set other fields)."""
    CouncilBatch.objects.filter(pk=batch.pk).update(sent_at=timezone.now() - timedelta(seconds=seconds), **fields)


def test_retry_after_is_honoured_and_backoff_grows_otherwise():
    assert retry_delay(3, 2.0) == 2.0
    assert retry_delay(0, 500.0) == 60.0  # capped
    assert retry_delay(0, None) <= 1.0 < retry_delay(3, None) * 2


@pytest.mark.django_db
def test_starting_a_run_sends_one_batch_per_member_and_slice_on_commit_members_interleaved(
    small_campaign, sent, settings, django_capture_on_commit_callbacks
):
    settings.COUNCIL_BATCH_SIZE = 2
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = council_run_start(campaign=small_campaign, members=_members("m1", "m2"))
    assert sent == []  # nothing before the commit: a worker must find the run
    for callback in callbacks:
        callback()
    batches = [CouncilBatch.objects.select_related("member").get(pk=pk) for pk in sent]
    assert [(b.member.name, len(b.item_ids)) for b in batches] == [("m1", 2), ("m2", 2), ("m1", 1), ("m2", 1)]
    items = set(Item.objects.filter(item_set=small_campaign.item_set).values_list("id", flat=True))
    for name in ("m1", "m2"):
        assert sorted(i for b in batches if b.member.name == name for i in b.item_ids) == sorted(items)
    assert run.total_items == 3 and run.status == "running"


@pytest.mark.django_db
def test_a_run_without_members_is_refused(small_campaign):
    with pytest.raises(ApplicationError):
        council_run_start(campaign=small_campaign, members=[])


@pytest.mark.django_db
def test_a_batch_whose_message_was_lost_is_sent_again_by_the_sweep(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    batch = run.batches.get()
    sent.clear()
    assert council_sweep()["resent"] == 0  # just sent: trusted to be queued
    _age(batch, 3600)  # a broker restarted without saving: the message is gone
    assert council_sweep() == {"runs": 1, "resent": 1, "finished": 0, "stalled": 0}
    assert sent == [batch.pk]
    batch.refresh_from_db()
    assert batch.resends == 1
    assert council_sweep()["resent"] == 0  # sent again just now: not twice


@pytest.mark.django_db
def test_a_batch_in_flight_is_left_alone_until_its_lease_runs_out(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    batch = run.batches.get()
    sent.clear()
    _age(batch, 3600, holder="task-1", lease_until=timezone.now() + timedelta(seconds=60))
    assert council_sweep()["resent"] == 0
    # Its worker was SIGKILLed: the lease (the hard time limit and a margin) ran out with items still missing.
    CouncilBatch.objects.filter(pk=batch.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert council_sweep()["resent"] == 1 and sent == [batch.pk]
    batch.refresh_from_db()
    assert batch.holder == ""


@pytest.mark.django_db
def test_the_sweep_finishes_a_run_whose_rows_are_all_there(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    member = run.members.get()
    for n, item in enumerate(Item.objects.filter(item_set=small_campaign.item_set)):
        _vote(run, member, item, status="error" if n == 0 else "ok")
    assert council_sweep()["finished"] == 1
    run.refresh_from_db()
    assert run.status == "finished" and run.finished_at is not None


@pytest.mark.django_db
def test_a_batch_that_keeps_dying_stalls_its_run_with_the_reason(small_campaign, sent, settings, django_capture_on_commit_callbacks):
    settings.COUNCIL_MAX_RESENDS = 2
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    batch = run.batches.get()
    for _ in range(2):
        _age(batch, 3600)
        assert council_sweep()["resent"] == 1
    _age(batch, 3600)
    assert council_sweep()["stalled"] == 1
    run.refresh_from_db()
    assert run.status == "stalled"
    assert "member 'm1': 3 vote(s) still missing" in run.stalled_reason and f"--resume {run.pk}" in run.stalled_reason
    assert council_sweep()["runs"] == 0  # a stalled run waits for a person


@pytest.mark.django_db
def test_resuming_a_stalled_run_sends_exactly_what_is_missing(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", "m2", capture=django_capture_on_commit_callbacks)
    m1, m2 = run.members.order_by("name")
    first = Item.objects.filter(item_set=small_campaign.item_set).order_by("external_id").first()
    _vote(run, m1, first)
    services.council_run_stall(run_id=run.pk, reason="test")
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert council_run_resume(run=run) == 5
    run.refresh_from_db()
    assert run.status == "running" and run.stalled_reason == ""
    fresh = {CouncilBatch.objects.get(pk=pk).member_id: CouncilBatch.objects.get(pk=pk).item_ids for pk in sent}
    assert first.pk not in fresh[m1.pk] and len(fresh[m1.pk]) == 2 and len(fresh[m2.pk]) == 3
    assert CouncilBatch.objects.filter(run=run, finished=False).count() == 2  # the old ones are superseded


@pytest.mark.django_db
def test_resume_leaves_a_batch_in_flight_to_its_task(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    CouncilBatch.objects.filter(run=run).update(holder="task-1", lease_until=timezone.now() + timedelta(seconds=60))
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert council_run_resume(run=run) == 0
    assert sent == []


@pytest.mark.django_db
def test_a_cancelled_run_is_not_swept_nor_resumed(small_campaign, sent, django_capture_on_commit_callbacks):
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    _age(run.batches.get(), 3600)
    council_run_cancel(run=run)
    sent.clear()
    assert council_sweep()["runs"] == 0 and sent == []
    with pytest.raises(ApplicationError, match="cancelled"):
        council_run_resume(run=run)


@pytest.mark.django_db
def test_a_send_that_fails_leaves_the_batch_for_the_next_sweep(small_campaign, monkeypatch, django_capture_on_commit_callbacks):
    from council import tasks

    def broker_down(batch_id):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.council_batch, "delay", broker_down)
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    batch = run.batches.get()
    assert batch.sent_at is None
    sent = []
    monkeypatch.setattr(tasks.council_batch, "delay", lambda batch_id: sent.append(batch_id))
    assert council_sweep()["resent"] == 1 and sent == [batch.pk]


@pytest.mark.django_db
def test_reimporting_the_same_council_file_changes_nothing(released_council, shared_data):
    from tests.council.conftest import COUNCIL_FILES

    path = shared_data("twist-v1", "annotation", "council", COUNCIL_FILES["openai-gpt-4o"])
    result = council_votes_import(campaign=released_council, path=path, member_name="openai-gpt-4o")
    assert result["created"] == 0 and result["unchanged"] == 200
    assert CouncilVote.objects.filter(prompt_version="imported").count() == 600


@pytest.mark.django_db
def test_a_council_file_naming_an_unknown_item_is_refused_whole(small_campaign, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"annotator": "m", "answers": {"conv-x:1": {"q1": "consistent"}, "nope": {"q1": "consistent"}}}))
    with pytest.raises(ApplicationError, match="nope"):
        council_votes_import(campaign=small_campaign, path=path, member_name="m")
    assert not CouncilVote.objects.exists()


@pytest.mark.django_db
def test_a_council_file_with_an_invalid_value_is_refused(small_campaign, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"annotator": "m", "answers": {"conv-x:1": {"q1": "maybe"}}}))
    with pytest.raises(ApplicationError, match="maybe"):
        council_votes_import(campaign=small_campaign, path=path, member_name="m")


@pytest.mark.django_db
def test_a_run_is_refused_a_cancelled_runs_batch(small_campaign, sent, django_capture_on_commit_callbacks):
    from council import execution

    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    council_run_cancel(run=run)
    assert execution.batch_work(batch_id=run.batches.get().pk, holder="t") == {"batch": run.batches.get().pk, "skipped": True}
    assert CouncilRun.objects.get(pk=run.pk).status == "cancelled"


@pytest.mark.django_db
def test_a_batch_whose_process_dies_under_it_every_time_stalls_its_run(small_campaign, sent, settings, django_capture_on_commit_callbacks):
    """Worker-lost rejection redelivers the same task (same id) at once: each such claim counts as a resend."""
    settings.COUNCIL_MAX_RESENDS = 2
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    batch = run.batches.get()
    for _ in range(3):  # the first delivery, then two redeliveries after the process died
        assert services.council_batch_claim(batch_id=batch.pk, holder="task-1") is not None
    assert services.council_batch_claim(batch_id=batch.pk, holder="task-1") is None
    run.refresh_from_db()
    assert run.status == "stalled" and "sent again 3 times" in run.stalled_reason and "council_run small --resume" in run.stalled_reason


@pytest.mark.django_db
def test_a_running_run_without_batches_gets_them_from_the_sweep(small_campaign, sent, django_capture_on_commit_callbacks):
    """A run started before batches existed (its per-vote messages are gone): the sweep gives it batches."""
    from council.services import prompt_version_default

    member = _members("m1")[0]
    run = CouncilRun.objects.create(campaign=small_campaign, prompt_version=prompt_version_default(protocol="twist_b"),
                                    status="running", total_items=3, members_count=1)
    run.members.set([member])
    with django_capture_on_commit_callbacks(execute=True):
        assert council_sweep()["resent"] == 1
    assert [len(CouncilBatch.objects.get(pk=pk).item_ids) for pk in sent] == [3]


@pytest.mark.django_db
def test_a_batch_queued_behind_others_of_a_run_making_progress_is_sent_again_but_never_stalls_it(
    small_campaign, sent, settings, django_capture_on_commit_callbacks
):
    settings.COUNCIL_MAX_RESENDS = 1
    settings.COUNCIL_BATCH_SIZE = 2
    run = _started(small_campaign, "m1", capture=django_capture_on_commit_callbacks)
    first, second = run.batches.order_by("id")
    CouncilVote.objects.create(campaign=small_campaign, member=run.members.get(), item_id=first.item_ids[0], run=run,
                               prompt_version=run.prompt_version.name, values={"q1": "consistent"})  # a vote just now
    for _ in range(3):
        _age(second, 3600)
        _age(first, 0, holder="task-1", lease_until=timezone.now() + timedelta(seconds=60))
        assert council_sweep()["resent"] == 1
    run.refresh_from_db()
    second.refresh_from_db()
    assert run.status == "running" and second.resends == 0


def test_a_council_file_error_names_the_line_of_the_item(small_campaign, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"annotator": "m", "answers": {"nope": {"q1": "consistent"}}}, indent=1))
    with pytest.raises(ApplicationError) as caught:
        council_votes_import(campaign=small_campaign, path=path, member_name="m")
    assert caught.value.message == f"c.json:4: item 'nope': not an item of campaign '{small_campaign.slug}'"


@pytest.mark.parametrize("field", ["name", "base_url", "model", "api_key_env"])
def test_a_member_text_over_its_column_is_refused_naming_the_field(db, field):
    n = CouncilMember._meta.get_field(field).max_length
    values = {"name": "m1", "base_url": "http://127.0.0.1:9/v1", "model": "x", "api_key_env": "M1_KEY"}
    over = "http://h/" + "p" * (n - 8) if field == "base_url" else "m" * (n + 1)
    with pytest.raises(ApplicationError, match=rf"field '{field}': a text of {n + 1} characters \(at most {n}\)"):
        council_member_add(**{**values, field: over})
    assert not CouncilMember.objects.exists()
    council_member_add(**{**values, field: over[:n]})
    assert len(getattr(CouncilMember.objects.get(), field)) == n
