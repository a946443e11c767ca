"""Frozen gold keys and their entries become immutable at the database level (PostgreSQL and SQLite).

The SQL is written out here rather than imported from the app: a migration must keep doing what it
did when it was written, whatever the live code becomes.
"""

from django.db import migrations

KEY = "adjudication_goldkey"
ENTRY = "adjudication_keyentry"
MESSAGE = "frozen gold keys are immutable"

SQLITE_INSTALL = [
    f"""CREATE TRIGGER goldkey_frozen_no_update BEFORE UPDATE ON {KEY}
        FOR EACH ROW WHEN OLD.status = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: key row'); END""",
    f"""CREATE TRIGGER goldkey_frozen_no_delete BEFORE DELETE ON {KEY}
        FOR EACH ROW WHEN OLD.status = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: key row'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_insert BEFORE INSERT ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_update BEFORE UPDATE ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = OLD.key_id) = 'frozen'
                       OR (SELECT status FROM {KEY} WHERE id = NEW.key_id) = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
    f"""CREATE TRIGGER keyentry_frozen_no_delete BEFORE DELETE ON {ENTRY}
        FOR EACH ROW WHEN (SELECT status FROM {KEY} WHERE id = OLD.key_id) = 'frozen'
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: entry'); END""",
]
SQLITE_UNINSTALL = [
    "DROP TRIGGER IF EXISTS goldkey_frozen_no_update",
    "DROP TRIGGER IF EXISTS goldkey_frozen_no_delete",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_insert",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_update",
    "DROP TRIGGER IF EXISTS keyentry_frozen_no_delete",
]

# restrict_violation (23001) surfaces as IntegrityError, like SQLite's RAISE(ABORT).
POSTGRES_INSTALL = [
    f"""CREATE OR REPLACE FUNCTION goldkey_refuse_frozen_key() RETURNS trigger AS $$
    BEGIN
        IF OLD.status = 'frozen' THEN
            RAISE EXCEPTION '{MESSAGE}: key row (%)', OLD.version USING ERRCODE = 'restrict_violation';
        END IF;
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    f"""CREATE OR REPLACE FUNCTION goldkey_refuse_frozen_entry() RETURNS trigger AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
            SELECT 1 FROM {KEY} WHERE id = OLD.key_id AND status = 'frozen') THEN
            RAISE EXCEPTION '{MESSAGE}: entry (%)', OLD.external_id USING ERRCODE = 'restrict_violation';
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
            SELECT 1 FROM {KEY} WHERE id = NEW.key_id AND status = 'frozen') THEN
            RAISE EXCEPTION '{MESSAGE}: entry (%)', NEW.external_id USING ERRCODE = 'restrict_violation';
        END IF;
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    # TRUNCATE skips row triggers: refuse it while any frozen key exists.
    f"""CREATE OR REPLACE FUNCTION goldkey_refuse_truncate() RETURNS trigger AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM {KEY} WHERE status = 'frozen') THEN
            RAISE EXCEPTION '{MESSAGE}: truncate' USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER goldkey_frozen_immutable BEFORE UPDATE OR DELETE ON {KEY}
        FOR EACH ROW EXECUTE FUNCTION goldkey_refuse_frozen_key()""",
    f"""CREATE TRIGGER keyentry_frozen_immutable BEFORE INSERT OR UPDATE OR DELETE ON {ENTRY}
        FOR EACH ROW EXECUTE FUNCTION goldkey_refuse_frozen_entry()""",
    f"""CREATE TRIGGER goldkey_no_truncate BEFORE TRUNCATE ON {KEY}
        FOR EACH STATEMENT EXECUTE FUNCTION goldkey_refuse_truncate()""",
    f"""CREATE TRIGGER keyentry_no_truncate BEFORE TRUNCATE ON {ENTRY}
        FOR EACH STATEMENT EXECUTE FUNCTION goldkey_refuse_truncate()""",
]
POSTGRES_UNINSTALL = [
    f"DROP TRIGGER IF EXISTS goldkey_frozen_immutable ON {KEY}",
    f"DROP TRIGGER IF EXISTS keyentry_frozen_immutable ON {ENTRY}",
    f"DROP TRIGGER IF EXISTS goldkey_no_truncate ON {KEY}",
    f"DROP TRIGGER IF EXISTS keyentry_no_truncate ON {ENTRY}",
    "DROP FUNCTION IF EXISTS goldkey_refuse_frozen_key()",
    "DROP FUNCTION IF EXISTS goldkey_refuse_frozen_entry()",
    "DROP FUNCTION IF EXISTS goldkey_refuse_truncate()",
]

STATEMENTS = {
    "sqlite": (SQLITE_INSTALL, SQLITE_UNINSTALL),
    "postgresql": (POSTGRES_INSTALL, POSTGRES_UNINSTALL),
}


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no immutability triggers for database vendor '{vendor}'")
    # A plain cursor: the PL/pgSQL bodies contain '%' placeholders of their own, not query parameters.
    with schema_editor.connection.cursor() as cursor:
        for sql in STATEMENTS[vendor][0]:
            cursor.execute(sql)


def uninstall(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for sql in STATEMENTS.get(schema_editor.connection.vendor, ((), ()))[1]:
            cursor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ("adjudication", "0002_keys_models"),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
