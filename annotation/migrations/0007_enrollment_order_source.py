"""Each enrollment records where its annotation order came from (drawn by Goldkey, or unknown / given
because its answers were imported), for the datasheet.

The columns are added with ALTER TABLE ADD COLUMN (the SQL is written out): Django's AddField of a NOT
NULL column rebuilds the table on SQLite, and the rebuild fails once the sealing triggers (keys 0002)
name the enrollment table. Existing enrollments whose answers came from an import say so.
"""

from django.db import migrations, models

# Answers whose first revision came from an import file: their order is not known.
MARK_IMPORTED = (
    'UPDATE "annotation_enrollment" SET "order_source" = \'imported\' WHERE "id" IN ('
    'SELECT a."enrollment_id" FROM "annotation_assignment" a JOIN "annotation_answer" x ON x."assignment_id" = a."id" '
    'JOIN "annotation_answerrevision" r ON r."answer_id" = x."id" WHERE r."source" = \'import\')'
)


def add_columns(apps, schema_editor):
    schema_editor.execute(
        'ALTER TABLE "annotation_enrollment" ADD COLUMN "order_source" varchar(10) DEFAULT \'drawn\' NOT NULL'
    )
    schema_editor.execute('ALTER TABLE "annotation_enrollment" ADD COLUMN "imported_order_seed" bigint NULL')
    schema_editor.execute(MARK_IMPORTED)


def drop_columns(apps, schema_editor):
    schema_editor.execute('ALTER TABLE "annotation_enrollment" DROP COLUMN "order_source"')
    schema_editor.execute('ALTER TABLE "annotation_enrollment" DROP COLUMN "imported_order_seed"')


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0006_assignment_done_flags"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add_columns, drop_columns)],
            state_operations=[
                migrations.AddField(
                    model_name="enrollment",
                    name="imported_order_seed",
                    field=models.BigIntegerField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="enrollment",
                    name="order_source",
                    field=models.CharField(
                        choices=[
                            ("drawn", "drawn by Goldkey from the campaign's seed or secret"),
                            ("imported", "answers imported from a file: the order the annotator saw is not known"),
                            ("given", "answers imported, with the seed of the tool that ordered them"),
                        ],
                        default="drawn", db_default="drawn", max_length=10,
                    ),
                ),
            ],
        ),
    ]
