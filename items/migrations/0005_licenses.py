import protocols
from django.db import migrations, models


def item_set_licenses(apps, schema_editor):
    """Item sets imported before licences were recorded carry their protocol's declared licence."""
    ItemSet = apps.get_model("items", "ItemSet")
    for kind in ItemSet.objects.values_list("kind", flat=True).distinct():
        try:
            license = protocols.for_kind(kind).benchmark.license
        except protocols.UnknownProtocol:
            continue
        ItemSet.objects.filter(kind=kind, license="").update(license=license)


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0004_kind_choices_from_protocols"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="license",
            field=models.CharField(default="cc-by-nc-4.0", max_length=50),
        ),
        migrations.AddField(
            model_name="itemset",
            name="license",
            field=models.CharField(blank=True, max_length=50),
        ),
        migrations.RunPython(item_set_licenses, migrations.RunPython.noop),
    ]
