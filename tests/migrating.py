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
    autovacuum_off()


def autovacuum_off() -> None:
    """Every table of the PostgreSQL test database without autovacuum (on SQLite, nothing to do).

    A test that flushes the database (`transactional_db`, the live server) truncates every table, and
    TRUNCATE's exclusive lock has to wait for any autovacuum worker at work on that table until PostgreSQL
    cancels it (after `deadlock_timeout`); autovacuum's reads and writes also compete with the suite for
    the machine's cores. The suite's data is thrown away after every test: it never needs vacuuming. A
    migration that recreates a table recreates it with autovacuum on, hence
    `migrate_to_latest` calls this again."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in autovacuum_on_tables():
            cursor.execute(
                f"ALTER TABLE {connection.ops.quote_name(table)}"
                " SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)"
            )


def autovacuum_on_tables() -> list[str]:
    """The PostgreSQL test database's tables autovacuum may still work on."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind = 'r' AND n.nspname = current_schema()"
            " AND NOT coalesce('autovacuum_enabled=false' = ANY(c.reloptions), false) ORDER BY 1"
        )
        return [table for (table,) in cursor.fetchall()]
