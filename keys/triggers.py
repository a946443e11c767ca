"""Install and remove the database triggers that make frozen gold keys and frozen campaigns immutable.

The application never relies on them (services refuse first, with a clear message), but admin, ORM
`update()`/`bulk_update()`, raw SQL and a bug in a future service all hit the same wall. A database
superuser can still drop the triggers; that is outside any application path and leaves a trace in
`key_verify` (the hash no longer matches).

The SQL is the migration's own (a migration must not import live code), read from it here so that
tests which must tear frozen rows down run exactly what the migration installed.
"""

import importlib

_keys = importlib.import_module("adjudication.migrations.0003_keys_immutability")
_sealed = importlib.import_module("keys.migrations.0002_sealed_campaign_triggers")
_releases = importlib.import_module("keys.migrations.0003_releases")
# Replaces the entries' insert checks of the two above (its backward statements put them back).
_entry_inserts = importlib.import_module("keys.migrations.0010_keyentry_insert_checks")
# Seals the enrollments and assignments, and refuses an update onto a sealed row (its backward statements
# put keys 0002's update triggers back).
_trail_rows = importlib.import_module("keys.migrations.0011_sealed_trail_rows_stay_put")
KEY, ENTRY, MESSAGE = _keys.KEY, _keys.ENTRY, _keys.MESSAGE
SEALED_MESSAGE = _sealed.MESSAGE
RELEASE_MESSAGE = _releases.MESSAGE
_MIGRATIONS = (_keys, _sealed, _releases, _entry_inserts, _trail_rows)
# Every migration's triggers, installed in migration order and removed in reverse.
STATEMENTS = {
    vendor: (
        [sql for m in _MIGRATIONS for sql in m.STATEMENTS[vendor][0]],
        [sql for m in reversed(_MIGRATIONS) for sql in m.STATEMENTS[vendor][1]],
    )
    for vendor in _keys.STATEMENTS
}


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
