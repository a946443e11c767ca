"""Items of every protocol in one row shape (with 0008, which drops the old columns): the columns every protocol shares, the gold label and the
family under protocol-neutral names, and the rest as the item's `content` (the protocol's typed schema).

The data move names each kind's fields as they were when this migration was written (a migration never
reads the live protocol modules, which move on): TWIST's draft columns keep their names in the content,
Lapse's too, and a judged answer's overloaded columns get their own (question, answer, hypothesis).
"""

from django.db import migrations, models

# kind -> (content field, old column) in the content's order
CONTENT_COLUMNS = {
    "twist": (
        ("recipient", "recipient"), ("draft", "draft"), ("contradicted_quote", "contradicted_quote"),
        ("rationale", "rationale"), ("history_turns", "history_turns"),
    ),
    "lapse": (
        ("request", "request"), ("response", "response"), ("key_fact", "key_fact"),
        ("text_released", "text_released"), ("hidden", "hidden"),
    ),
    "judged": (("question", "request"), ("answer", "draft"), ("hypothesis", "response"), ("hidden", "hidden")),
}
OLD_COLUMNS = (
    "recipient", "draft", "contradicted_quote", "rationale", "history_turns", "request", "response", "key_fact",
    "text_released", "hidden",
)
# The old columns' blank values (what a kind that did not use a column left in it).
OLD_BLANK = {
    "recipient": "", "draft": "", "contradicted_quote": "", "rationale": "", "history_turns": None, "request": "",
    "response": "", "key_fact": "", "text_released": True, "hidden": {},
}
BATCH = 2000


def _columns_of(kind: str) -> tuple[tuple[str, str], ...]:
    # A kind this migration does not know (none was registered when it was written) keeps every column
    # that holds something, under the column's name.
    return CONTENT_COLUMNS.get(kind) or tuple((name, name) for name in OLD_COLUMNS)


def _batches(queryset):
    batch = []
    for item in queryset.iterator(chunk_size=BATCH):
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def content_from_columns(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    for batch in _batches(Item.objects.order_by("id").only("id", "kind", *OLD_COLUMNS)):
        for item in batch:
            columns = _columns_of(item.kind)
            content = {field: getattr(item, column) for field, column in columns}
            if item.kind not in CONTENT_COLUMNS:
                content = {k: v for k, v in content.items() if v != OLD_BLANK[k]}
            item.content = content
        Item.objects.bulk_update(batch, ["content"])


def columns_from_content(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    for batch in _batches(Item.objects.order_by("id").only("id", "kind", "content")):
        for item in batch:
            content = item.content or {}
            for field, column in _columns_of(item.kind):
                if field in content:
                    setattr(item, column, content[field])
        Item.objects.bulk_update(batch, list(OLD_COLUMNS))


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0006_item_gate_rejected"),
        # Data migrations of other apps that read or write the columns this one moves run before it.
        ("lapse", "0002_scorer_labels_out_of_item_hidden"),
        ("council", "0006_items_flag_their_gate_rejection"),
    ]

    # The columns are dropped by the next migration, in a transaction of its own: on PostgreSQL a table
    # whose rows this one's UPDATEs touched cannot be altered in the same transaction.
    operations = [
        migrations.AddField(model_name="item", name="content", field=models.JSONField(blank=True, default=dict)),
        migrations.RunPython(content_from_columns, columns_from_content, elidable=False),
    ]
