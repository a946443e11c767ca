"""A key version is plain: a letter or digit, then letters, digits and `. _ + -` (TWIST-v1.0).

The version names the release's zip, its folder inside the zip, the download's file name and every URL of
the key, and every score cites it; a NUL or a control character in it made PostgreSQL refuse the row with a
server error (SQLite stored it), a space or a slash made a name no URL reaches. `keys.services` refuses such
a version with a message first; the database refuses it on any other path (the admin, raw SQL).

SQLite: triggers on insert and on an update of the version. SQLite reads a text only up to a NUL in GLOB
and length(), so a version whose length in characters differs from its length in bytes (a NUL, or any
character that is not ASCII) is refused as well. PostgreSQL: a check constraint, NOT VALID: a key sealed
before keeps the version its scores cite (a frozen key's row cannot change), every new or updated row is
checked.

The SQL is written out here: a migration must keep doing what it did when it was written.
"""

from django.db import migrations

KEY = "adjudication_goldkey"
MESSAGE = "a key version is a letter or digit, then letters, digits and . _ + -"
SQLITE_BAD = (
    "NEW.version = '' OR length(NEW.version) <> length(CAST(NEW.version AS BLOB))"
    " OR NEW.version GLOB '*[^-A-Za-z0-9._+]*' OR NEW.version GLOB '[^A-Za-z0-9]*'"
)

SQLITE_FORWARD = [
    f"""CREATE TRIGGER goldkey_version_plain_insert BEFORE INSERT ON {KEY}
        FOR EACH ROW WHEN {SQLITE_BAD}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    f"""CREATE TRIGGER goldkey_version_plain_update BEFORE UPDATE OF version ON {KEY}
        FOR EACH ROW WHEN {SQLITE_BAD}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS goldkey_version_plain_insert",
    "DROP TRIGGER IF EXISTS goldkey_version_plain_update",
]
POSTGRES_FORWARD = [
    f"""ALTER TABLE {KEY} ADD CONSTRAINT goldkey_version_plain
        CHECK (version ~ '^[A-Za-z0-9][-A-Za-z0-9._+]*$') NOT VALID""",
]
POSTGRES_BACKWARD = [f"ALTER TABLE {KEY} DROP CONSTRAINT IF EXISTS goldkey_version_plain"]

STATEMENTS = {
    "sqlite": (SQLITE_FORWARD, SQLITE_BACKWARD),
    "postgresql": (POSTGRES_FORWARD, POSTGRES_BACKWARD),
}


def _run(schema_editor, which: int) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no key version check for database vendor '{vendor}'")
    with schema_editor.connection.cursor() as cursor:
        for sql in STATEMENTS[vendor][which]:
            cursor.execute(sql)


def forward(apps, schema_editor):
    _run(schema_editor, 0)


def backward(apps, schema_editor):
    _run(schema_editor, 1)


class Migration(migrations.Migration):

    dependencies = [
        ("keys", "0014_runs_move_to_scoring_app"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
