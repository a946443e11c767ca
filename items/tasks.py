"""Celery tasks for items: thin wrappers that take ids and call a service."""

from celery import shared_task
from django.db import transaction

from items.services import worker_ping_record


@shared_task(name="items.corpus_ping", acks_late=True, soft_time_limit=10, time_limit=20)
def corpus_ping(token: str) -> dict:
    """Answer a ping: record it with the corpus counts this worker sees (a queue and database round trip)."""
    ping = worker_ping_record(token=token, hostname=corpus_ping.request.hostname or "")
    return {"token": ping.token, "conversations": ping.conversations, "items": ping.items}


def corpus_ping_enqueue(*, token: str) -> None:
    """Send the ping once the surrounding transaction commits (a rolled-back caller sends nothing)."""
    transaction.on_commit(lambda: corpus_ping.delay(token))
