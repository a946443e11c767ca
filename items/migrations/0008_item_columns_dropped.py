"""The columns 0007 moved into each item's content are dropped; the gold type becomes the gold label."""

from django.db import migrations, models

OLD_COLUMNS = (
    "recipient", "draft", "contradicted_quote", "rationale", "history_turns", "request", "response", "key_fact",
    "text_released", "hidden",
)


class Migration(migrations.Migration):

    dependencies = [
        ("items", "0007_item_content"),
    ]

    operations = [
        *(migrations.RemoveField(model_name="item", name=name) for name in OLD_COLUMNS),
        migrations.RemoveIndex(model_name="item", name="item_by_type"),
        migrations.RenameField(model_name="item", old_name="gold_type", new_name="gold_label"),
        migrations.AlterField(model_name="item", name="gold_label", field=models.CharField(blank=True, max_length=40)),
        migrations.AddIndex(
            model_name="item", index=models.Index(fields=["item_set", "gold_label"], name="item_by_gold_label"),
        ),
        migrations.AddIndex(model_name="item", index=models.Index(fields=["item_set", "family"], name="item_by_family")),
    ]
