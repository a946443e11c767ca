"""Shared contexts: what several items share is stored once and cited by each (a LongMemEval question answered
by nine runs). Judged answers already stored move their question and gold answer into a context of their own
(one per item: each was its question's only answer); everything else of the item stays where it was, so a
sealed key's release is rebuilt byte for byte from the rows.

The field names are those of the judged-answer schemas when this was written (a migration never reads the
live protocol modules). Adding a nullable foreign key is an ALTER TABLE ADD COLUMN on SQLite, not a rebuild
of the items table, so its triggers stay (tests/items/test_migrations.py compares them).
"""

import django.db.models.deletion
from django.db import migrations, models

JUDGED = "judged"
MOVED = ("question", "answer")  # into the context; the rest of a judged item's content stays its own
ABSTENTION_SUFFIX = "_abs"
BATCH = 2000


def _question_type(family: str) -> str:
    return family[: -len(ABSTENTION_SUFFIX)] if family.endswith(ABSTENTION_SUFFIX) else family


def contexts_from_items(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    Context = apps.get_model("items", "Context")
    items = list(Item.objects.filter(kind=JUDGED, context__isnull=True).order_by("id").only(
        "id", "item_set_id", "external_id", "family", "content"))
    for start in range(0, len(items), BATCH):
        batch = items[start:start + BATCH]
        contexts = Context.objects.bulk_create([
            Context(item_set_id=item.item_set_id, external_id=item.external_id, content={
                "question_type": _question_type(item.family),
                **{name: item.content[name] for name in MOVED if name in item.content},
                "question_date": (item.content.get("hidden") or {}).get("question_date", ""),
            })
            for item in batch
        ])
        for item, context in zip(batch, contexts, strict=True):
            item.context_id = context.pk
            item.content = {k: v for k, v in item.content.items() if k not in MOVED}
        Item.objects.bulk_update(batch, ["context", "content"])


def items_from_contexts(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    Context = apps.get_model("items", "Context")
    items = list(Item.objects.filter(context__isnull=False).select_related("context").order_by("id"))
    for item in items:
        shared = item.context.content
        item.content = {**{name: shared[name] for name in MOVED if name in shared}, **item.content}
        item.context_id = None
    Item.objects.bulk_update(items, ["context", "content"], batch_size=BATCH)
    Context.objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0009_citation_roles_and_conversation_versions"),
    ]

    operations = [
        migrations.CreateModel(
            name="Context",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("external_id", models.CharField(max_length=120)),
                ("content", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("item_set", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="contexts",
                                               to="items.itemset")),
            ],
            options={
                "ordering": ["item_set", "external_id"],
                "constraints": [models.UniqueConstraint(fields=("item_set", "external_id"), name="context_unique_external_id")],
            },
        ),
        migrations.AddField(
            model_name="item",
            name="context",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="items", to="items.context"),
        ),
        migrations.RunPython(contexts_from_items, items_from_contexts, elidable=False),
    ]
