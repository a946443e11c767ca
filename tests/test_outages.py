"""A database or broker outage answers 503 + Retry-After (JSON for API clients, a short page for people),
through the real middleware stack."""

import json
import os
import subprocess
import sys

import kombu.exceptions
import pytest
import redis.exceptions
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.urls import path
from rest_framework.decorators import api_view

from goldkey.celery import app
from goldkey.urls import urlpatterns as project_urlpatterns


def _raises(exc):
    def view(request):
        raise exc

    return view


@api_view(["GET", "POST"])
def api_database_down(request):
    raise OperationalError("server closed the connection unexpectedly")


def broker_down(request):
    # A real connection attempt to a port nothing listens on, as when Redis is stopped.
    with app.connection_for_write(url="redis://127.0.0.1:1/0") as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=1)


urlpatterns = [
    *project_urlpatterns,
    path("api/outage/", api_database_down),
    path("page/db/", _raises(OperationalError("could not connect to server"))),
    path("page/interface/", _raises(InterfaceError("connection already closed"))),
    path("page/kombu/", _raises(kombu.exceptions.OperationalError("Error 111 connecting"))),
    path("page/redis/", _raises(redis.exceptions.ConnectionError("Connection refused"))),
    path("page/broker/", broker_down),
    path("page/bug/", _raises(ValueError("a real bug"))),
]


@pytest.fixture
def outage_urls(settings):
    settings.ROOT_URLCONF = __name__


pytestmark = pytest.mark.django_db


def test_an_api_client_gets_json_503_with_retry_after(client, outage_urls, annotator_a):
    client.force_login(annotator_a)
    response = client.post("/api/outage/", data={"x": 1}, content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert "database is unavailable" in body["detail"] and body["retry_after"] == 10


@pytest.mark.parametrize(
    ("url", "what"),
    [("/page/db/", "database"), ("/page/interface/", "database"), ("/page/kombu/", "task queue"),
     ("/page/redis/", "task queue"), ("/page/broker/", "task queue")],
)  # fmt: skip
def test_a_person_gets_a_friendly_503_page(client, outage_urls, url, what):
    response = client.get(url)
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    html = response.content.decode()
    assert "<h1>Back in a moment</h1>" in html and f"The {what} is unavailable" in html
    assert "Traceback" not in html


def test_a_page_fetched_for_json_gets_json(client, outage_urls):
    response = client.get("/page/db/", headers={"Accept": "application/json"})
    assert response.status_code == 503 and json.loads(response.content)["retry_after"] == 10


def test_other_errors_are_still_errors(client, outage_urls):
    client.raise_request_exception = True
    with pytest.raises(ValueError, match="a real bug"):
        client.get("/page/bug/")


def test_server_connections_are_health_checked_before_reuse():
    from goldkey.env import database_from_url

    entry = database_from_url("postgres://u:p@db:5432/goldkey")
    assert entry["CONN_HEALTH_CHECKS"] is True and entry["CONN_MAX_AGE"] > 0


CLOSED_PORT_REQUESTS = """
import json, django
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
api = client.get("/api/annotation/assignments/", headers={"Authorization": "Token 0123456789abcdef"})
page = client.post("/accounts/login/", {"username": "ann_a", "password": "x"})
print(json.dumps({"api": [api.status_code, api.get("Retry-After"), api.get("Content-Type")],
                  "page": [page.status_code, page.get("Retry-After"), "Back in a moment" in page.content.decode()]}))
"""


def test_a_database_on_a_closed_port_answers_503_not_500(tmp_path):
    """The whole stack against PostgreSQL that is not there (nothing listens on port 1): token
    authentication and the login form both need the database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "GOLDKEY_", "DATABASE_"))}
    env.update(DATABASE_URL="postgres://goldkey:x@127.0.0.1:1/goldkey?connect_timeout=2", GOLDKEY_VAR_DIR=str(tmp_path),
               DJANGO_SETTINGS_MODULE="goldkey.settings")
    result = subprocess.run([sys.executable, "-c", CLOSED_PORT_REQUESTS], cwd=settings.BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["api"] == [503, "10", "application/json"]
    assert outcome["page"] == [503, "10", True]
