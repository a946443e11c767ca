"""On PostgreSQL, a key entry's references to its key and its item are checked once per statement, not
once per row.

A foreign key constraint checks each inserted row on its own, a query and a row lock per row: a
100,000-entry freeze paid 0.6-0.9 s for them at its commit (the whole commit, measured with
bench/export_bench.py --stages), while nothing else could run. Here the two foreign keys of
`adjudication_keyentry` are replaced by triggers that enforce the same rule with one query over all
the rows a statement wrote, as annotation 0011 did for the assignments:

- an INSERT of entries (a statement trigger over the inserted rows) and an UPDATE that changes an
  entry's key or item (a row trigger, only for such an update) are refused unless every key and every
  item named exists;
- a DELETE of keys or items (statement triggers over the deleted rows), an UPDATE of their id, and a
  TRUNCATE that leaves entries behind are refused while an entry names them.

What a foreign key also does is lock, so that two transactions cannot each see the other's rows absent.
The triggers lock what their check relies on, before checking (under READ COMMITTED each check then
sees every transaction that committed before its lock was granted):
- the inserted rows' keys, FOR KEY SHARE, as a foreign key would (an insert names one key); a DELETE or
  a change of id locks the key row itself;
- the item sets of the named items rather than each of the 100,000 items, FOR KEY SHARE, and the items
  must still be in those sets when checked; a DELETE of items, and a move or re-key of an item, lock
  the item's set FOR UPDATE first (annotation 0011's item triggers do; the re-key trigger here does
  too), so they wait for an insert naming items of that set, and an insert waits for them.
Like annotation 0011's, the triggers refuse to run outside READ COMMITTED, where a check's snapshot
would be older than its lock.

The triggers are named `…_valid_key_references_…` (apart from annotation 0011's `…_valid_references_…`), so
that on the entries they fire after the sealing ones of keys 0010 (PostgreSQL fires the triggers of one
event in name order): an insert into a frozen key is refused as frozen, whatever it names.

SQLite keeps its foreign keys, and the model's state keeps them too: a later migration that alters these
fields puts a foreign key back on PostgreSQL, which is slower but never weaker. Reversing this migration
drops the triggers and adds the two constraints again, validated over the rows then present.
"""

from django.db import migrations

ENTRY = "adjudication_keyentry"
KEY = "adjudication_goldkey"
ITEM = "items_item"
ITEM_SET = "items_itemset"
# From this many inserted rows, the items are read by hash joins; below it, by primary key.
HASHED_FROM = 20_000

VIOLATION = "USING ERRCODE = 'foreign_key_violation'"
# As annotation 0011: only under READ COMMITTED does a check see what committed while it waited for its lock.
READ_COMMITTED = (
    "IF current_setting('transaction_isolation') <> 'read committed' THEN "
    "RAISE EXCEPTION '%: its rows'' references are checked under READ COMMITTED only (this transaction is %)', "
    "TG_TABLE_NAME, current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported'; END IF;"
)

# The check of a set of entries (`rows`: a relation `n` of key_id, item_id), shared by the insert and the
# update triggers: lock the keys, then the items' sets, then look for a key or an item that is not there.
CHECK = f"""
            SELECT array_agg(k ORDER BY k) INTO keys FROM (SELECT DISTINCT n.key_id AS k FROM {{rows}}) named;
            PERFORM 1 FROM {KEY} WHERE id = ANY(keys) ORDER BY id FOR KEY SHARE;
            SELECT k::text INTO missing FROM unnest(keys) k WHERE NOT EXISTS (SELECT 1 FROM {KEY} g WHERE g.id = k) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{ENTRY}: key_id % names no gold key', missing {VIOLATION};
            END IF;
            -- A join, not a semi-join: for 100,000 rows PostgreSQL then hashes the smaller side (83 ms, not 150).
            SELECT array_agg(s ORDER BY s) INTO sets
                FROM (SELECT DISTINCT i.item_set_id AS s FROM {{rows}} JOIN {ITEM} i ON i.id = n.item_id) named;
            PERFORM 1 FROM {ITEM_SET} WHERE id = ANY(sets) ORDER BY id FOR KEY SHARE;
            -- Still in a locked set: an item moved meanwhile to a set this insert has not locked could be
            -- deleted under that set's lock without waiting for it.
            SELECT n.item_id::text INTO missing FROM {{rows}}
                WHERE NOT EXISTS (SELECT 1 FROM {ITEM} i WHERE i.id = n.item_id AND i.item_set_id = ANY(sets)) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{ENTRY}: item_id % names no item', missing {VIOLATION};
            END IF;"""


def _refuse_named(table: str, noun: str, lock: str = "") -> list[str]:
    """The function and statement trigger refusing a DELETE of `table` rows an entry names (by its
    `<noun>_id`), after `lock`, the statement that makes a concurrent insert wait or be waited for."""
    return [
        f"""CREATE FUNCTION {table}_refuse_keyed_delete() RETURNS trigger AS $$
        DECLARE named text;
        BEGIN
            {READ_COMMITTED}
            {lock}
            SELECT e.{noun}_id::text INTO named FROM {ENTRY} e WHERE e.{noun}_id IN (SELECT id FROM removed) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{table}: {noun} % is still named by a key entry', named {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_valid_key_references_on_delete AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse_keyed_delete()""",
    ]


def _refuse_rekey(table: str, noun: str, lock: str = "") -> list[str]:
    """The row trigger refusing a change of id of a `table` row an entry names."""
    return [
        f"""CREATE FUNCTION {table}_refuse_keyed_rekey() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            {lock}
            IF EXISTS (SELECT 1 FROM {ENTRY} WHERE {noun}_id = OLD.id) THEN  -- the trigger's WHEN: the id changed
                RAISE EXCEPTION '{table}: {noun} % is still named by a key entry', OLD.id {VIOLATION};
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_valid_key_references_on_rekey BEFORE UPDATE ON {table}
            FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id)
            EXECUTE FUNCTION {table}_refuse_keyed_rekey()""",
    ]


def _postgres_forward() -> list[str]:
    return [
        # The constraints, whatever they are called (Django's names hash the table and column names).
        f"""DO $$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT conname FROM pg_constraint
                WHERE conrelid = '{ENTRY}'::regclass AND contype = 'f'
                  AND confrelid IN ('{KEY}'::regclass, '{ITEM}'::regclass)
            LOOP
                EXECUTE format('ALTER TABLE {ENTRY} DROP CONSTRAINT %I', name);
            END LOOP;
        END $$""",
        # Inserted entries. Two forms of the item lookups, each with its own cached plan: a few rows (an
        # erratum's added item) by primary key; a freeze's 100,000 by hash joins.
        f"""CREATE FUNCTION {ENTRY}_check_references() RETURNS trigger AS $$
        DECLARE keys bigint[]; sets bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            IF (SELECT count(*) FROM inserted) >= {HASHED_FROM} THEN
                SET LOCAL enable_nestloop = off;
            END IF;
            {CHECK.format(rows="inserted AS n")}
            RETURN NULL;
        END $$ LANGUAGE plpgsql SET enable_nestloop = on SET work_mem = '64MB'""",
        f"""CREATE TRIGGER keyentry_valid_key_references_on_insert AFTER INSERT ON {ENTRY}
            REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION {ENTRY}_check_references()""",
        # An entry moved to another key or item: the same check for its one row.
        f"""CREATE FUNCTION {ENTRY}_check_moved_references() RETURNS trigger AS $$
        DECLARE keys bigint[]; sets bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            {CHECK.format(rows="(VALUES (NEW.key_id, NEW.item_id)) AS n (key_id, item_id)")}
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER keyentry_valid_key_references_on_update BEFORE UPDATE ON {ENTRY}
            FOR EACH ROW WHEN (NEW.key_id IS DISTINCT FROM OLD.key_id OR NEW.item_id IS DISTINCT FROM OLD.item_id)
            EXECUTE FUNCTION {ENTRY}_check_moved_references()""",
        # Deleted keys: the DELETE has locked each key row, so an insert naming it waits, or is waited for.
        *_refuse_named(KEY, "key"),
        *_refuse_rekey(KEY, "key"),
        # Deleted items: their sets locked first, as annotation 0011's delete trigger locks them.
        *_refuse_named(ITEM, "item", f"PERFORM 1 FROM {ITEM_SET} WHERE id IN (SELECT DISTINCT item_set_id FROM removed) "
                                     "ORDER BY id FOR UPDATE;"),
        *_refuse_rekey(ITEM, "item", f"PERFORM 1 FROM {ITEM_SET} WHERE id = OLD.item_set_id FOR UPDATE;"),
        # TRUNCATE fires no DELETE trigger. After the statement, so that truncating the entries in the
        # same statement (Django's flush truncates every table at once) is allowed, as a foreign key allows it.
        f"""CREATE FUNCTION {ENTRY}_refuse_orphaning_truncate() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            IF EXISTS (SELECT 1 FROM {ENTRY}) THEN
                RAISE EXCEPTION '%: truncated while key entries name its rows', TG_TABLE_NAME {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        *(
            f"""CREATE TRIGGER {table}_valid_key_references_on_truncate AFTER TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION {ENTRY}_refuse_orphaning_truncate()"""
            for table in (KEY, ITEM)
        ),
    ]


TRIGGERS = (
    (ENTRY, "keyentry_valid_key_references_on_insert"), (ENTRY, "keyentry_valid_key_references_on_update"),
    (KEY, f"{KEY}_valid_key_references_on_delete"), (KEY, f"{KEY}_valid_key_references_on_rekey"),
    (KEY, f"{KEY}_valid_key_references_on_truncate"),
    (ITEM, f"{ITEM}_valid_key_references_on_delete"), (ITEM, f"{ITEM}_valid_key_references_on_rekey"),
    (ITEM, f"{ITEM}_valid_key_references_on_truncate"),
)
FUNCTIONS = (
    f"{ENTRY}_check_references", f"{ENTRY}_check_moved_references", f"{KEY}_refuse_keyed_delete",
    f"{KEY}_refuse_keyed_rekey", f"{ITEM}_refuse_keyed_delete", f"{ITEM}_refuse_keyed_rekey",
    f"{ENTRY}_refuse_orphaning_truncate",
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
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    for function in FUNCTIONS:
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
    # The constraints as Django names and creates them (DEFERRABLE INITIALLY DEFERRED).
    entry = apps.get_model("keys", "KeyEntry")
    for name in ("key", "item"):
        field = entry._meta.get_field(name)
        schema_editor.execute(schema_editor._create_fk_sql(entry, field, "_fk_%(to_table)s_%(to_column)s"))


class Migration(migrations.Migration):

    dependencies = [
        ("keys", "0012_key_jobs"),
        ("items", "0006_item_gate_rejected"),
        ("annotation", "0011_assignment_references_checked_per_statement"),
    ]

    operations = [migrations.RunPython(forward, backward)]
