"""A throw-away database for a benchmark, never the project's own.

`scratch_database()` points Django at a fresh SQLite file in a new temporary folder (GOLDKEY_VAR_DIR is
set to that folder whatever it was, so a GOLDKEY_VAR_DIR in the environment cannot lead the bench into
the project's database), or, when DATABASE_URL names a PostgreSQL server, at a throw-away test
database `test_<name>` created and dropped there. It migrates it, and gives the environment a child
process (a server, a management command) needs to reach the same database.

    from scratch import scratch_database
    with scratch_database() as scratch:
        ...  # scratch.folder, scratch.env (for subprocess), scratch.vendor
"""

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlparse, urlunparse


@dataclass
class Scratch:
    folder: Path
    env: dict
    vendor: str
    name: str


def _postgres_url(url: str, name: str) -> str:
    parsed = urlparse(url)
    return urlunparse(parsed._replace(path="/" + quote(name, safe="")))


def template_exists(template: Path) -> bool:
    """Whether `save_template` has saved `template`: a SQLite file, or with a PostgreSQL DATABASE_URL a
    template database on that server (named after the file's name, see _postgres_template)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://", "pgsql://")):
        return template.exists()
    import psycopg

    with psycopg.connect(_postgres_url(url, "postgres"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [_postgres_template(template)]).fetchone() is not None


def _postgres_template(template: Path) -> str:
    # A database beside the scratch ones on the same server, never the project's own: a fixed prefix and
    # the file name's letters.
    return "goldkey_bench_template_" + re.sub(r"[^a-z0-9]+", "_", template.name.lower())[:30]


@contextmanager
def scratch_database(*, keep: bool = False, template: Path | None = None):
    """`template`: the database as `save_template` saved it, to start from instead of an empty one; the
    scratch database is a copy of it, so the template itself is never written. On SQLite a file; on
    PostgreSQL a template database of the server (CREATE DATABASE … TEMPLATE)."""
    folder = Path(tempfile.mkdtemp(prefix="goldkey-bench-"))
    os.environ["GOLDKEY_VAR_DIR"] = str(folder)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    url = os.environ.get("DATABASE_URL", "")
    if url and not url.startswith(("postgres://", "postgresql://", "pgsql://")):
        # A sqlite:/// URL names a file that may well be the project's: the bench makes its own.
        del os.environ["DATABASE_URL"]
        url = ""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    env = {**os.environ, "GOLDKEY_VAR_DIR": str(folder), "DJANGO_DEBUG": "0", "GOLDKEY_PRODUCTION": "0"}
    if connection.vendor == "postgresql":
        project_name = connection.settings_dict["NAME"]
        if template is None:
            name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        else:
            name = _postgres_copy(connection, _postgres_template(template))
            call_command("migrate", verbosity=0)  # a template saved by older code gets this code's schema
        env["DATABASE_URL"] = _postgres_url(url, name)
    else:
        name = connection.settings_dict["NAME"]
        assert Path(name).resolve().parent == folder.resolve(), name  # the file is the scratch folder's
        if template is not None:
            connection.close()
            shutil.copyfile(template, name)
        call_command("migrate", verbosity=0)
        env.pop("DATABASE_URL", None)
    try:
        yield Scratch(folder=folder, env=env, vendor=connection.vendor, name=str(name))
    finally:
        connection.close()
        if connection.vendor == "postgresql":
            connection.creation.destroy_test_db(project_name, verbosity=0)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _postgres_copy(connection, template: str) -> str:
    """The test database `test_<name>`, created as a copy of the template database (what create_test_db
    does, with the copy instead of the migrations)."""
    from django.conf import settings

    name = connection.creation._get_test_db_name()
    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
        cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = name
    connection.settings_dict["NAME"] = name
    return name


def save_template(scratch: Scratch, path: Path) -> None:
    """Copy the scratch database, as it stands, to `path` (for `scratch_database(template=path)`): the
    SQLite file, or on PostgreSQL a template database named after `path`."""
    from django.db import connection

    if scratch.vendor == "postgresql":
        template = connection.ops.quote_name(_postgres_template(path))
        connection.close()  # a database is copied only while nobody is connected to it
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {template}")
            cursor.execute(f"CREATE DATABASE {template} TEMPLATE {connection.ops.quote_name(scratch.name)}")
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every committed page in the main file
    connection.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(scratch.name, f"{path}.partial")
    os.replace(f"{path}.partial", path)
