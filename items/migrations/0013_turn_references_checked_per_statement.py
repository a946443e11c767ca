"""On PostgreSQL, a turn's references to its conversation and its session are checked once per statement,
not once per row; and a turn's conversation has no index of its own.

An import of 100,000 Track B items writes the turns of their conversations too (60,000 in bench/), and
the two foreign keys of each turn were checked row by row at the commit: a query and a row lock per
reference, about 0.65 s of that import's commit. Here they are replaced by triggers that enforce the
same rule with one query per reference over all the rows a statement wrote, as items 0012 did for the
items and their evidence:

- an INSERT of turns (a statement trigger over the inserted rows) and an UPDATE that changes a turn's
  conversation or session (a row trigger, only for such an update) are refused unless every
  conversation and session named exists;
- a DELETE of conversations or sessions (statement triggers over the deleted rows), an UPDATE of their
  id, and a TRUNCATE that leaves turns behind are refused while a turn names them. The foreign keys were
  `NO ACTION`: the ORM's CASCADE (from a conversation or a session to its turns) deletes the turns
  first, then the sessions, then the conversation, and stays as it was. The check now runs at the end of
  the statement rather than at the commit: nothing writes a turn before its session or deletes a session
  or a conversation before its turns.

The locks are a foreign key's: the insert locks the conversations and sessions it names FOR KEY SHARE
before checking (an import names a hundred conversations and a few thousand sessions, not one per
turn), and a DELETE or a change of id locks the row itself, so each waits for the other. Like 0012's,
the triggers refuse to run outside READ COMMITTED, where a check's snapshot would be older than its lock.

The SQL comes from 0012's builders, imported rather than copied: a migration is never edited once
applied, so what they build is fixed, and both sets of triggers then read alike. The triggers are named
`…_verified_turn_references_…`: they fire after 0012's `…_verified_evidence_references_…` on the turns
and its `…_verified_item_references_…` on the conversations (PostgreSQL fires triggers of the same table
and event in name order), so a delete of a conversation an item names is still refused as such first, as
when these foreign keys were checked at the commit.

The single-column index on `items_turn.conversation_id` goes: the unique (conversation, dia_id) pair
and the (conversation, speaker, order) index both lead with it. The session's index stays: a delete of
sessions looks up the turns naming them by it. Django's AlterField of a foreign key drops and re-adds the
constraint on PostgreSQL, hence it runs before the triggers replace that constraint.

SQLite keeps its foreign keys, and the model's state keeps them too: a later migration that alters these
fields puts a foreign key back on PostgreSQL, which is slower but never weaker. Reversing this migration
drops the triggers and adds the two constraints again, validated over the rows then present.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

per_statement = importlib.import_module("items.migrations.0012_item_references_checked_per_statement")

TURN = per_statement.TURN
CONVERSATION = per_statement.CONVERSATION
SESSION = "items_session"
WHAT = "turn"
COLUMNS = ("conversation_id", "session_id")
NAMED = (CONVERSATION, SESSION)
VIOLATION = per_statement.VIOLATION

# The check of a set of turns (`rows`: a relation `n` of conversation_id, session_id): lock what they name,
# then look for a conversation or a session that is not there. The sessions' array is declared in a block
# of its own: 0012's function declares only the sets, conversations and the missing id.
TURN_CHECK = f"""
            SELECT array_agg(c ORDER BY c) INTO conversations FROM (SELECT DISTINCT n.conversation_id AS c FROM {{rows}}) named;
            PERFORM 1 FROM {CONVERSATION} WHERE id = ANY(conversations) ORDER BY id FOR KEY SHARE;
            SELECT c::text INTO missing FROM unnest(conversations) c
                WHERE NOT EXISTS (SELECT 1 FROM {CONVERSATION} v WHERE v.id = c) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '{TURN}: conversation_id % names no conversation', missing {VIOLATION};
            END IF;
            DECLARE sessions bigint[];
            BEGIN
                SELECT array_agg(s ORDER BY s) INTO sessions FROM (SELECT DISTINCT n.session_id AS s FROM {{rows}}) named;
                PERFORM 1 FROM {SESSION} WHERE id = ANY(sessions) ORDER BY id FOR KEY SHARE;
                SELECT s::text INTO missing FROM unnest(sessions) s
                    WHERE NOT EXISTS (SELECT 1 FROM {SESSION} v WHERE v.id = s) LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION '{TURN}: session_id % names no session', missing {VIOLATION};
                END IF;
            END;"""


def _postgres_forward() -> list[str]:
    # The constraints, whatever they are called (Django's names hash the table and column names).
    statements = [
        f"""DO $$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT conname FROM pg_constraint
                WHERE conrelid = '{TURN}'::regclass AND contype = 'f'
                  AND confrelid IN ('{CONVERSATION}'::regclass, '{SESSION}'::regclass)
            LOOP
                EXECUTE format('ALTER TABLE {TURN} DROP CONSTRAINT %I', name);
            END LOOP;
        END $$"""
    ]
    statements += per_statement._checked(TURN, WHAT, TURN_CHECK, COLUMNS)
    for table, column in zip(NAMED, COLUMNS, strict=True):
        statements += per_statement._refuse_named(table, column.removesuffix("_id"), TURN, WHAT)
    statements += per_statement._refuse_orphaning_truncate(TURN, WHAT, NAMED)
    return statements


def _triggers() -> list[tuple[str, str]]:
    triggers = [(TURN, f"{TURN}_verified_{WHAT}_references_on_{event}") for event in ("insert", "update")]
    triggers += [(table, f"{table}_verified_{WHAT}_references_on_{event}")
                 for table in NAMED for event in ("delete", "rekey", "truncate")]
    return triggers


def _functions() -> list[str]:
    functions = [f"{TURN}_check_references", f"{TURN}_check_moved_references", f"{TURN}_refuse_orphaning_truncate"]
    functions += [f"{table}_refuse_{WHAT}_{event}" for table in NAMED for event in ("delete", "rekey")]
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
    model = apps.get_model("items", "Turn")
    for name in ("conversation", "session"):
        field = model._meta.get_field(name)
        schema_editor.execute(schema_editor._create_fk_sql(model, field, "_fk_%(to_table)s_%(to_column)s"))


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0012_item_references_checked_per_statement"),
    ]

    operations = [
        migrations.AlterField(
            model_name="turn",
            name="conversation",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="turns",
                to="items.conversation",
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
