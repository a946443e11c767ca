"""The unique pair of an assignment's enrollment and item leads with the item, and the item's own index
goes: the pair (item, enrollment) serves every lookup by the item (an item's assignments across
campaigns, protecting an item from deletion, the foreign key's check when an item is deleted) as the
index did, and every lookup by enrollment and item as the old pair did, while lookups by enrollment
alone have the pair (enrollment, position). `campaign_create` fills one B-tree fewer with every
assignment, and one fewer in item order (the rest are filled in position order, appended at the end).

The same rows stay unique, so nothing the constraint guarded changes. The SQL is written out: on
PostgreSQL the constraint is dropped and added again in this transaction; on SQLite a UNIQUE written
into CREATE TABLE cannot be dropped, so the table is rebuilt as SQLite documents it (a new table, the
rows copied with their ids and the id counter, the old one dropped, the new one renamed, its indexes
made again). Django's own rebuild cannot be used: its rename fails once the sealing triggers (keys
0002) name the table, which the legacy rename below leaves alone (they name the table, not the one
dropped). Foreign keys are off while a migration runs on SQLite, so the answers and skips keep
pointing at the same ids.
"""

from django.db import migrations, models

TABLE = '"annotation_assignment"'
ITEM_INDEX = '"annotation_assignment_item_id_21c60055"'
PARTIAL_INDEXES = (
    'CREATE INDEX "assignment_open_phase1" ON "annotation_assignment" ("enrollment_id", "position") WHERE NOT "phase1_done"',
    'CREATE INDEX "assignment_open_phase2" ON "annotation_assignment" ("enrollment_id", "position") WHERE NOT "phase2_done"',
)
COLUMNS = '"id", "position", "crisis", "item_id", "enrollment_id", "phase1_done", "phase2_done"'


def _sqlite_rebuild(pair: str) -> list[str]:
    """The assignment table as Django made it on SQLite, with the unique pair `pair` (its columns)."""
    new = '"new__annotation_assignment"'
    return [
        # The rename below must not rewrite the triggers and foreign keys that name the table.
        "PRAGMA legacy_alter_table = ON",
        f'CREATE TABLE {new} ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"position" integer unsigned NOT NULL CHECK ("position" >= 0), "crisis" bool NOT NULL, '
        '"item_id" bigint NOT NULL REFERENCES "items_item" ("id") DEFERRABLE INITIALLY DEFERRED, '
        '"enrollment_id" bigint NOT NULL REFERENCES "annotation_enrollment" ("id") DEFERRABLE INITIALLY DEFERRED, '
        '"phase1_done" bool DEFAULT 0 NOT NULL, "phase2_done" bool DEFAULT 0 NOT NULL, '
        f'CONSTRAINT "assignment_unique_item" UNIQUE ({pair}), '
        'CONSTRAINT "assignment_unique_position" UNIQUE ("enrollment_id", "position"))',
        f"INSERT INTO {new} ({COLUMNS}) SELECT {COLUMNS} FROM {TABLE}",
        # The id counter as it was (ids of deleted assignments are not given out again).
        "DELETE FROM sqlite_sequence WHERE name = 'new__annotation_assignment'",
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'new__annotation_assignment', seq FROM sqlite_sequence "
        "WHERE name = 'annotation_assignment'",
        f"DROP TABLE {TABLE}",
        f"ALTER TABLE {new} RENAME TO {TABLE}",
        "PRAGMA legacy_alter_table = OFF",
        *PARTIAL_INDEXES,
    ]


def _postgresql_pair(pair: str) -> list[str]:
    return [
        f'ALTER TABLE {TABLE} DROP CONSTRAINT "assignment_unique_item"',
        f'ALTER TABLE {TABLE} ADD CONSTRAINT "assignment_unique_item" UNIQUE ({pair})',
    ]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        statements = [*_postgresql_pair('"item_id", "enrollment_id"'), f"DROP INDEX {ITEM_INDEX}"]
    else:
        statements = _sqlite_rebuild('"item_id", "enrollment_id"')  # the item's index is not made again
    for statement in statements:
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        statements = _postgresql_pair('"enrollment_id", "item_id"')
    else:
        statements = _sqlite_rebuild('"enrollment_id", "item_id"')
    for statement in [*statements, f'CREATE INDEX {ITEM_INDEX} ON {TABLE} ("item_id")']:
        schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0009_assignment_enrollment_index_redundant"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[
                migrations.RemoveConstraint(model_name="assignment", name="assignment_unique_item"),
                migrations.AddConstraint(
                    model_name="assignment",
                    constraint=models.UniqueConstraint(fields=["item", "enrollment"], name="assignment_unique_item"),
                ),
                migrations.AlterField(
                    model_name="assignment",
                    name="item",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="assignments",
                        to="items.item",
                    ),
                ),
            ],
        ),
    ]
