"""Publishing a frozen key becomes a step of its own (KeyPublication). Every key frozen before this
migration was public from its freeze, so each gets a publication dated then, by whoever froze it.

The database refuses a publication of a key that is not frozen and any change of one (on SQLite also an
INSERT OR REPLACE onto one); nothing of the frozen key's own row changes when it is published."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


MESSAGE = "a publication is of a frozen key and never changes"
TABLE = "keys_keypublication"
KEY = "adjudication_goldkey"

SQLITE_INSTALL = [
    f"""CREATE TRIGGER keypublication_frozen_only BEFORE INSERT ON {TABLE}
        FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM {KEY} k WHERE k.id = NEW.key_id AND k.status = 'frozen')
            OR EXISTS (SELECT 1 FROM {TABLE} p WHERE p.key_id = NEW.key_id)
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    f"""CREATE TRIGGER keypublication_no_update BEFORE UPDATE ON {TABLE}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
]
SQLITE_UNINSTALL = [
    "DROP TRIGGER IF EXISTS keypublication_frozen_only",
    "DROP TRIGGER IF EXISTS keypublication_no_update",
]
POSTGRES_INSTALL = [
    f"""CREATE OR REPLACE FUNCTION keypublication_check() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'UPDATE' OR NOT EXISTS (
            SELECT 1 FROM {KEY} k WHERE k.id = NEW.key_id AND k.status = 'frozen' FOR SHARE
        ) THEN
            RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER keypublication_checked BEFORE INSERT OR UPDATE ON {TABLE}
        FOR EACH ROW EXECUTE FUNCTION keypublication_check()""",
]
POSTGRES_UNINSTALL = [
    f"DROP TRIGGER IF EXISTS keypublication_checked ON {TABLE}",
    "DROP FUNCTION IF EXISTS keypublication_check()",
]
STATEMENTS = {"sqlite": (SQLITE_INSTALL, SQLITE_UNINSTALL), "postgresql": (POSTGRES_INSTALL, POSTGRES_UNINSTALL)}


def install(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in STATEMENTS.get(schema_editor.connection.vendor, ((), ()))[0]:
            cursor.execute(statement)


def uninstall(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in STATEMENTS.get(schema_editor.connection.vendor, ((), ()))[1]:
            cursor.execute(statement)


def publish_frozen_keys(apps, schema_editor):
    """Keys frozen before publication was a step were public at once: they stay public."""
    GoldKey = apps.get_model("keys", "GoldKey")
    KeyPublication = apps.get_model("keys", "KeyPublication")
    KeyPublication.objects.bulk_create(
        KeyPublication(key_id=pk, published_at=frozen_at, published_by_id=frozen_by)
        for pk, frozen_at, frozen_by in GoldKey.objects.filter(status="frozen").values_list("pk", "frozen_at", "frozen_by")
    )


class Migration(migrations.Migration):

    dependencies = [
        ('keys', '0015_goldkey_version_plain'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='reliabilitypass',
            name='key_public_during_pass',
            field=models.BooleanField(default=False),
        ),
        migrations.CreateModel(
            name='KeyPublication',
            fields=[
                ('key', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='publication', serialize=False, to='keys.goldkey')),
                ('published_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('published_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.RunPython(publish_frozen_keys, migrations.RunPython.noop),
        migrations.RunPython(install, uninstall),
    ]
