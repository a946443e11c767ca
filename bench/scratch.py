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


@contextmanager
def scratch_database(*, keep: bool = False, template: Path | None = None):
    """`template`: a SQLite file (saved by `save_template`) to start from instead of an empty database;
    the scratch database is a copy of it, so the template itself is never written."""
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
    if template is not None and connection.vendor != "sqlite":
        raise SystemExit("a database template is a SQLite file: run without DATABASE_URL")
    if connection.vendor == "postgresql":
        project_name = connection.settings_dict["NAME"]
        name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
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


def save_template(scratch: Scratch, path: Path) -> None:
    """Copy the scratch SQLite database, as it stands, to `path` (for `scratch_database(template=path)`)."""
    from django.db import connection

    if scratch.vendor != "sqlite":
        raise SystemExit("a database template is a SQLite file: run without DATABASE_URL")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every committed page in the main file
    connection.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(scratch.name, f"{path}.partial")
    os.replace(f"{path}.partial", path)
