"""Each assignment carries its answer's phase flags, and two partial indexes over the open ones, so
that resuming at the first open item is an index scan however far the annotator has come.

The columns are added with ALTER TABLE ADD COLUMN on both databases (the SQL is written out): Django's
AddField of a NOT NULL column rebuilds the table on SQLite, and the rebuild's rename fails once the
sealing triggers (keys 0002) name the assignment table. Existing answers set the flags they had.
"""

from django.db import migrations, models

COLUMNS = ("phase1_done", "phase2_done")


# Every assignment that has an answer takes the answer's flags (a test runs this statement too).
FILL_FROM_ANSWERS = (
    'UPDATE "annotation_assignment" SET '
    + ", ".join(
        f'"{c}" = (SELECT x."{c}" FROM "annotation_answer" x WHERE x."assignment_id" = "annotation_assignment"."id")'
        for c in COLUMNS
    )
    + ' WHERE "id" IN (SELECT "assignment_id" FROM "annotation_answer")'
)


def add_columns(apps, schema_editor):
    # The column types Django itself gives a BooleanField on each database.
    kind, false = ("boolean", "FALSE") if schema_editor.connection.vendor == "postgresql" else ("bool", "0")
    for column in COLUMNS:
        schema_editor.execute(
            f'ALTER TABLE "annotation_assignment" ADD COLUMN "{column}" {kind} DEFAULT {false} NOT NULL'
        )
    schema_editor.execute(FILL_FROM_ANSWERS)


def drop_columns(apps, schema_editor):
    for column in COLUMNS:
        schema_editor.execute(f'ALTER TABLE "annotation_assignment" DROP COLUMN "{column}"')


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0005_protocol_choices_from_registry"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add_columns, drop_columns)],
            state_operations=[
                migrations.AddField(
                    model_name="assignment",
                    name=name,
                    field=models.BooleanField(default=False, db_default=False),
                )
                for name in COLUMNS
            ],
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("phase1_done", False)), fields=["enrollment", "position"],
                name="assignment_open_phase1",
            ),
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("phase2_done", False)), fields=["enrollment", "position"],
                name="assignment_open_phase2",
            ),
        ),
    ]
