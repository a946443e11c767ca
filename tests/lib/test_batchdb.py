"""Batch blocks change how the database reads, never what: settings inside, the previous ones after."""

import pytest
from django.db import connection

from goldkey.lib.batchdb import SQLITE_MMAP_BYTES, batch_reads

pytestmark = pytest.mark.django_db


def _setting(sql: str):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


def test_a_batch_block_maps_the_sqlite_file_and_restores_the_setting_after():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's batch setting is tested below")
    before = _setting("PRAGMA mmap_size")
    assert before < SQLITE_MMAP_BYTES
    with batch_reads():
        assert _setting("PRAGMA mmap_size") == SQLITE_MMAP_BYTES
        with batch_reads():  # nested: the inner block leaves the outer one's setting alone
            assert _setting("PRAGMA mmap_size") == SQLITE_MMAP_BYTES
        assert _setting("PRAGMA mmap_size") == SQLITE_MMAP_BYTES
    assert _setting("PRAGMA mmap_size") == before


def test_a_batch_block_restores_the_setting_when_it_fails():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    before = _setting("PRAGMA mmap_size")
    with pytest.raises(RuntimeError, match="the block failed"), batch_reads():
        raise RuntimeError("the block failed")
    assert _setting("PRAGMA mmap_size") == before


def test_a_batch_block_on_postgresql_plans_no_nested_loops_and_restores_them_after():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with batch_reads():
        assert _setting("SHOW enable_nestloop") == "off"
        with batch_reads():  # nested: the inner block leaves the outer one's setting alone
            assert _setting("SHOW enable_nestloop") == "off"
        assert _setting("SHOW enable_nestloop") == "off"
    assert _setting("SHOW enable_nestloop") == "on"
