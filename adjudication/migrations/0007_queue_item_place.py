from django.db import migrations, models


def rebuild_stored_queues(apps, schema_editor):
    # Stored rows have no place yet: dropping each campaign's queue state makes its next read rebuild the
    # queue whole (adjudication.services.queue_sync builds a queue it has no state for).
    apps.get_model("adjudication", "QueueItem").objects.all().delete()
    apps.get_model("adjudication", "QueueState").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("adjudication", "0006_queue_item_band")]

    operations = [
        migrations.AddField(
            model_name="queueitem",
            name="place",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="queueitem",
            index=models.Index(condition=models.Q(("queued", True)), fields=["campaign", "place"], name="queue_item_place"),
        ),
        migrations.RunPython(rebuild_stored_queues, migrations.RunPython.noop),
    ]
