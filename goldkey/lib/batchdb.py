"""Database settings for batch reads (rendering a release, checking it for drift).

PostgreSQL plans from table statistics, and a table filled moments ago in the same transaction (an
import, then a freeze) still has the statistics of an empty one: the planner then joins answers,
assignments, enrollments and revisions with nested loops whose inner side scans a whole index per
outer row, which turned one aggregate over a 200-item campaign into minutes. A batch read touches most
of those rows anyway, so hash and merge joins are right for it whatever the statistics say.
"""

from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def batch_joins():
    """Within the block (one transaction), PostgreSQL does not plan nested-loop joins. Elsewhere: no-op."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_nestloop = off")
        yield
        # On an error the block's rollback undoes the setting (and a statement now would fail anyway).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_nestloop = on")
