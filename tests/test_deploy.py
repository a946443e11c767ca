"""The production path: settings pass Django's deployment checks, and the compose file is complete."""

import os
import secrets
import subprocess
import sys

import pytest
import yaml
from django.conf import settings

PRODUCTION_ENV = {"DJANGO_ALLOWED_HOSTS": "goldkey.example.org", "GOLDKEY_PRODUCTION": "1"}


def manage(*args: str, tmp_path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "GOLDKEY_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env={**clean, "GOLDKEY_VAR_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deploy_check_passes_under_production_settings(tmp_path):
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING",
        tmp_path=tmp_path, DJANGO_SECRET_KEY=secrets.token_urlsafe(50), **PRODUCTION_ENV,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_settings_refuse_to_start_with_debug_on(tmp_path):
    result = manage(
        "check", tmp_path=tmp_path, DJANGO_SECRET_KEY=secrets.token_urlsafe(50), DJANGO_DEBUG="1", **PRODUCTION_ENV,
    )  # fmt: skip
    assert result.returncode != 0
    assert "GOLDKEY_PRODUCTION=1 and DJANGO_DEBUG=1 together are refused" in result.stderr


def test_debug_without_production_still_starts_with_the_development_key(tmp_path):
    result = manage("check", tmp_path=tmp_path, DJANGO_DEBUG="1")
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    result = manage("check", tmp_path=tmp_path, **PRODUCTION_ENV)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_settings_read_the_secret_key_from_a_file(tmp_path):
    key_file = tmp_path / "secret"
    key_file.write_text(secrets.token_urlsafe(50) + "\n")
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING",
        tmp_path=tmp_path, DJANGO_SECRET_KEY_FILE=str(key_file), **PRODUCTION_ENV,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((settings.BASE_DIR / "docker-compose.yml").read_text())


def test_compose_runs_web_worker_postgres_and_redis(compose):
    services = compose["services"]
    assert {"web", "worker", "postgres", "redis"} <= set(services)
    assert services["web"]["command"].startswith("gunicorn goldkey.wsgi")
    assert services["worker"]["command"].startswith("celery -A goldkey worker")


@pytest.mark.parametrize("service", ["web", "worker", "migrate"])
def test_compose_gives_each_goldkey_service_the_production_environment(compose, service):
    env = compose["services"][service]["environment"]
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS"} <= set(env)
    assert env["GOLDKEY_PRODUCTION"] == "1"
    assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:" in env["DATABASE_URL"]
    assert env["CELERY_BROKER_URL"].startswith("redis://redis:")


def test_compose_has_no_default_database_password(compose):
    assert "${POSTGRES_PASSWORD:?" in compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert ":-" not in compose["x-goldkey-env"]["DATABASE_URL"]
    text = (settings.BASE_DIR / "docker-compose.yml").read_text()
    assert "POSTGRES_PASSWORD:-" not in text


def test_compose_migrates_before_serving(compose):
    for service in ("web", "worker"):
        depends = compose["services"][service]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
