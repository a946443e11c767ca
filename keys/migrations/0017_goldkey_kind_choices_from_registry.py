"""A key's kind takes its choices from the protocol registry (every registered item kind, not the two the
models once listed). Choices are not a column attribute: no SQL, the sealing triggers on the table stay."""

import protocols
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('keys', '0016_key_publication'),
    ]

    operations = [
        migrations.AlterField(
            model_name='goldkey',
            name='kind',
            field=models.CharField(choices=protocols.kind_choices, max_length=10),
        ),
    ]
