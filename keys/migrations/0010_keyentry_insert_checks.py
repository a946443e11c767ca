"""Cheaper insert-time checks on a key's entries, exactly as strong; and no index of its own for `key_id`.

SQLite: two BEFORE INSERT triggers became one. An insert is refused when its key is frozen, or when it
carries the id of a frozen key's entry (INSERT OR REPLACE deletes the row it lands on without firing a
delete trigger). The older replace check also looked for a frozen row with the same (key_id,
external_id): such a row belongs to the insert's own key, which is then frozen, so the first test
already refuses it. The id test stays unguarded: SQLite gives NEW.id as -1, not NULL, when the insert
names no id, and -1 is also an id one could name. UPDATE OR REPLACE deletes the same way: an update
may not move a row onto the id of a frozen key's entry, nor a key row onto a frozen key's id or version
(a key row taking a frozen key's id would have kept its entries and release under a draft).

PostgreSQL: inserts were checked by a PL/pgSQL call per row; now by one AFTER INSERT statement trigger
over the statement's new rows (a transition table, filled by COPY too), which aborts the statement if
any of them belongs to a frozen key: nothing of it is written either way. The row trigger keeps UPDATE
and DELETE.

`key_id` had its own index beside the unique (key_id, external_id) one, which leads with key_id and
serves every lookup by key (and the foreign key's checks when a key row is deleted); the second index
only cost every insert. It is dropped by hand: on SQLite, Django alters a field by rebuilding the
table, which would drop the table's triggers with it.

The SQL is written out here: a migration must keep doing what it did when it was written, whatever the
live code becomes. `STATEMENTS[vendor]` is (forward, backward); keys.triggers runs them as the last
install and the first uninstall step.
"""

import django.db.models.deletion
from django.db import migrations, models

KEY = "adjudication_goldkey"
ENTRY = "adjudication_keyentry"
MESSAGE = "frozen gold keys are immutable"
KEY_ID_INDEX = "adjudication_keyentry_key_id_5ccb847d"

SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_replace",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_insert",
    f"""CREATE TRIGGER keyentry_frozen_no_insert BEFORE INSERT ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
            OR EXISTS (SELECT 1 FROM {ENTRY} e JOIN {KEY} k ON k.id = e.key_id
                       WHERE e.id = NEW.id AND k.status = 'frozen')
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_update",
    f"""CREATE TRIGGER keyentry_frozen_no_update BEFORE UPDATE ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = OLD.key_id) = 'frozen'
                       OR (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
                       OR (NEW.id <> OLD.id AND EXISTS (SELECT 1 FROM {ENTRY} e JOIN {KEY} k ON k.id = e.key_id
                                                       WHERE e.id = NEW.id AND k.status = 'frozen'))
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    "DROP TRIGGER IF EXISTS goldkey_frozen_no_update",
    f"""CREATE TRIGGER goldkey_frozen_no_update BEFORE UPDATE ON {KEY}
        FOR EACH ROW WHEN OLD.status = 'frozen'
            OR EXISTS (SELECT 1 FROM {KEY} k WHERE k.id <> OLD.id AND (k.id = NEW.id OR k.version = NEW.version)
                       AND k.status = 'frozen')
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: key row'); END""",
]
# The triggers as adjudication 0003 and keys 0002 created them.
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_insert",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_update",
    "DROP TRIGGER IF EXISTS goldkey_frozen_no_update",
    f"""CREATE TRIGGER goldkey_frozen_no_update BEFORE UPDATE ON {KEY}
        FOR EACH ROW WHEN OLD.status = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: key row'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_update BEFORE UPDATE ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = OLD.key_id) = 'frozen'
                       OR (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_insert BEFORE INSERT ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_replace BEFORE INSERT ON {ENTRY}
            FOR EACH ROW WHEN EXISTS (
                SELECT 1 FROM {ENTRY} e JOIN {KEY} k ON k.id = e.key_id
                WHERE k.status = 'frozen' AND (e.id = NEW.id OR (e.key_id = NEW.key_id AND e.external_id = NEW.external_id)))
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
]

# restrict_violation (23001) surfaces as IntegrityError, as the row trigger's does.
POSTGRES_FORWARD = [
    f"DROP TRIGGER IF EXISTS keyentry_frozen_immutable ON {ENTRY}",
    f"""CREATE TRIGGER keyentry_frozen_immutable BEFORE UPDATE OR DELETE ON {ENTRY}
        FOR EACH ROW EXECUTE FUNCTION goldkey_refuse_frozen_entry()""",
    f"""CREATE OR REPLACE FUNCTION keyentry_refuse_frozen_insert() RETURNS trigger AS $$
    DECLARE
        entry text;
    BEGIN
        SELECT n.external_id INTO entry FROM inserted n
            WHERE n.key_id IN (SELECT id FROM {KEY} WHERE status = 'frozen') LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '{MESSAGE}: entry (%)', entry USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER keyentry_frozen_no_insert AFTER INSERT ON {ENTRY}
        REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION keyentry_refuse_frozen_insert()""",
]
# The row trigger as adjudication 0003 created it (its function, still there, checks INSERT too).
POSTGRES_BACKWARD = [
    f"DROP TRIGGER IF EXISTS keyentry_frozen_no_insert ON {ENTRY}",
    "DROP FUNCTION IF EXISTS keyentry_refuse_frozen_insert()",
    f"DROP TRIGGER IF EXISTS keyentry_frozen_immutable ON {ENTRY}",
    f"""CREATE TRIGGER keyentry_frozen_immutable BEFORE INSERT OR UPDATE OR DELETE ON {ENTRY}
        FOR EACH ROW EXECUTE FUNCTION goldkey_refuse_frozen_entry()""",
]

STATEMENTS = {
    "sqlite": (SQLITE_FORWARD, SQLITE_BACKWARD),
    "postgresql": (POSTGRES_FORWARD, POSTGRES_BACKWARD),
}


def _run(schema_editor, which: int) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no immutability triggers for database vendor '{vendor}'")
    # A plain cursor: the PL/pgSQL bodies contain '%' placeholders of their own, not query parameters.
    with schema_editor.connection.cursor() as cursor:
        for sql in STATEMENTS[vendor][which]:
            cursor.execute(sql)


def forward(apps, schema_editor):
    _run(schema_editor, 0)


def backward(apps, schema_editor):
    _run(schema_editor, 1)


class Migration(migrations.Migration):

    dependencies = [
        ("keys", "0009_erratum_add"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="keyentry",
                    name="key",
                    field=models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="entries",
                        to="keys.goldkey",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX {KEY_ID_INDEX}",
                    f'CREATE INDEX {KEY_ID_INDEX} ON "{ENTRY}" ("key_id")',
                ),
            ],
        ),
    ]
