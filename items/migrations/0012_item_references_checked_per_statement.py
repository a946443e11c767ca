"""On PostgreSQL, an item's references to its item set and its conversation, and an evidence row's
references to its item and its turn, are checked once per statement, not once per row.

A foreign key constraint checks each inserted row on its own, a query and a row lock per row: an
import of 100,000 Track B items names 600,000 rows (item → item set and conversation, evidence → item
and turn), and their checks at the commit were the largest part of the import (4.9-6.7 s of its wall
time at load 7, 2.5 s of the backend's CPU; bench/README.md). Here those four foreign keys are replaced
by triggers that enforce the same rule with one query per reference over all the rows a statement
wrote, as annotation 0011 did for the assignments and keys 0013 for the key entries:

- an INSERT of items or evidence (a statement trigger over the inserted rows) and an UPDATE that
  changes what a row names (a row trigger, only for such an update) are refused unless every item set,
  conversation, item and turn named exists;
- a DELETE of item sets, conversations, items or turns (statement triggers over the deleted rows), an
  UPDATE of their id, and a TRUNCATE that leaves referring rows behind are refused while an item or an
  evidence row names them. The foreign keys were `NO ACTION`: the database refused such a delete and
  the ORM's `on_delete` (PROTECT, or CASCADE from an item to its evidence, which Django deletes first)
  ran before it; both stay as they were. The check now runs at the end of the statement rather than at
  the commit: nothing writes an evidence row before its item or deletes an item before its evidence.

What a foreign key also does is lock, so that two transactions cannot each see the other's rows absent.
The triggers lock what their check relies on, before checking (under READ COMMITTED each check then
sees every transaction that committed before its lock was granted):
- the item sets and conversations an insert of items names, FOR KEY SHARE, as a foreign key would (an
  import names one set and its conversations); a DELETE or a change of id locks the row itself;
- for evidence, the item sets of the named items and the conversations of the named turns rather than
  each of the 100,000 items and 60,000 turns, FOR KEY SHARE, and the items and turns must still be in
  those sets and conversations when checked; a DELETE of items, a move or re-key of an item, a DELETE
  of turns and a move or re-key of a turn lock the old set or conversation FOR UPDATE first (for items,
  annotation 0011's and keys 0013's triggers take the same lock), so they wait for an insert naming
  their rows, and an insert waits for them.
Like annotation 0011's, the triggers refuse to run outside READ COMMITTED, where a check's snapshot
would be older than its lock.

The triggers are named `…_verified_item_references_…` and `…_verified_evidence_references_…`: they fire
after any sealing trigger of the same table and event, and after annotation 0011's and keys 0013's
`…_valid_…` ones (PostgreSQL fires them in name order), so a delete of an item that an assignment or a key
entry names is still refused as such first, as when these foreign keys were checked at the commit.

SQLite keeps its foreign keys, and the model's state keeps them too: a later migration that alters these
fields puts a foreign key back on PostgreSQL, which is slower but never weaker. Reversing this migration
drops the triggers and adds the four constraints again, validated over the rows then present.
"""

from django.db import migrations

ITEM = "items_item"
EVIDENCE = "items_evidence"
ITEM_SET = "items_itemset"
CONVERSATION = "items_conversation"
TURN = "items_turn"
# From this many inserted rows, the named rows are read by hash joins; below it, by primary key.
HASHED_FROM = 20_000

VIOLATION = "USING ERRCODE = 'foreign_key_violation'"
# As annotation 0011: only under READ COMMITTED does a check see what committed while it waited for its lock.
READ_COMMITTED = (
    "IF current_setting('transaction_isolation') <> 'read committed' THEN "
    "RAISE EXCEPTION '%: its rows'' references are checked under READ COMMITTED only (this transaction is %)', "
    "TG_TABLE_NAME, current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported'; END IF;"
)

# The check of a set of items (`rows`: a relation `n` of item_set_id, conversation_id): lock what they
# name, then look for a set or a conversation that is not there. A conversation is optional.
ITEM_CHECK = f"""
            SELECT array_agg(s ORDER BY s) INTO sets FROM (SELECT DISTINCT n.item_set_id AS s FROM {{rows}}) named;
            PERFORM 1 FROM {ITEM_SET} WHERE id = ANY(sets) ORDER BY id FOR KEY SHARE;
            SELECT s::text INTO missing FROM unnest(sets) s WHERE NOT EXISTS (SELECT 1 FROM {ITEM_SET} t WHERE t.id = s) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{ITEM}: item_set_id % names no item set', missing {VIOLATION};
            END IF;
            SELECT array_agg(c ORDER BY c) INTO conversations
                FROM (SELECT DISTINCT n.conversation_id AS c FROM {{rows}} WHERE n.conversation_id IS NOT NULL) named;
            PERFORM 1 FROM {CONVERSATION} WHERE id = ANY(conversations) ORDER BY id FOR KEY SHARE;
            SELECT c::text INTO missing FROM unnest(conversations) c
                WHERE NOT EXISTS (SELECT 1 FROM {CONVERSATION} v WHERE v.id = c) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{ITEM}: conversation_id % names no conversation', missing {VIOLATION};
            END IF;"""

# The check of a set of evidence rows (`rows`: a relation `n` of item_id, turn_id): lock the items' sets
# and the turns' conversations, then look for an item or a turn that is not (still) in them: one moved
# meanwhile to a set or conversation this insert has not locked could be deleted under that one's lock
# without waiting for it.
EVIDENCE_CHECK = f"""
            -- A join, not a semi-join: for 100,000 rows PostgreSQL then hashes the smaller side.
            SELECT array_agg(s ORDER BY s) INTO sets
                FROM (SELECT DISTINCT i.item_set_id AS s FROM {{rows}} JOIN {ITEM} i ON i.id = n.item_id) named;
            PERFORM 1 FROM {ITEM_SET} WHERE id = ANY(sets) ORDER BY id FOR KEY SHARE;
            SELECT n.item_id::text INTO missing FROM {{rows}}
                WHERE NOT EXISTS (SELECT 1 FROM {ITEM} i WHERE i.id = n.item_id AND i.item_set_id = ANY(sets)) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{EVIDENCE}: item_id % names no item', missing {VIOLATION};
            END IF;
            SELECT array_agg(c ORDER BY c) INTO conversations
                FROM (SELECT DISTINCT t.conversation_id AS c FROM {{rows}} JOIN {TURN} t ON t.id = n.turn_id) named;
            PERFORM 1 FROM {CONVERSATION} WHERE id = ANY(conversations) ORDER BY id FOR KEY SHARE;
            SELECT n.turn_id::text INTO missing FROM {{rows}}
                WHERE NOT EXISTS (SELECT 1 FROM {TURN} t WHERE t.id = n.turn_id AND t.conversation_id = ANY(conversations)) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{EVIDENCE}: turn_id % names no turn', missing {VIOLATION};
            END IF;"""


def _refuse_named(table: str, noun: str, referrer: str, what: str) -> list[str]:
    """The function and statement trigger refusing a DELETE of `table` rows that a `referrer` row names
    (by its `<noun>_id`), and the row trigger refusing a change of such a row's id; for items and turns
    both first lock the parent an insert of evidence locked (PARENTS), and so does a move to another one."""
    lock, row_lock, moved = "", "", ""
    if table in PARENTS:
        parent, column = PARENTS[table]
        lock = f"PERFORM 1 FROM {parent} WHERE id IN (SELECT DISTINCT {column} FROM removed) ORDER BY id FOR UPDATE;"
        row_lock = f"PERFORM 1 FROM {parent} WHERE id = OLD.{column} FOR UPDATE;"
        moved = f" OR NEW.{column} IS DISTINCT FROM OLD.{column}"
    return [
        f"""CREATE FUNCTION {table}_refuse_{what}_delete() RETURNS trigger AS $$
        DECLARE named text;
        BEGIN
            {READ_COMMITTED}
            {lock}
            SELECT r.{noun}_id::text INTO named FROM {referrer} r WHERE r.{noun}_id IN (SELECT id FROM removed) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{table}: {noun} % is still named by {referrer}', named {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_verified_{what}_references_on_delete AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse_{what}_delete()""",
        f"""CREATE FUNCTION {table}_refuse_{what}_rekey() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            {row_lock}
            IF NEW.id IS DISTINCT FROM OLD.id AND EXISTS (SELECT 1 FROM {referrer} WHERE {noun}_id = OLD.id) THEN
                RAISE EXCEPTION '{table}: {noun} % is still named by {referrer}', OLD.id {VIOLATION};
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_verified_{what}_references_on_rekey BEFORE UPDATE ON {table}
            FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id{moved})
            EXECUTE FUNCTION {table}_refuse_{what}_rekey()""",
    ]


def _checked(table: str, what: str, check: str, columns: tuple[str, str]) -> list[str]:
    """The statement trigger checking the rows an INSERT into `table` wrote, and the row trigger checking
    a row whose `columns` an UPDATE changed. Two forms of the lookups, each with its own cached plan: a
    few rows by primary key; an import's 100,000 by hash joins."""
    a, b = columns
    return [
        f"""CREATE FUNCTION {table}_check_references() RETURNS trigger AS $$
        DECLARE sets bigint[]; conversations bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            IF (SELECT count(*) FROM inserted) >= {HASHED_FROM} THEN
                SET LOCAL enable_nestloop = off;
            END IF;
            {check.format(rows="inserted AS n")}
            RETURN NULL;
        END $$ LANGUAGE plpgsql SET enable_nestloop = on SET work_mem = '64MB'""",
        f"""CREATE TRIGGER {table}_verified_{what}_references_on_insert AFTER INSERT ON {table}
            REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION {table}_check_references()""",
        f"""CREATE FUNCTION {table}_check_moved_references() RETURNS trigger AS $$
        DECLARE sets bigint[]; conversations bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            {check.format(rows=f"(VALUES (NEW.{a}, NEW.{b})) AS n ({a}, {b})")}
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {table}_verified_{what}_references_on_update BEFORE UPDATE ON {table}
            FOR EACH ROW WHEN (NEW.{a} IS DISTINCT FROM OLD.{a} OR NEW.{b} IS DISTINCT FROM OLD.{b})
            EXECUTE FUNCTION {table}_check_moved_references()""",
    ]


def _refuse_orphaning_truncate(referrer: str, what: str, tables: tuple[str, str]) -> list[str]:
    """TRUNCATE fires no DELETE trigger. After the statement, so that truncating the referring rows in the
    same statement (Django's flush truncates every table at once) is allowed, as a foreign key allows it."""
    return [
        f"""CREATE FUNCTION {referrer}_refuse_orphaning_truncate() RETURNS trigger AS $$
        BEGIN
            {READ_COMMITTED}
            IF EXISTS (SELECT 1 FROM {referrer}) THEN
                RAISE EXCEPTION '%: truncated while {referrer} names its rows', TG_TABLE_NAME {VIOLATION};
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        *(
            f"""CREATE TRIGGER {table}_verified_{what}_references_on_truncate AFTER TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION {referrer}_refuse_orphaning_truncate()"""
            for table in tables
        ),
    ]


# What each table's rows name: (referring table, its trigger word, its columns, what they name).
REFERENCES = (
    (ITEM, "item", ("item_set_id", "conversation_id"), (ITEM_SET, CONVERSATION)),
    (EVIDENCE, "evidence", ("item_id", "turn_id"), (ITEM, TURN)),
)
# The row a DELETE, re-key or move of items and turns locks FOR UPDATE before it checks: the one an insert
# of evidence locked FOR KEY SHARE instead of each item and turn, so each waits for the other. Item sets
# and conversations are locked by the DELETE or UPDATE itself.
PARENTS = {ITEM: (ITEM_SET, "item_set_id"), TURN: (CONVERSATION, "conversation_id")}


def _postgres_forward() -> list[str]:
    statements = []
    for referrer, what, columns, named in REFERENCES:
        statements.append(
            # The constraints, whatever they are called (Django's names hash the table and column names).
            f"""DO $$
            DECLARE name text;
            BEGIN
                FOR name IN SELECT conname FROM pg_constraint
                    WHERE conrelid = '{referrer}'::regclass AND contype = 'f'
                      AND confrelid IN ('{named[0]}'::regclass, '{named[1]}'::regclass)
                LOOP
                    EXECUTE format('ALTER TABLE {referrer} DROP CONSTRAINT %I', name);
                END LOOP;
            END $$"""
        )
        statements += _checked(referrer, what, ITEM_CHECK if referrer == ITEM else EVIDENCE_CHECK, columns)
        for table, column in zip(named, columns, strict=True):
            statements += _refuse_named(table, column.removesuffix("_id"), referrer, what)
        statements += _refuse_orphaning_truncate(referrer, what, named)
    return statements


def _triggers() -> list[tuple[str, str]]:
    triggers = []
    for referrer, what, _, named in REFERENCES:
        triggers += [(referrer, f"{referrer}_verified_{what}_references_on_{event}") for event in ("insert", "update")]
        triggers += [(table, f"{table}_verified_{what}_references_on_{event}")
                     for table in named for event in ("delete", "rekey", "truncate")]
    return triggers


def _functions() -> list[str]:
    functions = []
    for referrer, what, _, named in REFERENCES:
        functions += [f"{referrer}_check_references", f"{referrer}_check_moved_references",
                      f"{referrer}_refuse_orphaning_truncate"]
        functions += [f"{table}_refuse_{what}_{event}" for table in named for event in ("delete", "rekey")]
    return functions


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
    for table, trigger in _triggers():
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    for function in _functions():
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
    # The constraints as Django names and creates them (DEFERRABLE INITIALLY DEFERRED).
    for model_name, fields in (("Item", ("item_set", "conversation")), ("Evidence", ("item", "turn"))):
        model = apps.get_model("items", model_name)
        for name in fields:
            field = model._meta.get_field(name)
            schema_editor.execute(schema_editor._create_fk_sql(model, field, "_fk_%(to_table)s_%(to_column)s"))


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0011_item_evidence_index_dropped"),
    ]

    operations = [migrations.RunPython(forward, backward)]
