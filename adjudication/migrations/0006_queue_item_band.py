from django.db import migrations, models


def rebuild_stored_queues(apps, schema_editor):
    # Stored rows have no band yet: dropping each campaign's queue state makes its next read rebuild the
    # queue whole (adjudication.services.queue_sync builds a queue it has no state for).
    apps.get_model("adjudication", "QueueItem").objects.all().delete()
    apps.get_model("adjudication", "QueueState").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("adjudication", "0005_stored_queue")]

    operations = [
        migrations.AddField(
            model_name="queueitem",
            name="band",
            field=models.CharField(blank=True, default="", max_length=24),
        ),
        migrations.RunPython(rebuild_stored_queues, migrations.RunPython.noop),
    ]
