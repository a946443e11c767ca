"""Drop the index Django gave Assignment.enrollment: both unique pairs, (enrollment, item) and
(enrollment, position), lead with the enrollment and serve every lookup by it (and the cascade from a
deleted enrollment), while `campaign_create` filled one more B-tree with every assignment.

The SQL is written out (the same on both databases): Django's AlterField would rebuild the table on
SQLite, which fails once the sealing triggers (keys 0002) name it, and on PostgreSQL it drops and
re-adds the foreign key, re-checking every assignment under a lock. Only the index goes; the foreign
key and its check stay as they were.
"""

from django.db import migrations, models

INDEX = '"annotation_assignment_enrollment_id_9261ff53"'


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0008_guidelines_skips_and_keyboard_preferences"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {INDEX}",
                    reverse_sql=f'CREATE INDEX {INDEX} ON "annotation_assignment" ("enrollment_id")',
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="assignment",
                    name="enrollment",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="assignments",
                        to="annotation.enrollment",
                    ),
                ),
            ],
        ),
    ]
