"""An evidence row's turn and an item's conversation lose their index: two B-trees fewer for an import to
fill row by row.

Citations are read by item (the unique (item, role, position) pair) and items by item set, never by turn
or by conversation: no page, selector or service asks which items cite a turn or a conversation. Only a
delete of turns or conversations looks for them, to refuse deleting a cited one (the ORM's PROTECT, and on
PostgreSQL the statement triggers of items 0012), and nothing in Goldkey deletes either (the admin is
read-only): such a delete now reads the evidence or item table whole. Filling the two indexes was ~0.2 s
of PostgreSQL's ~1 s for the COPY of 200,000 evidence rows and ~0.1 s of its ~1.2 s for 100,000 items
(bench/README.md). On PostgreSQL the foreign keys these fields had were replaced by 0012's triggers, so
altering them drops the indexes only and puts no constraint back.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('items', '0015_item_context_checked_per_statement'),
    ]

    operations = [
        migrations.AlterField(
            model_name='evidence',
            name='turn',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='citations', to='items.turn'),
        ),
        migrations.AlterField(
            model_name='item',
            name='conversation',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='items', to='items.conversation'),
        ),
    ]
