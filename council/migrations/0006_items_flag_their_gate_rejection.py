"""Items record whether a blocking gate rejected them (campaigns and keys read the flag): set it from
the verdicts already stored."""

from django.db import migrations
from django.db.models import Exists, OuterRef


def flag(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    GateVerdict = apps.get_model("council", "GateVerdict")
    Item.objects.update(gate_rejected=Exists(GateVerdict.objects.filter(item=OuterRef("pk"), blocking=True, passed=False)))


class Migration(migrations.Migration):
    dependencies = [
        ("council", "0005_votes_record_the_answering_model"),
        ("items", "0006_item_gate_rejected"),
    ]

    operations = [migrations.RunPython(flag, migrations.RunPython.noop)]
