"""Sealed releases: a frozen key's bundle, stored once. Releases and their files are never updated or
deleted — the database refuses it (and SQLite's INSERT OR REPLACE onto an existing file), so a sealed
release is the same bytes forever, whatever path a write takes."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


MESSAGE = "sealed releases never change"
TABLES = ("keys_release", "keys_releasefile")

SQLITE_INSTALL = [
    stmt
    for table in TABLES
    for stmt in (
        f"""CREATE TRIGGER {table}_sealed_no_update BEFORE UPDATE ON {table}
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END""",
        f"""CREATE TRIGGER {table}_sealed_no_delete BEFORE DELETE ON {table}
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {table}'); END""",
    )
] + [
    f"""CREATE TRIGGER keys_releasefile_sealed_no_replace BEFORE INSERT ON keys_releasefile
        FOR EACH ROW WHEN EXISTS (SELECT 1 FROM keys_releasefile f
            WHERE f.id = NEW.id OR (f.release_id = NEW.release_id AND f.path = NEW.path))
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: keys_releasefile'); END""",
    f"""CREATE TRIGGER keys_release_sealed_no_replace BEFORE INSERT ON keys_release
        FOR EACH ROW WHEN EXISTS (SELECT 1 FROM keys_release r WHERE r.id = NEW.id OR r.key_id = NEW.key_id)
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}: keys_release'); END""",
]
SQLITE_UNINSTALL = [
    f"DROP TRIGGER IF EXISTS {table}_sealed_no_{op}" for table in TABLES for op in ("update", "delete", "replace")
]
POSTGRES_INSTALL = [
    f"""CREATE OR REPLACE FUNCTION release_refuse_change() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION '{MESSAGE}: %', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
    END $$ LANGUAGE plpgsql""",
    # TRUNCATE skips row triggers: refuse it while any release exists (an empty table may be truncated).
    f"""CREATE OR REPLACE FUNCTION release_refuse_truncate() RETURNS trigger AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM keys_release) THEN
            RAISE EXCEPTION '{MESSAGE}: truncate' USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
] + [
    stmt
    for table in TABLES
    for stmt in (
        f"""CREATE TRIGGER {table}_sealed BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION release_refuse_change()""",
        f"""CREATE TRIGGER {table}_sealed_no_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION release_refuse_truncate()""",
    )
]
POSTGRES_UNINSTALL = [
    stmt for table in TABLES for stmt in (
        f"DROP TRIGGER IF EXISTS {table}_sealed ON {table}", f"DROP TRIGGER IF EXISTS {table}_sealed_no_truncate ON {table}",
    )
] + ["DROP FUNCTION IF EXISTS release_refuse_change()", "DROP FUNCTION IF EXISTS release_refuse_truncate()"]

STATEMENTS = {"sqlite": (SQLITE_INSTALL, SQLITE_UNINSTALL), "postgresql": (POSTGRES_INSTALL, POSTGRES_UNINSTALL)}


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"no release triggers for database vendor '{vendor}'")
    with schema_editor.connection.cursor() as cursor:  # '%' in PL/pgSQL bodies: not query parameters
        for statement in STATEMENTS[vendor][0]:
            cursor.execute(statement)


def uninstall(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in STATEMENTS.get(schema_editor.connection.vendor, ((), ()))[1]:
            cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ('keys', '0002_sealed_campaign_triggers'),
    ]

    operations = [
        migrations.CreateModel(
            name='Release',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sha256', models.CharField(max_length=64)),
                ('sealed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('key', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='release', to='keys.goldkey')),
            ],
        ),
        migrations.CreateModel(
            name='ReleaseFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('path', models.CharField(max_length=300)),
                ('sha256', models.CharField(max_length=64)),
                ('size', models.PositiveBigIntegerField()),
                ('content', models.BinaryField()),
                ('release', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='files', to='keys.release')),
            ],
            options={
                'ordering': ['release', 'path'],
                'constraints': [models.UniqueConstraint(fields=('release', 'path'), name='releasefile_unique_path')],
            },
        ),
        migrations.RunPython(install, uninstall),
]
