"""The gold-key models now belong to the keys app (see keys/migrations/0001): remove them from this app's
state without touching the tables."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('keys', '0001_gold_keys_from_adjudication'),
        ('adjudication', '0003_keys_immutability'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
        migrations.RemoveField(
            model_name='goldkey',
            name='benchmark',
        ),
        migrations.RemoveField(
            model_name='goldkey',
            name='campaign',
        ),
        migrations.RemoveField(
            model_name='goldkey',
            name='created_by',
        ),
        migrations.RemoveField(
            model_name='goldkey',
            name='frozen_by',
        ),
        migrations.RemoveField(
            model_name='goldkey',
            name='parent',
        ),
        migrations.RemoveField(
            model_name='keyentry',
            name='key',
        ),
        migrations.RemoveField(
            model_name='keyentry',
            name='item',
        ),
        migrations.DeleteModel(
            name='Erratum',
        ),
        migrations.DeleteModel(
            name='GoldKey',
        ),
        migrations.DeleteModel(
            name='KeyEntry',
        ),
                ],
        ),
    ]
