"""A frozen campaign is sealed in the database: its answers, answer history, decisions and decision
history refuse INSERT, UPDATE and DELETE, and the campaign row cannot leave the frozen state. The key
tables also refuse the SQLite `INSERT OR REPLACE` path (its implicit delete fires no delete trigger):
an insert may not carry a frozen key, nor land on a frozen key's row.

The services refuse first, with a clear message; these triggers are the wall for every other path
(admin, ORM update(), raw SQL). The SQL is written out here: a migration must keep doing what it did
when it was written, whatever the live code becomes.
"""

from django.db import migrations

MESSAGE = "frozen campaigns are sealed"
KEY_MESSAGE = "frozen gold keys are immutable"

# The campaign of a row, per table: (table, SQL giving the campaign id from a row alias "r").
SEALED = (
    ("annotation_answer", "SELECT e.campaign_id FROM annotation_assignment a "
     "JOIN annotation_enrollment e ON e.id = a.enrollment_id WHERE a.id = {row}.assignment_id"),
    ("annotation_answerrevision", "SELECT e.campaign_id FROM annotation_answer x "
     "JOIN annotation_assignment a ON a.id = x.assignment_id "
     "JOIN annotation_enrollment e ON e.id = a.enrollment_id WHERE x.id = {row}.answer_id"),
    ("adjudication_decision", "SELECT {row}.campaign_id"),
    ("adjudication_decisionrevision", "SELECT d.campaign_id FROM adjudication_decision d WHERE d.id = {row}.decision_id"),
)


def _frozen(campaign_sql: str) -> str:
    return f"(SELECT status FROM annotation_campaign WHERE id = ({campaign_sql})) = 'frozen'"


def _sqlite_install() -> list[str]:
    statements = []
    for table, campaign in SEALED:
        new, old = _frozen(campaign.format(row="NEW")), _frozen(campaign.format(row="OLD"))
        # An insert that replaces an existing row (same id) must not land on a sealed one either.
        on_sealed_row = f"EXISTS (SELECT 1 FROM {table} p WHERE p.id = NEW.id AND {_frozen(campaign.format(row='p'))})"
        statements += [
            f"""CREATE TRIGGER {table}_sealed_no_insert BEFORE INSERT ON {table}
                FOR EACH ROW WHEN {new} OR {on_sealed_row}
                BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END""",
            f"""CREATE TRIGGER {table}_sealed_no_update BEFORE UPDATE ON {table}
                FOR EACH ROW WHEN {old} OR {new}
                BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END""",
            f"""CREATE TRIGGER {table}_sealed_no_delete BEFORE DELETE ON {table}
                FOR EACH ROW WHEN {old}
                BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END""",
        ]
    statements += [
        f"""CREATE TRIGGER annotation_campaign_sealed_no_update BEFORE UPDATE ON annotation_campaign
            FOR EACH ROW WHEN OLD.status = 'frozen' AND (NEW.status <> 'frozen' OR NEW.item_set_id <> OLD.item_set_id
                OR NEW.protocol <> OLD.protocol OR NEW.seed <> OLD.seed OR NEW.slug <> OLD.slug)
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: annotation_campaign'); END""",
        f"""CREATE TRIGGER annotation_campaign_sealed_no_delete BEFORE DELETE ON annotation_campaign
            FOR EACH ROW WHEN OLD.status = 'frozen'
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: annotation_campaign'); END""",
        f"""CREATE TRIGGER annotation_campaign_sealed_no_replace BEFORE INSERT ON annotation_campaign
            FOR EACH ROW WHEN NEW.status = 'frozen'
                OR EXISTS (SELECT 1 FROM annotation_campaign c WHERE (c.id = NEW.id OR c.slug = NEW.slug) AND c.status = 'frozen')
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: annotation_campaign'); END""",
        # Keys are frozen by UPDATE from a draft, never inserted frozen; and an insert may not replace a
        # frozen key or one of its entries (SQLite's INSERT OR REPLACE deletes without a delete trigger).
        f"""CREATE TRIGGER goldkey_frozen_no_insert BEFORE INSERT ON adjudication_goldkey
            FOR EACH ROW WHEN NEW.status = 'frozen'
                OR EXISTS (SELECT 1 FROM adjudication_goldkey k WHERE (k.id = NEW.id OR k.version = NEW.version) AND k.status = 'frozen')
            BEGIN SELECT RAISE(ABORT, '{KEY_MESSAGE}: key row'); END""",
        f"""CREATE TRIGGER keyentry_frozen_no_replace BEFORE INSERT ON adjudication_keyentry
            FOR EACH ROW WHEN EXISTS (
                SELECT 1 FROM adjudication_keyentry e JOIN adjudication_goldkey k ON k.id = e.key_id
                WHERE k.status = 'frozen' AND (e.id = NEW.id OR (e.key_id = NEW.key_id AND e.external_id = NEW.external_id)))
            BEGIN SELECT RAISE(ABORT, '{KEY_MESSAGE}: entry'); END""",
    ]
    return statements


def _sqlite_uninstall() -> list[str]:
    names = [f"{table}_sealed_no_{op}" for table, _ in SEALED for op in ("insert", "update", "delete")]
    names += [
        "annotation_campaign_sealed_no_update", "annotation_campaign_sealed_no_delete",
        "annotation_campaign_sealed_no_replace", "goldkey_frozen_no_insert", "keyentry_frozen_no_replace",
    ]
    return [f"DROP TRIGGER IF EXISTS {name}" for name in names]


# PostgreSQL: the campaign of a row found by one primary-key lookup per step (row column -> table.column),
# so the trigger's cached plan stays an index lookup however the tables grow (a join planned while the
# tables were empty can turn into nested sequential scans once they are not).
PATH_TO_CAMPAIGN = {
    "annotation_answer": ("assignment_id", ("annotation_assignment", "enrollment_id"), ("annotation_enrollment", "campaign_id")),
    "annotation_answerrevision": (
        "answer_id", ("annotation_answer", "assignment_id"), ("annotation_assignment", "enrollment_id"),
        ("annotation_enrollment", "campaign_id"),
    ),
    "adjudication_decision": ("campaign_id",),
    "adjudication_decisionrevision": ("decision_id", ("adjudication_decision", "campaign_id")),
}


def _pg_frozen(row: str, path: tuple) -> str:
    """A PL/pgSQL block setting `frozen` for the row `row` (NEW or OLD)."""
    lines = [f"ref := {row}.{path[0]};"]
    for table, column in path[1:]:
        lines.append(f"SELECT {column} INTO ref FROM {table} WHERE id = ref;")
    lines.append("SELECT status = 'frozen' INTO frozen FROM annotation_campaign WHERE id = ref;")
    return "\n                ".join(lines)


def _postgres_install() -> list[str]:
    statements = []
    for table, _ in SEALED:
        path = PATH_TO_CAMPAIGN[table]
        function = f"{table}_refuse_sealed"
        statements += [
            f"""CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
            DECLARE
                ref bigint;
                frozen boolean;
            BEGIN
                IF TG_OP IN ('UPDATE', 'DELETE') THEN
                    {_pg_frozen("OLD", path)}
                    IF frozen THEN
                        RAISE EXCEPTION '{MESSAGE}: {table}' USING ERRCODE = 'restrict_violation';
                    END IF;
                END IF;
                IF TG_OP IN ('INSERT', 'UPDATE') THEN
                    {_pg_frozen("NEW", path)}
                    IF frozen THEN
                        RAISE EXCEPTION '{MESSAGE}: {table}' USING ERRCODE = 'restrict_violation';
                    END IF;
                END IF;
                IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql""",
            f"""CREATE TRIGGER {table}_sealed BEFORE INSERT OR UPDATE OR DELETE ON {table}
                FOR EACH ROW EXECUTE FUNCTION {function}()""",
            f"""CREATE TRIGGER {table}_sealed_no_truncate BEFORE TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION sealed_campaign_refuse_truncate()""",
        ]
    return [
        f"""CREATE OR REPLACE FUNCTION sealed_campaign_refuse_truncate() RETURNS trigger AS $$
        BEGIN
            IF EXISTS (SELECT 1 FROM annotation_campaign WHERE status = 'frozen') THEN
                RAISE EXCEPTION '{MESSAGE}: truncate' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE OR REPLACE FUNCTION annotation_campaign_refuse_sealed() RETURNS trigger AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND OLD.status = 'frozen' THEN
                RAISE EXCEPTION '{MESSAGE}: annotation_campaign' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'UPDATE' AND OLD.status = 'frozen' AND (NEW.status <> 'frozen'
                OR NEW.item_set_id <> OLD.item_set_id OR NEW.protocol <> OLD.protocol OR NEW.seed <> OLD.seed
                OR NEW.slug <> OLD.slug) THEN
                RAISE EXCEPTION '{MESSAGE}: annotation_campaign' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'INSERT' AND NEW.status = 'frozen' THEN
                RAISE EXCEPTION '{MESSAGE}: annotation_campaign' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        """CREATE TRIGGER annotation_campaign_sealed BEFORE INSERT OR UPDATE OR DELETE ON annotation_campaign
            FOR EACH ROW EXECUTE FUNCTION annotation_campaign_refuse_sealed()""",
        f"""CREATE OR REPLACE FUNCTION goldkey_refuse_frozen_insert() RETURNS trigger AS $$
        BEGIN
            IF NEW.status = 'frozen' THEN
                RAISE EXCEPTION '{KEY_MESSAGE}: key row (%)', NEW.version USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        """CREATE TRIGGER goldkey_frozen_no_insert BEFORE INSERT ON adjudication_goldkey
            FOR EACH ROW EXECUTE FUNCTION goldkey_refuse_frozen_insert()""",
        *statements,
    ]


def _postgres_uninstall() -> list[str]:
    statements = []
    for table, _ in SEALED:
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_sealed ON {table}",
            f"DROP TRIGGER IF EXISTS {table}_sealed_no_truncate ON {table}",
            f"DROP FUNCTION IF EXISTS {table}_refuse_sealed()",
        ]
    return statements + [
        "DROP TRIGGER IF EXISTS annotation_campaign_sealed ON annotation_campaign",
        "DROP FUNCTION IF EXISTS annotation_campaign_refuse_sealed()",
        "DROP FUNCTION IF EXISTS sealed_campaign_refuse_truncate()",
        "DROP TRIGGER IF EXISTS goldkey_frozen_no_insert ON adjudication_goldkey",
        "DROP FUNCTION IF EXISTS goldkey_refuse_frozen_insert()",
    ]


STATEMENTS = {
    "sqlite": (_sqlite_install(), _sqlite_uninstall()),
    "postgresql": (_postgres_install(), _postgres_uninstall()),
}


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no sealing triggers for database vendor '{vendor}'")
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
        ("keys", "0001_gold_keys_from_adjudication"),
        ("annotation", "0003_campaign_lifecycle"),
        ("adjudication", "0004_gold_keys_move_to_keys_app"),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
