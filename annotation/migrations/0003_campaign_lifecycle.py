"""Campaigns get a lifecycle (annotating -> closed -> frozen); a campaign whose key is already frozen
starts out frozen, closed when its key was frozen."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def frozen_from_keys(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    GoldKey = apps.get_model("keys", "GoldKey")
    for key in GoldKey.objects.filter(status="frozen", campaign__isnull=False).order_by("frozen_at"):
        Campaign.objects.filter(pk=key.campaign_id, status="annotating").update(
            status="frozen", closed_at=key.frozen_at, frozen_at=key.frozen_at
        )


class Migration(migrations.Migration):

    dependencies = [
        ('keys', '0001_gold_keys_from_adjudication'),
        ('annotation', '0002_progress_and_answer_meta'),
        ('items', '0003_item_set_schema'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='campaign',
            name='closed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='campaign',
            name='closed_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='campaign',
            name='frozen_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='campaign',
            name='status',
            field=models.CharField(choices=[('annotating', 'annotating'), ('closed', 'closed'), ('frozen', 'frozen')], default='annotating', max_length=12),
        ),
        migrations.AddField(
            model_name='enrollment',
            name='ended_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='enrollment',
            name='ended_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(frozen_from_keys, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.CheckConstraint(condition=models.Q(('status', 'annotating'), ('closed_at__isnull', False), _connector='OR'), name='campaign_closed_has_time'),
        ),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('status', 'frozen'), _negated=True), ('frozen_at__isnull', False), _connector='OR'), name='campaign_frozen_has_time'),
        ),
    ]
