"""Moving a test database along the migration graph, for the tests of one migration both ways."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def migrate_to_latest() -> None:
    """Every app back at its last migration. Reversing one migration reverses every later one that
    depends on it, in any app (the keys app's sealing triggers depend on the annotation tables), and
    migrating forward to that one alone would leave them out for the tests that follow."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
