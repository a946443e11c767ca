"""On PostgreSQL, an assignment's references to its enrollment and its item are checked once per
statement, not once per row.

A foreign key constraint checks each inserted row on its own (a query and a row lock on the item, per
row): for a campaign's 200,000 assignments that was 3.8 s of the creation's 7.5 s, at commit. Here the
two foreign keys of `annotation_assignment` are replaced by triggers that enforce the same rule with
one query over all the rows a statement wrote:

- an INSERT of assignments (a statement trigger over the inserted rows) and an UPDATE that changes an
  assignment's enrollment or item (a row trigger, only for such an update: the answer saves that set
  the phase flags never run it) are refused unless every enrollment named exists and every item
  named is an item of its campaign's item set (which every campaign's creation gives it);
- a DELETE of items or enrollments (a statement trigger over the deleted rows), an UPDATE of their id,
  and a TRUNCATE that leaves assignments behind are refused while an assignment names them.

What a foreign key also does is lock: the rows it checked cannot be deleted until the checking
transaction ends, so two transactions cannot each see the other's rows absent. The triggers lock what
their check relies on, before checking (under READ COMMITTED, Django's and Goldkey's isolation level,
each check then sees every transaction that committed before its lock was granted):
- the inserted rows' enrollments, FOR KEY SHARE, as a foreign key would (a campaign has a few);
- the item sets of the rows' campaigns rather than each of the 100,000 items (which costs most of
  what a foreign key costs), FOR KEY SHARE; a DELETE of items, and a move of an item to another set,
  lock the item's set FOR UPDATE first, so it waits for an insert naming items of that set, and an
  insert waits for it.
A deleted or re-keyed enrollment row is locked by the DELETE or UPDATE itself. A check sees what
committed while it waited only because each statement of READ COMMITTED takes a new snapshot; under
REPEATABLE READ or SERIALIZABLE the transaction's older snapshot could miss the other side's rows (a
foreign key's own check uses a cross-check snapshot that PL/pgSQL has no access to), so the triggers
refuse to run there: such a transaction cannot write assignments or delete, re-key or move what they
name, rather than write an orphan.

The triggers are named `…_valid_references_…` so that they fire after the sealing triggers (keys
0002, 0011; PostgreSQL fires the triggers of one event in name order): a write to a frozen campaign's
rows is refused as sealed, whatever it names.

SQLite keeps its foreign keys (its checks are cheap: the creation takes 2.4-2.9 s there), and the
model's state keeps them too: a later migration that alters these fields puts a foreign key back on
PostgreSQL, which is slower but never weaker. Reversing this migration drops the triggers and adds
the two constraints again, validated over the rows then present.
"""

from django.db import migrations

ASSIGNMENT = "annotation_assignment"
ENROLLMENT = "annotation_enrollment"
ITEM = "items_item"
ITEM_SET = "items_itemset"
CAMPAIGN = "annotation_campaign"
# From this many inserted rows, the items are checked by one hash join over their item sets.
HASHED_FROM = 20_000

# The error a foreign key raises (SQLSTATE 23503), so that callers see the same IntegrityError.
VIOLATION = "USING ERRCODE = 'foreign_key_violation'"
# Every check here reads with the statement's snapshot, taken after its locks were granted: only under
# READ COMMITTED does it see what committed while it waited. Under REPEATABLE READ or SERIALIZABLE the
# snapshot is the transaction's, older than the lock, and the other side's rows could be missed (a
# foreign key's own check uses a cross-check snapshot, which PL/pgSQL cannot): such a transaction is
# refused, rather than trusted. Django and Goldkey run READ COMMITTED.
READ_COMMITTED = (
    "IF current_setting('transaction_isolation') <> 'read committed' THEN "
    "RAISE EXCEPTION '%: its rows'' references are checked under READ COMMITTED only (this transaction is %)', "
    "TG_TABLE_NAME, current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported'; END IF;"
)


def _refuse_named_delete(table: str, noun: str, lock: str = "") -> list[str]:
    """The function and statement trigger refusing a DELETE of `table` rows an assignment names (by its
    `<noun>_id`), after `lock`, the statement that makes a concurrent insert wait or be waited for."""
    return [
        f"""CREATE FUNCTION {table}_refuse_assigned_delete() RETURNS trigger AS $$
        DECLARE named text;
        BEGIN
            {READ_COMMITTED}
            {lock}
            SELECT a.{noun}_id::text INTO named FROM {ASSIGNMENT} a WHERE a.{noun}_id IN (SELECT id FROM removed) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{table}: {noun} % is still named by an assignment', named {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_valid_references_on_delete AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse_assigned_delete()""",
    ]


def _postgres_forward() -> list[str]:
    return [
        # The constraints, whatever they are called (Django's names hash the table and column names).
        f"""DO $$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT conname FROM pg_constraint
                WHERE conrelid = '{ASSIGNMENT}'::regclass AND contype = 'f'
                  AND confrelid IN ('{ENROLLMENT}'::regclass, '{ITEM}'::regclass)
            LOOP
                EXECUTE format('ALTER TABLE {ASSIGNMENT} DROP CONSTRAINT %I', name);
            END LOOP;
        END $$""",
        # Inserted assignments: lock what they name, then look for one that names nothing. The items are
        # looked up in their campaigns' item sets, the sets that were locked. Two forms of the item
        # lookup, each with its own cached plan: a few rows are looked up by primary key; a campaign's
        # creation (200,000 rows, where those lookups take 0.4 s) hashes the set's item ids instead.
        f"""CREATE FUNCTION {ASSIGNMENT}_check_references() RETURNS trigger AS $$
        DECLARE enrollments bigint[]; sets bigint[]; rows bigint; missing text;
        BEGIN
            {READ_COMMITTED}
            SELECT array_agg(enrollment_id ORDER BY enrollment_id), sum(n) INTO enrollments, rows
                FROM (SELECT enrollment_id, count(*) AS n FROM inserted GROUP BY enrollment_id) named;
            PERFORM 1 FROM {ENROLLMENT} WHERE id = ANY(enrollments) ORDER BY id FOR KEY SHARE;
            SELECT m::text INTO missing FROM unnest(enrollments) m
                WHERE NOT EXISTS (SELECT 1 FROM {ENROLLMENT} e WHERE e.id = m) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{ASSIGNMENT}: enrollment_id % names no enrollment', missing {VIOLATION};
            END IF;
            SELECT array_agg(DISTINCT c.item_set_id) INTO sets
                FROM {ENROLLMENT} e JOIN {CAMPAIGN} c ON c.id = e.campaign_id WHERE e.id = ANY(enrollments);
            PERFORM 1 FROM {ITEM_SET} WHERE id = ANY(sets) ORDER BY id FOR KEY SHARE;
            IF rows < {HASHED_FROM} THEN
                SELECT n.item_id::text INTO missing FROM inserted n
                    WHERE NOT EXISTS (SELECT 1 FROM {ITEM} i WHERE i.id = n.item_id AND i.item_set_id = ANY(sets)) LIMIT 1;
            ELSE
                SET LOCAL enable_nestloop = off;
                SELECT n.item_id::text INTO missing FROM inserted n
                    WHERE NOT EXISTS (SELECT 1 FROM {ITEM} i WHERE i.item_set_id = ANY(sets) AND i.id = n.item_id) LIMIT 1;
            END IF;
            IF FOUND THEN
                RAISE EXCEPTION '{ASSIGNMENT}: item_id % names no item of its campaign''s item set', missing {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql SET enable_nestloop = on SET work_mem = '64MB'""",
        f"""CREATE TRIGGER {ASSIGNMENT}_valid_references_on_insert AFTER INSERT ON {ASSIGNMENT}
            REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION {ASSIGNMENT}_check_references()""",
        # An assignment moved to another enrollment or item: the same check for its one row.
        f"""CREATE FUNCTION {ASSIGNMENT}_check_moved_references() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            PERFORM 1 FROM {ENROLLMENT} WHERE id = NEW.enrollment_id FOR KEY SHARE;
            IF NOT EXISTS (SELECT 1 FROM {ENROLLMENT} WHERE id = NEW.enrollment_id) THEN
                RAISE EXCEPTION '{ASSIGNMENT}: enrollment_id % names no enrollment', NEW.enrollment_id {VIOLATION};
            END IF;
            PERFORM 1 FROM {ITEM_SET} WHERE id = (
                SELECT c.item_set_id FROM {ENROLLMENT} e JOIN {CAMPAIGN} c ON c.id = e.campaign_id WHERE e.id = NEW.enrollment_id
            ) FOR KEY SHARE;
            IF NOT EXISTS (
                SELECT 1 FROM {ITEM} i JOIN {ENROLLMENT} e ON e.id = NEW.enrollment_id JOIN {CAMPAIGN} c ON c.id = e.campaign_id
                WHERE i.id = NEW.item_id AND i.item_set_id = c.item_set_id
            ) THEN
                RAISE EXCEPTION '{ASSIGNMENT}: item_id % names no item of its campaign''s item set', NEW.item_id {VIOLATION};
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {ASSIGNMENT}_valid_references_on_update BEFORE UPDATE ON {ASSIGNMENT}
            FOR EACH ROW WHEN (NEW.enrollment_id IS DISTINCT FROM OLD.enrollment_id OR NEW.item_id IS DISTINCT FROM OLD.item_id)
            EXECUTE FUNCTION {ASSIGNMENT}_check_moved_references()""",
        # Deleted items: wait for the inserts naming items of their sets, then look for assignments.
        *_refuse_named_delete(ITEM, "item", f"PERFORM 1 FROM {ITEM_SET} WHERE id IN (SELECT DISTINCT item_set_id FROM removed) "
                                            "ORDER BY id FOR UPDATE;"),
        # An item re-keyed or moved to another set: its old set is locked as a delete locks it.
        f"""CREATE FUNCTION {ITEM}_refuse_assigned_rekey() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            PERFORM 1 FROM {ITEM_SET} WHERE id = OLD.item_set_id FOR UPDATE;
            IF NEW.id IS DISTINCT FROM OLD.id AND EXISTS (SELECT 1 FROM {ASSIGNMENT} WHERE item_id = OLD.id) THEN
                RAISE EXCEPTION '{ITEM}: item % is still named by an assignment', OLD.id {VIOLATION};
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {ITEM}_valid_references_on_rekey BEFORE UPDATE ON {ITEM}
            FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.item_set_id IS DISTINCT FROM OLD.item_set_id)
            EXECUTE FUNCTION {ITEM}_refuse_assigned_rekey()""",
        # Deleted enrollments: the DELETE has locked each row, so an insert naming it waits, or is waited for.
        *_refuse_named_delete(ENROLLMENT, "enrollment"),
        f"""CREATE FUNCTION {ENROLLMENT}_refuse_assigned_rekey() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            IF EXISTS (SELECT 1 FROM {ASSIGNMENT} WHERE enrollment_id = OLD.id) THEN
                RAISE EXCEPTION '{ENROLLMENT}: enrollment % is still named by an assignment', OLD.id {VIOLATION};
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {ENROLLMENT}_valid_references_on_rekey BEFORE UPDATE ON {ENROLLMENT}
            FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id)
            EXECUTE FUNCTION {ENROLLMENT}_refuse_assigned_rekey()""",
        # TRUNCATE fires no DELETE trigger. After the statement, so that truncating the assignments in
        # the same statement (Django's flush truncates every table at once) is allowed, as a foreign
        # key allows it.
        f"""CREATE FUNCTION {ASSIGNMENT}_refuse_orphaning_truncate() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            IF EXISTS (SELECT 1 FROM {ASSIGNMENT}) THEN
                RAISE EXCEPTION '%: truncated while assignments name its rows', TG_TABLE_NAME {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        *(
            f"""CREATE TRIGGER {table}_valid_references_on_truncate AFTER TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION {ASSIGNMENT}_refuse_orphaning_truncate()"""
            for table in (ITEM, ENROLLMENT)
        ),
    ]


TRIGGERS = (
    (ASSIGNMENT, "valid_references_on_insert"), (ASSIGNMENT, "valid_references_on_update"),
    (ITEM, "valid_references_on_delete"), (ITEM, "valid_references_on_rekey"), (ITEM, "valid_references_on_truncate"),
    (ENROLLMENT, "valid_references_on_delete"), (ENROLLMENT, "valid_references_on_rekey"), (ENROLLMENT, "valid_references_on_truncate"),
)
FUNCTIONS = (
    f"{ASSIGNMENT}_check_references", f"{ASSIGNMENT}_check_moved_references", f"{ITEM}_refuse_assigned_delete",
    f"{ITEM}_refuse_assigned_rekey", f"{ENROLLMENT}_refuse_assigned_delete", f"{ENROLLMENT}_refuse_assigned_rekey",
    f"{ASSIGNMENT}_refuse_orphaning_truncate",
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite keeps its foreign keys
    # A plain cursor: the PL/pgSQL bodies hold '%' placeholders of their own, not query parameters.
    with schema_editor.connection.cursor() as cursor:
        for statement in _postgres_forward():
            cursor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, trigger in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_{trigger} ON {table}")
    for function in FUNCTIONS:
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
    # The constraints as Django names and creates them (DEFERRABLE INITIALLY DEFERRED).
    assignment = apps.get_model("annotation", "Assignment")
    for name in ("enrollment", "item"):
        field = assignment._meta.get_field(name)
        schema_editor.execute(schema_editor._create_fk_sql(assignment, field, "_fk_%(to_table)s_%(to_column)s"))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0010_assignment_unique_item_leads_with_item"),
        ("items", "0006_item_gate_rejected"),
    ]

    operations = [migrations.RunPython(forward, backward)]
