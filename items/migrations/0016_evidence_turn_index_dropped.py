"""An evidence row's turn loses its index: one B-tree fewer for an import to fill row by row.

Citations are read by item (the unique (item, role, position) pair), never by turn: no page, selector or
service asks which items cite a turn. Only a delete of turns looks for them, to refuse deleting a cited one
(the ORM's PROTECT, and on PostgreSQL the statement trigger of items 0012), and nothing in Goldkey deletes
turns (the admin is read-only; a conversation is never removed): such a delete now reads the evidence table
whole. Filling the index was ~0.2 s of PostgreSQL's ~1 s for the COPY of 200,000 evidence rows
(bench/README.md). On PostgreSQL the foreign key this field had was replaced by 0012's triggers, so
altering the field drops the index only and puts no constraint back.
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
    ]
