"""Install and remove the database triggers that make frozen gold keys immutable.

The application never relies on them (services refuse first, with a clear message), but admin, ORM
`update()`/`bulk_update()`, raw SQL and a bug in a future service all hit the same wall. A database
superuser can still drop the triggers; that is outside any application path and leaves a trace in
`key_verify` (the hash no longer matches).

The SQL is the migration's own (a migration must not import live code), read from it here so that
tests which must tear frozen rows down run exactly what the migration installed.
"""

import importlib

_migration = importlib.import_module("adjudication.migrations.0003_keys_immutability")
KEY, ENTRY, MESSAGE, STATEMENTS = _migration.KEY, _migration.ENTRY, _migration.MESSAGE, _migration.STATEMENTS


def _run(connection, statements) -> None:
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def install(connection) -> None:
    if connection.vendor not in STATEMENTS:
        raise NotImplementedError(f"no immutability triggers for database vendor '{connection.vendor}'")
    _run(connection, STATEMENTS[connection.vendor][0])


def uninstall(connection) -> None:
    if connection.vendor in STATEMENTS:
        _run(connection, STATEMENTS[connection.vendor][1])


def installed(connection) -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%frozen%'")
        else:
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%frozen_immutable'")
        return cursor.fetchone()[0] > 0
