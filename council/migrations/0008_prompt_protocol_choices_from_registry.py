"""A prompt is always of the protocol it was written for: no default protocol, choices from the registry
(a new protocol needs no edit here). On SQLite the table is rebuilt; no trigger lives on it."""

import protocols
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('council', '0007_batches_say_when_they_wait_to_retry'),
    ]

    operations = [
        migrations.AlterField(
            model_name='promptversion',
            name='protocol',
            field=models.CharField(choices=protocols.protocol_choices, max_length=10),
        ),
    ]
