"""System runs, predictions and score-level ingests now belong to the scoring app (see
scoring/migrations/0001): remove them from this app's state without touching the tables."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('scoring', '0001_runs_from_keys'),
        ('keys', '0013_keyentry_references_checked_per_statement'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='RunPrediction'),
                migrations.DeleteModel(name='ScoreLevelIngest'),
                migrations.DeleteModel(name='SystemRun'),
            ],
        ),
    ]
