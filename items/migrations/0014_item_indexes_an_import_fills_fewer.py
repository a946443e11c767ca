"""Two fewer B-trees for an import to fill, row by row, on every item it writes.

- The index by (item set, family) goes: the family is a stratum that agreement and scores read with the
  whole campaign or key, never a value items are looked up by. Its B-tree (a few long runs of equal keys)
  was the costliest of the table's to fill: ~0.2 s of PostgreSQL's 1.5 s for the COPY of 100,000 Track B
  items (bench/README.md).
- The item's shared context is indexed only where it is set (`item_by_context`): every Track B, Lapse
  and chain item cites none, and filling an index with their nulls cost ~0.1 s of the same COPY. A lookup
  of a context's items (`context_id = X`, as the foreign key's own check on a context's delete asks)
  implies `context_id IS NOT NULL`, so PostgreSQL and SQLite use the partial index for it.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('items', '0013_turn_references_checked_per_statement'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='item',
            name='item_by_family',
        ),
        migrations.AlterField(
            model_name='item',
            name='context',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='items', to='items.context'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(condition=models.Q(('context__isnull', False)), fields=['context'], name='item_by_context'),
        ),
    ]
