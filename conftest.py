import os
import re

# The worker fixture is a plugin so that any test folder can use it (pytest reads pytest_plugins only
# from the top-level conftest).
pytest_plugins = ["tests.celery_worker"]


def pytest_configure(config):
    # Personas log in many times per test run; the production hasher's deliberate slowness buys nothing here.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    _private_redis_database(settings)


def _private_redis_database(settings) -> None:
    """Under pytest-xdist every test process gets a Redis database of its own (pytest-django gives it its own
    test database the same way): a Celery worker started by one process must never take another's tasks,
    and its `--purge` must empty only its own queue. The file-system broker is already per test."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = settings.CELERY_BROKER_URL
    match = re.fullmatch(r"(rediss?://[^/]*)(?:/(\d*))?", url)
    if not worker.startswith("gw") or match is None:
        return
    base = int(match.group(2) or 0)
    private = f"{match.group(1)}/{(base + 1 + int(worker[2:])) % 16}"
    from goldkey.celery import app

    # Celery also reads CELERY_BROKER_URL from the environment, over the settings.
    os.environ["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL = private
    app.conf.broker_url = private
