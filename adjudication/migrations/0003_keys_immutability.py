"""Frozen gold keys and their entries become immutable at the database level (PostgreSQL and SQLite)."""

from django.db import migrations


def install(apps, schema_editor):
    from adjudication import key_triggers

    key_triggers.install(schema_editor.connection)


def uninstall(apps, schema_editor):
    from adjudication import key_triggers

    key_triggers.uninstall(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ("adjudication", "0002_keys_models"),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
