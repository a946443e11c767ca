"""Citations gain a role (position is within the role) and conversations may version another one.

Adding `role` with a default rebuilds items_evidence on SQLite (and `version_of`, items_conversation),
which drops a table's triggers: neither table has any (a freshly migrated SQLite database lists the same
37 triggers, all on adjudication, annotation and keys tables, before and after this migration), so none
is re-created here. PostgreSQL adds the columns in place. Existing citations are TWIST Track B's evidence,
which the default names.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('items', '0008_item_columns_dropped'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='evidence',
            options={'ordering': ['item', 'role', 'position']},
        ),
        migrations.RemoveConstraint(
            model_name='evidence',
            name='evidence_unique_position',
        ),
        migrations.AddField(
            model_name='conversation',
            name='version_of',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='versions', to='items.conversation'),
        ),
        migrations.AddField(
            model_name='evidence',
            name='role',
            field=models.CharField(default='evidence', max_length=20),
        ),
        migrations.AddConstraint(
            model_name='evidence',
            constraint=models.UniqueConstraint(fields=('item', 'role', 'position'), name='evidence_unique_role_position'),
        ),
    ]
