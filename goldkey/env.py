"""Small helpers that read settings from the environment and fail loudly on bad values."""

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    """A string from NAME, or from the file named by NAME_FILE (for secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def _boolean(raw: str, what: str) -> bool:
    """`raw` as a boolean; `what` names where it came from in the error (`NAME=value`)."""
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{what}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else _boolean(raw, name)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def _postgres_options(options: dict[str, str]) -> dict:
    """The URL's query parameters as psycopg's connection options, with parameters bound on the server and
    repeated statements prepared (goldkey.lib.pgbinding) unless the URL says otherwise: behind a pooler
    that cannot keep prepared statements, `?prepare_threshold=none`; for Django's client-side binding,
    `?server_side_binding=false`."""
    # Imported here: psycopg and Django's PostgreSQL backend, which a SQLite run does not need.
    from goldkey.lib.pgbinding import PREPARE_THRESHOLD, BoundedServerBindingCursor

    options = dict(options)
    threshold = options.pop("prepare_threshold", str(PREPARE_THRESHOLD)).strip().lower()
    if not _boolean(options.pop("server_side_binding", "true"), "DATABASE_URL: server_side_binding"):
        return options
    try:
        prepare = None if threshold in {"none", ""} else int(threshold)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: prepare_threshold={threshold!r} is not an integer or none") from exc
    return options | {"server_side_binding": True, "prepare_threshold": prepare,
                      "cursor_factory": BoundedServerBindingCursor}


def database_from_url(url: str) -> dict:
    """Django DATABASES entry from a postgres:// or sqlite:/// URL."""
    parsed = urlparse(url)
    options = dict(parse_qsl(parsed.query))
    if parsed.scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "OPTIONS": _postgres_options(options),
            "CONN_MAX_AGE": 60,
            # A kept connection is checked before a request reuses it, so a database restart costs one
            # reconnect instead of an error on every worker's stale connection.
            "CONN_HEALTH_CHECKS": True,
        }
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        if path.startswith("//"):
            path = path[1:]
        # Connections are kept too: a new SQLite connection reads the database's schema (every table,
        # index and trigger) and runs the WAL pragmas on its first statement, 6-10 ms of a request's
        # CPU on a 2-core machine. (runserver's thread per request cannot keep one; gunicorn's workers do.)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path or ":memory:", "CONN_MAX_AGE": 60}
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (postgres:// or sqlite:///)")
