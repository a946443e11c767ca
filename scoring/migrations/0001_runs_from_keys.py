"""System runs, their predictions and score-level ingests move from the keys app to this one; the tables
stay where they are (their db_table keeps the keys app's names), so this migration changes Django's state
only: the stored runs are read as they were, nothing is re-imported."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MODELS = ["systemrun", "runprediction", "scorelevelingest"]


def move_content_types(apps, schema_editor):
    # Existing permissions and admin log entries point at these content types; relabelling them keeps
    # both (a fresh database has none yet and post_migrate creates them under "scoring").
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="keys", model__in=MODELS).update(app_label="scoring")


def restore_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="scoring", model__in=MODELS).update(app_label="keys")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('keys', '0013_keyentry_references_checked_per_statement'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='SystemRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('system', models.CharField(max_length=100)),
                        ('configuration', models.CharField(blank=True, max_length=100)),
                        ('ingest', models.PositiveSmallIntegerField(default=1)),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('source_name', models.CharField(max_length=255)),
                        ('source_sha256', models.CharField(max_length=64)),
                        ('imported_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('imported_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('key', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='system_runs', to='keys.goldkey')),
                    ],
                    options={
                        'db_table': 'keys_systemrun',
                        'ordering': ['key', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='RunPrediction',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('item_external_id', models.CharField(max_length=120)),
                        ('aligned', models.BooleanField()),
                        ('evidence', models.JSONField(blank=True, null=True)),
                        ('attributed', models.BooleanField(blank=True, null=True)),
                        ('cited_fact_only', models.BooleanField(blank=True, null=True)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='predictions', to='scoring.systemrun')),
                    ],
                    options={
                        'db_table': 'keys_runprediction',
                        'ordering': ['run', 'item_external_id'],
                    },
                ),
                migrations.CreateModel(
                    name='ScoreLevelIngest',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('system', models.CharField(max_length=100)),
                        ('configuration', models.CharField(blank=True, max_length=100)),
                        ('ingest', models.PositiveSmallIntegerField(default=1)),
                        ('scores', models.JSONField()),
                        ('note', models.TextField(blank=True)),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('source_name', models.CharField(max_length=255)),
                        ('source_sha256', models.CharField(max_length=64)),
                        ('imported_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('imported_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('key', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_level_ingests', to='keys.goldkey')),
                    ],
                    options={
                        'db_table': 'keys_scorelevelingest',
                        'ordering': ['key', 'id'],
                        'constraints': [models.UniqueConstraint(fields=('key', 'system', 'configuration', 'ingest'), name='scorelevel_unique_per_key'), models.CheckConstraint(condition=models.Q(('ingest__gte', 1)), name='scorelevel_ingest_from_one')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='systemrun',
                    constraint=models.UniqueConstraint(fields=('key', 'system', 'configuration', 'ingest'), name='systemrun_unique_per_key'),
                ),
                migrations.AddConstraint(
                    model_name='systemrun',
                    constraint=models.CheckConstraint(condition=models.Q(('ingest__gte', 1)), name='systemrun_ingest_from_one'),
                ),
                migrations.AddIndex(
                    model_name='runprediction',
                    index=models.Index(condition=models.Q(('attributed__isnull', False), ('cited_fact_only__isnull', False), _connector='OR'), fields=['run'], name='runprediction_outcome_set'),
                ),
                migrations.AddConstraint(
                    model_name='runprediction',
                    constraint=models.UniqueConstraint(fields=('run', 'item_external_id'), name='runprediction_unique_item'),
                ),
    
            ],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
