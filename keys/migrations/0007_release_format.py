from django.db import migrations, models


class Migration(migrations.Migration):
    """Nullable and without a default: adding the column writes no sealed row (the immutability triggers
    refuse updates, and SQLite would otherwise rebuild the table and drop them)."""

    dependencies = [
        ("keys", "0006_score_level_ingests"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="format",
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
    ]
