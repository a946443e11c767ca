"""A frozen campaign's trail stays where it was sealed: its enrollments and assignments are sealed too,
and no statement can put another row in the place of a sealed one.

The sealed answers and decisions (keys 0002) name their campaign through their assignment and its
enrollment. Those two rows were not sealed, so moving an enrollment to an open campaign (or an
assignment to another item) made the sealed answers editable again or made them answer another item.
Now an assignment of a frozen campaign refuses INSERT, UPDATE and DELETE; an enrollment of one refuses
INSERT and DELETE, and an UPDATE of what names it and its order (id, campaign, annotator, pseudonym,
order seed and source), while the milestones an annotator's pages record stay writable.

SQLite's UPDATE OR REPLACE deletes the row it lands on without firing a delete trigger: a draft's row
given a sealed row's id replaced the sealed one. Every sealed table's update trigger now also refuses
an update onto a sealed row's id (and the campaign's onto a frozen campaign's id or slug). The other
unique columns of these tables name the campaign, whose own check refuses the move already.

PostgreSQL has no REPLACE; its inserts are checked by one statement trigger over the new rows (a
campaign's creation writes 200,000 assignments in one COPY, which a call per row would slow), updates
and deletes by a row trigger, TRUNCATE as for the other sealed tables.

The SQL is written out here: a migration must keep doing what it did when it was written, whatever the
live code becomes. `STATEMENTS[vendor]` is (forward, backward); keys.triggers runs them in migration order.
"""

from django.db import migrations

MESSAGE = "frozen campaigns are sealed"
CAMPAIGN = "annotation_campaign"
ENROLLMENT = "annotation_enrollment"
ASSIGNMENT = "annotation_assignment"

# The campaign of a row, per table already sealed (as keys 0002 has it), from a row alias.
SEALED = (
    ("annotation_answer", "SELECT e.campaign_id FROM annotation_assignment a "
     "JOIN annotation_enrollment e ON e.id = a.enrollment_id WHERE a.id = {row}.assignment_id"),
    ("annotation_answerrevision", "SELECT e.campaign_id FROM annotation_answer x "
     "JOIN annotation_assignment a ON a.id = x.assignment_id "
     "JOIN annotation_enrollment e ON e.id = a.enrollment_id WHERE x.id = {row}.answer_id"),
    ("adjudication_decision", "SELECT {row}.campaign_id"),
    ("adjudication_decisionrevision", "SELECT d.campaign_id FROM adjudication_decision d WHERE d.id = {row}.decision_id"),
    (ENROLLMENT, "SELECT {row}.campaign_id"),
    (ASSIGNMENT, f"SELECT e.campaign_id FROM {ENROLLMENT} e WHERE e.id = {{row}}.enrollment_id"),
)
CAMPAIGN_OF = dict(SEALED)
# What names an enrollment and the order its annotator worked in (the datasheet reports it).
ENROLLMENT_IDENTITY = ("id", "campaign_id", "annotator_id", "pseudonym", "order_seed", "order_source", "imported_order_seed")


def _frozen(table: str, row: str) -> str:
    return f"(SELECT status FROM {CAMPAIGN} WHERE id = ({CAMPAIGN_OF[table].format(row=row)})) = 'frozen'"


def _onto_sealed_row(table: str) -> str:
    """An update that gives a row another row's id, where that row is sealed (REPLACE would delete it)."""
    return f"(NEW.id <> OLD.id AND EXISTS (SELECT 1 FROM {table} p WHERE p.id = NEW.id AND {_frozen(table, 'p')}))"


def _sqlite_trigger(table: str, op: str, when: str) -> str:
    return (f"CREATE TRIGGER {table}_sealed_no_{op} BEFORE {op.upper()} ON {table}\n"
            f"    FOR EACH ROW WHEN {when}\n    BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END")


def _sqlite_forward() -> list[str]:
    statements = []
    for table in ("annotation_answer", "annotation_answerrevision", "adjudication_decision", "adjudication_decisionrevision"):
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_sealed_no_update",
            _sqlite_trigger(table, "update", f"{_frozen(table, 'OLD')} OR {_frozen(table, 'NEW')} OR {_onto_sealed_row(table)}"),
        ]
    changed = " OR ".join(f"NEW.{column} IS NOT OLD.{column}" for column in ENROLLMENT_IDENTITY)
    on_sealed_insert = {
        table: f"EXISTS (SELECT 1 FROM {table} p WHERE p.id = NEW.id AND {_frozen(table, 'p')})"
        for table in (ENROLLMENT, ASSIGNMENT)
    }
    statements += [
        _sqlite_trigger(ENROLLMENT, "insert", f"{_frozen(ENROLLMENT, 'NEW')} OR {on_sealed_insert[ENROLLMENT]}"),
        _sqlite_trigger(ENROLLMENT, "update", f"({_frozen(ENROLLMENT, 'OLD')} AND ({changed})) OR ({_frozen(ENROLLMENT, 'NEW')} "
                                              f"AND NEW.campaign_id IS NOT OLD.campaign_id) OR {_onto_sealed_row(ENROLLMENT)}"),
        _sqlite_trigger(ENROLLMENT, "delete", _frozen(ENROLLMENT, "OLD")),
        _sqlite_trigger(ASSIGNMENT, "insert", f"{_frozen(ASSIGNMENT, 'NEW')} OR {on_sealed_insert[ASSIGNMENT]}"),
        _sqlite_trigger(ASSIGNMENT, "update", f"{_frozen(ASSIGNMENT, 'OLD')} OR {_frozen(ASSIGNMENT, 'NEW')} OR {_onto_sealed_row(ASSIGNMENT)}"),
        _sqlite_trigger(ASSIGNMENT, "delete", _frozen(ASSIGNMENT, "OLD")),
        f"DROP TRIGGER IF EXISTS {CAMPAIGN}_sealed_no_update",
        f"""CREATE TRIGGER {CAMPAIGN}_sealed_no_update BEFORE UPDATE ON {CAMPAIGN}
            FOR EACH ROW WHEN OLD.status = 'frozen' AND (NEW.status <> 'frozen' OR NEW.item_set_id <> OLD.item_set_id
                OR NEW.protocol <> OLD.protocol OR NEW.seed <> OLD.seed OR NEW.slug <> OLD.slug OR NEW.id <> OLD.id)
                OR EXISTS (SELECT 1 FROM {CAMPAIGN} c WHERE c.id <> OLD.id AND (c.id = NEW.id OR c.slug = NEW.slug)
                           AND c.status = 'frozen')
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {CAMPAIGN}'); END""",
    ]
    return statements


def _sqlite_backward() -> list[str]:
    """The update triggers as keys 0002 created them; the enrollments' and assignments' removed."""
    statements = [f"DROP TRIGGER IF EXISTS {table}_sealed_no_{op}" for table in (ENROLLMENT, ASSIGNMENT)
                  for op in ("insert", "update", "delete")]
    for table in ("annotation_answer", "annotation_answerrevision", "adjudication_decision", "adjudication_decisionrevision"):
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_sealed_no_update",
            _sqlite_trigger(table, "update", f"{_frozen(table, 'OLD')} OR {_frozen(table, 'NEW')}"),
        ]
    return statements + [
        f"DROP TRIGGER IF EXISTS {CAMPAIGN}_sealed_no_update",
        f"""CREATE TRIGGER {CAMPAIGN}_sealed_no_update BEFORE UPDATE ON {CAMPAIGN}
            FOR EACH ROW WHEN OLD.status = 'frozen' AND (NEW.status <> 'frozen' OR NEW.item_set_id <> OLD.item_set_id
                OR NEW.protocol <> OLD.protocol OR NEW.seed <> OLD.seed OR NEW.slug <> OLD.slug)
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {CAMPAIGN}'); END""",
    ]


# PostgreSQL: a row's campaign by one primary-key lookup per step, as keys 0002 does it (a join planned
# while the tables were empty could turn into sequential scans once they are not).
def _pg_campaign_frozen(table: str, row: str) -> str:
    campaign = f"{row}.campaign_id" if table == ENROLLMENT else \
        f"(SELECT campaign_id FROM {ENROLLMENT} WHERE id = {row}.enrollment_id)"
    return f"coalesce((SELECT status = 'frozen' FROM {CAMPAIGN} WHERE id = {campaign}), false)"


def _postgres_forward() -> list[str]:
    statements = []
    for table in (ENROLLMENT, ASSIGNMENT):
        if table == ENROLLMENT:
            changed = " OR ".join(f"NEW.{column} IS DISTINCT FROM OLD.{column}" for column in ENROLLMENT_IDENTITY)
            update = (f"({_pg_campaign_frozen(table, 'OLD')} AND ({changed})) OR "
                      f"(NEW.campaign_id IS DISTINCT FROM OLD.campaign_id AND {_pg_campaign_frozen(table, 'NEW')})")
        else:
            update = f"{_pg_campaign_frozen(table, 'OLD')} OR {_pg_campaign_frozen(table, 'NEW')}"
        new_campaigns = ("SELECT n.campaign_id FROM inserted n" if table == ENROLLMENT else
                         f"SELECT e.campaign_id FROM {ENROLLMENT} e WHERE e.id IN (SELECT DISTINCT n.enrollment_id FROM inserted n)")
        statements += [
            f"""CREATE OR REPLACE FUNCTION {table}_refuse_sealed() RETURNS trigger AS $$
            BEGIN
                IF TG_OP = 'DELETE' AND {_pg_campaign_frozen(table, 'OLD')} THEN
                    RAISE EXCEPTION '{MESSAGE}: {table}' USING ERRCODE = 'restrict_violation';
                END IF;
                IF TG_OP = 'UPDATE' AND ({update}) THEN
                    RAISE EXCEPTION '{MESSAGE}: {table}' USING ERRCODE = 'restrict_violation';
                END IF;
                IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql""",
            f"""CREATE TRIGGER {table}_sealed BEFORE UPDATE OR DELETE ON {table}
                FOR EACH ROW EXECUTE FUNCTION {table}_refuse_sealed()""",
            f"""CREATE OR REPLACE FUNCTION {table}_refuse_sealed_insert() RETURNS trigger AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM {CAMPAIGN} WHERE status = 'frozen' AND id IN ({new_campaigns})) THEN
                    RAISE EXCEPTION '{MESSAGE}: {table}' USING ERRCODE = 'restrict_violation';
                END IF;
                RETURN NULL;
            END $$ LANGUAGE plpgsql""",
            f"""CREATE TRIGGER {table}_sealed_no_insert AFTER INSERT ON {table}
                REFERENCING NEW TABLE AS inserted
                FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse_sealed_insert()""",
            f"""CREATE TRIGGER {table}_sealed_no_truncate BEFORE TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION sealed_campaign_refuse_truncate()""",
        ]
    return statements


def _postgres_backward() -> list[str]:
    statements = []
    for table in (ENROLLMENT, ASSIGNMENT):
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_sealed ON {table}",
            f"DROP TRIGGER IF EXISTS {table}_sealed_no_insert ON {table}",
            f"DROP TRIGGER IF EXISTS {table}_sealed_no_truncate ON {table}",
            f"DROP FUNCTION IF EXISTS {table}_refuse_sealed()",
            f"DROP FUNCTION IF EXISTS {table}_refuse_sealed_insert()",
        ]
    return statements


STATEMENTS = {
    "sqlite": (_sqlite_forward(), _sqlite_backward()),
    "postgresql": (_postgres_forward(), _postgres_backward()),
}


def _run(schema_editor, which: int) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no sealing triggers for database vendor '{vendor}'")
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
        ("keys", "0010_keyentry_insert_checks"),
        ("annotation", "0010_assignment_unique_item_leads_with_item"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
