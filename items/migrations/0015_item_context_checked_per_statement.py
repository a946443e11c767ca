"""On PostgreSQL, an item's reference to its shared context is checked once per statement, not once per row.

Every Track B item cites no context, yet the foreign key's trigger still queued one event per inserted
row and fired each at the commit: ~0.11 s of the commit of an import of 100,000 Track B items, for
nothing to check. Here that foreign key is replaced by triggers that enforce the same rule with one
query over all the rows a statement wrote, as 0012 did for the item's set and conversation:

- an INSERT of items (a statement trigger over the inserted rows) and an UPDATE that points an item at
  another context (a row trigger, only for such an update) are refused unless every context named
  exists. An item without a context names nothing: an import of items that cite none costs one scan of
  the inserted rows, no lookup;
- a DELETE of contexts (a statement trigger over the deleted rows, which finds their items by the
  partial index `item_by_context`), an UPDATE of their id, and a TRUNCATE that leaves items behind are
  refused while an item names them. The foreign key was `NO ACTION`: the ORM's PROTECT raises before
  the database is asked, and stays as it was. The check now runs at the end of the statement rather
  than at the commit: nothing deletes a context before the items citing it.

The locks are a foreign key's: the insert locks the contexts it names FOR KEY SHARE before checking
(an import names a few hundred questions, not one per item), and a DELETE or a change of id locks the
row itself, so each waits for the other. Like 0012's, the triggers refuse to run outside READ
COMMITTED, where a check's snapshot would be older than its lock.

The SQL of the delete, re-key and truncate guards comes from 0012's builders, imported rather than
copied as 0013 does: a migration is never edited once applied, so what they build is fixed, and the
triggers read alike. The TRUNCATE trigger runs 0012's `items_item_refuse_orphaning_truncate`, which
names whichever table fired it. The insert and update checks are this migration's own: 0012's
`_checked` names its functions after the table alone (items_item's are taken) and checks two columns.

The triggers are named `…_verified_shared_context_references_…`: on the items they fire after 0012's
`…_verified_item_references_…` (PostgreSQL fires triggers of the same table and event in name order),
so an insert locks the item sets it names before the contexts, as when the context was checked at the
commit, and cannot deadlock with a transaction that deletes a set's items (which locks the set) and
then its contexts.

SQLite keeps its foreign key, and the model's state keeps it too: a later migration that alters this
field puts a foreign key back on PostgreSQL, which is slower but never weaker. Reversing this migration
drops the triggers and adds the constraint again, validated over the rows then present.
"""

import importlib

from django.db import migrations

per_statement = importlib.import_module("items.migrations.0012_item_references_checked_per_statement")

ITEM = per_statement.ITEM
CONTEXT = "items_context"
WHAT = "shared_context"
READ_COMMITTED = per_statement.READ_COMMITTED
VIOLATION = per_statement.VIOLATION

# The check of a set of items (`rows`: a relation `n` of context_id): lock the contexts they name, then
# look for one that is not there. Nothing to lock or look up when none is named.
CONTEXT_CHECK = f"""
            SELECT array_agg(c ORDER BY c) INTO contexts
                FROM (SELECT DISTINCT n.context_id AS c FROM {{rows}} WHERE n.context_id IS NOT NULL) named;
            IF contexts IS NOT NULL THEN
                PERFORM 1 FROM {CONTEXT} WHERE id = ANY(contexts) ORDER BY id FOR KEY SHARE;
                SELECT c::text INTO missing FROM unnest(contexts) c
                    WHERE NOT EXISTS (SELECT 1 FROM {CONTEXT} x WHERE x.id = c) LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION '{ITEM}: context_id % names no context', missing {VIOLATION};
                END IF;
            END IF;"""


def _postgres_forward() -> list[str]:
    # The constraint, whatever it is called (Django's names hash the table and column names).
    statements = [
        f"""DO $$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT conname FROM pg_constraint
                WHERE conrelid = '{ITEM}'::regclass AND contype = 'f' AND confrelid = '{CONTEXT}'::regclass
            LOOP
                EXECUTE format('ALTER TABLE {ITEM} DROP CONSTRAINT %I', name);
            END LOOP;
        END $$""",
        f"""CREATE FUNCTION {ITEM}_check_{WHAT}_references() RETURNS trigger AS $$
        DECLARE contexts bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            {CONTEXT_CHECK.format(rows="inserted AS n")}
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {ITEM}_verified_{WHAT}_references_on_insert AFTER INSERT ON {ITEM}
            REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION {ITEM}_check_{WHAT}_references()""",
        f"""CREATE FUNCTION {ITEM}_check_moved_{WHAT}_references() RETURNS trigger AS $$
        DECLARE contexts bigint[]; missing text;
        BEGIN
            {READ_COMMITTED}
            {CONTEXT_CHECK.format(rows="(VALUES (NEW.context_id)) AS n (context_id)")}
            RETURN NEW;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER {ITEM}_verified_{WHAT}_references_on_update BEFORE UPDATE ON {ITEM}
            FOR EACH ROW WHEN (NEW.context_id IS NOT NULL AND NEW.context_id IS DISTINCT FROM OLD.context_id)
            EXECUTE FUNCTION {ITEM}_check_moved_{WHAT}_references()""",
    ]
    statements += per_statement._refuse_named(CONTEXT, "context", ITEM, WHAT)
    # Its triggers only: the function is 0012's, created for the item sets and conversations.
    statements += per_statement._refuse_orphaning_truncate(ITEM, WHAT, (CONTEXT,))[1:]
    return statements


def _triggers() -> list[tuple[str, str]]:
    triggers = [(ITEM, f"{ITEM}_verified_{WHAT}_references_on_{event}") for event in ("insert", "update")]
    triggers += [(CONTEXT, f"{CONTEXT}_verified_{WHAT}_references_on_{event}") for event in ("delete", "rekey", "truncate")]
    return triggers


def _functions() -> list[str]:
    return [f"{ITEM}_check_{WHAT}_references", f"{ITEM}_check_moved_{WHAT}_references",
            f"{CONTEXT}_refuse_{WHAT}_delete", f"{CONTEXT}_refuse_{WHAT}_rekey"]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite keeps its foreign key
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
    # The constraint as Django names and creates it (DEFERRABLE INITIALLY DEFERRED).
    model = apps.get_model("items", "Item")
    field = model._meta.get_field("context")
    schema_editor.execute(schema_editor._create_fk_sql(model, field, "_fk_%(to_table)s_%(to_column)s"))


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0014_item_indexes_an_import_fills_fewer"),
    ]

    operations = [migrations.RunPython(forward, backward)]
