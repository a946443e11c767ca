import time
import uuid

from django.conf import settings
from django.db import transaction

from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from items.selectors import worker_ping_find
from items.tasks import corpus_ping_enqueue


class Command(GoldkeyCommand):
    help = (
        "Send a ping through the task queue and wait until a Celery worker records it: checks that the broker, "
        "a worker and the database are connected (exits non-zero if no worker answers in time)."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a worker (default 30)")

    def run(self, *, timeout, **_):
        token = uuid.uuid4().hex
        started = time.monotonic()
        with transaction.atomic():
            corpus_ping_enqueue(token=token)
        while (ping := worker_ping_find(token)) is None:
            if time.monotonic() - started > timeout:
                broker = settings.CELERY_BROKER_URL.split("@")[-1]  # never print a password
                raise ApplicationError(
                    f"no worker answered within {timeout:g} s; is `celery -A goldkey worker` running on {broker}?"
                )
            time.sleep(0.2)
        return {
            "token": token,
            "hostname": ping.hostname,
            "seconds": round(time.monotonic() - started, 2),
            "conversations": ping.conversations,
            "items": ping.items,
        }

    def summary(self, r):
        return (
            f"Worker {r['hostname']} answered in {r['seconds']} s "
            f"(it sees {r['conversations']} conversations and {r['items']} items)."
        )
