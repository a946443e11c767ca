"""Gold keys, entries and errata move from the adjudication app to this one; the tables stay where they are
(their db_table keeps the old names), so this migration changes Django's state only."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def move_content_types(apps, schema_editor):
    # Existing permissions and admin log entries point at these content types; relabelling them keeps
    # both (a fresh database has none yet and post_migrate creates them under "keys").
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="adjudication", model__in=["goldkey", "keyentry", "erratum"]).update(
        app_label="keys"
    )


def restore_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="keys", model__in=["goldkey", "keyentry", "erratum"]).update(
        app_label="adjudication"
    )


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('adjudication', '0003_keys_immutability'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('annotation', '0002_progress_and_answer_meta'),
        ('items', '0003_item_set_schema'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
        migrations.CreateModel(
            name='GoldKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('twist', 'TWIST Track B draft'), ('lapse', 'Lapse output')], max_length=10)),
                ('version', models.CharField(max_length=50, unique=True)),
                ('status', models.CharField(choices=[('draft', 'draft'), ('frozen', 'frozen')], default='draft', max_length=10)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('frozen_at', models.DateTimeField(blank=True, null=True)),
                ('sha256', models.CharField(blank=True, max_length=64)),
                ('notes', models.TextField(blank=True)),
                ('manifest', models.JSONField(blank=True, default=dict)),
                ('changelog', models.JSONField(blank=True, default=list)),
                ('benchmark', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='gold_keys', to='items.benchmark')),
                ('campaign', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='gold_keys', to='annotation.campaign')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('frozen_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='children', to='keys.goldkey')),
            ],
            options={
                'db_table': 'adjudication_goldkey',
                'ordering': ['benchmark', 'version'],
            },
        ),
        migrations.CreateModel(
            name='Erratum',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('item_external_id', models.CharField(max_length=120)),
                ('kind', models.CharField(choices=[('drop', 'drop the item'), ('relabel', 'relabel the gold'), ('fix-evidence', 'fix the evidence'), ('fix-quote', 'fix the quote')], max_length=20)),
                ('value', models.TextField(blank=True)),
                ('description', models.TextField()),
                ('filed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('status', models.CharField(choices=[('filed', 'filed'), ('accepted', 'accepted'), ('rejected', 'rejected')], default='filed', max_length=10)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_note', models.TextField(blank=True)),
                ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('filed_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('applied_in', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='applied_errata', to='keys.goldkey')),
                ('key', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='errata', to='keys.goldkey')),
            ],
            options={
                'verbose_name_plural': 'errata',
                'db_table': 'adjudication_erratum',
                'ordering': ['key', 'id'],
            },
        ),
        migrations.CreateModel(
            name='KeyEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('external_id', models.CharField(max_length=120)),
                ('gold', models.CharField(max_length=30)),
                ('evidence', models.JSONField(blank=True, default=list)),
                ('quote', models.TextField(blank=True)),
                ('family', models.CharField(blank=True, max_length=100)),
                ('history_turns', models.PositiveIntegerField(blank=True, null=True)),
                ('provenance', models.CharField(choices=[('kept_unanimous', 'kept unanimous'), ('kept_after_adjudication', 'kept after adjudication'), ('relabelled', 'relabelled in adjudication'), ('added_by_erratum', 'added by erratum'), ('changed_by_erratum', 'changed by erratum')], max_length=30)),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='key_entries', to='items.item')),
                ('key', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='keys.goldkey')),
            ],
            options={
                'db_table': 'adjudication_keyentry',
                'ordering': ['key', 'external_id'],
            },
        ),
        migrations.AddConstraint(
            model_name='goldkey',
            constraint=models.CheckConstraint(condition=models.Q(('status', 'draft'), models.Q(models.Q(('sha256', ''), _negated=True), ('frozen_at__isnull', False)), _connector='OR'), name='goldkey_frozen_has_hash'),
        ),
        migrations.AddConstraint(
            model_name='keyentry',
            constraint=models.UniqueConstraint(fields=('key', 'external_id'), name='keyentry_unique_external_id'),
        ),
                ],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
]
