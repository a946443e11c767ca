import uuid

import pytest
from django.db import transaction

from items.models import Conversation, WorkerPing
from items.services import worker_ping_record
from items.tasks import corpus_ping, corpus_ping_enqueue


@pytest.mark.worker
def test_a_real_worker_process_consumes_a_queued_task_and_sees_the_test_database(celery_worker_process):
    Conversation.objects.create(external_id="conv-ping", speaker_a="Ada", speaker_b="Ben")
    token = uuid.uuid4().hex
    with transaction.atomic():
        corpus_ping_enqueue(token=token)  # sent on commit, like every task in Goldkey

    ping = celery_worker_process.wait_for(lambda: WorkerPing.objects.filter(token=token).first(), what="the ping row")

    assert ping.conversations == 1  # the worker counted the row this test committed
    assert ping.hostname.startswith("pytest-")  # written by the worker process, not by this one
    assert "items.corpus_ping[" in celery_worker_process.log()


@pytest.mark.django_db
def test_a_ping_is_sent_only_when_the_transaction_commits(monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(corpus_ping, "delay", lambda token: sent.append(token))
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            corpus_ping_enqueue(token="committed")
            assert sent == []  # not before the commit
    assert sent == ["committed"]


@pytest.mark.django_db
def test_a_rolled_back_transaction_sends_no_ping(monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(corpus_ping, "delay", lambda token: sent.append(token))
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            corpus_ping_enqueue(token="never-sent")
            raise RuntimeError("roll back")
    assert sent == []


@pytest.mark.django_db
def test_a_redelivered_ping_records_one_row():
    first = worker_ping_record(token="t-1", hostname="w1")
    again = worker_ping_record(token="t-1", hostname="w2")
    assert again.pk == first.pk
    assert WorkerPing.objects.filter(token="t-1").count() == 1


@pytest.mark.django_db
def test_the_ping_task_reports_the_counts_it_recorded():
    Conversation.objects.create(external_id="conv-x", speaker_a="Ada", speaker_b="Ben")
    result = corpus_ping.apply(args=["t-2"]).get()
    assert result == {"token": "t-2", "conversations": 1, "items": 0}
