from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_is_missing_a_migration():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # makemigrations --check exits 1 when a migration is missing
        pytest.fail(f"pending model changes without a migration:\n{out.getvalue()}")
        raise exc


@pytest.mark.django_db
def test_no_table_of_the_postgresql_test_database_is_left_to_autovacuum():
    from django.db import connection

    from tests.migrating import autovacuum_off, autovacuum_on_tables

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite has no autovacuum")
    assert autovacuum_on_tables() == []
    # A table a migration recreates comes back with autovacuum on; migrate_to_latest switches it off.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE autovacuum_probe (id integer)")
    assert autovacuum_on_tables() == ["autovacuum_probe"]
    autovacuum_off()
    assert autovacuum_on_tables() == []
