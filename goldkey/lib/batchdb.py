"""Database settings for batch work (freezing a key and sealing its release, exporting it, checking it
for drift): reads of most of a campaign's rows in one transaction.

PostgreSQL plans from table statistics, and a table filled moments ago in the same transaction (an
import, then a freeze) still has the statistics of an empty one: the planner then joins answers,
assignments, enrollments and revisions with nested loops whose inner side scans a whole index per
outer row, which turned one aggregate over a 200-item campaign into minutes. A batch read touches most
of those rows anyway, so hash and merge joins are right for it whatever the statistics say.

SQLite reads every page through its own small page cache (2 MB by default), one read() system call
and one copy per page: a 100,000-item freeze reads a few hundred megabytes of items, answers and
evidence, some of it twice, and spent about a sixth of its CPU time in the kernel. Within a batch
block the database file is memory-mapped instead (`PRAGMA mmap_size`), so pages are read in place.
Only how pages reach SQLite changes: the same rows, the same transaction, writes as before (SQLite
writes through the WAL, never through the mapping). Outside a batch block the connection keeps its
setting.

Python's own side of batch work is `collector_paused`: the cyclic garbage collector stopped while a batch's
hundreds of thousands of acyclic objects are built.
"""

import gc
from contextlib import contextmanager

from django.db import connection, transaction

# How much of the database file a batch block maps (address space, not memory: pages are the OS's
# file cache, shared with every other reader of the file).
SQLITE_MMAP_BYTES = 1 << 30


@contextmanager
def batch_reads():
    """Within the block (one transaction): PostgreSQL plans no nested-loop joins; SQLite reads the file
    memory-mapped. The previous settings come back when the block ends (nested blocks included)."""
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SHOW enable_nestloop")
                (before,) = cursor.fetchone()
                cursor.execute("SET LOCAL enable_nestloop = off")
            yield
            # The setting the block found (an inner block leaves its outer block's "off" alone). On an
            # error the block's rollback undoes the setting (and a statement now would fail anyway).
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL enable_nestloop = {'on' if before == 'on' else 'off'}")
        return
    if connection.vendor != "sqlite":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA mmap_size")
            (before,) = cursor.fetchone()
            if before < SQLITE_MMAP_BYTES:
                cursor.execute(f"PRAGMA mmap_size = {SQLITE_MMAP_BYTES:d}")
        try:
            yield
        finally:
            if before < SQLITE_MMAP_BYTES:
                with connection.cursor() as cursor:
                    cursor.execute(f"PRAGMA mmap_size = {int(before):d}")


@contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector while a large batch is built: a campaign loaded or
    summarised, an import file parsed and written.

    A 100,000-item campaign creates some 500,000 long-lived objects (item rows, per-item answer dicts,
    queue entries), an import of as many items as many parsed records and rows; each time their number
    grows by a quarter the collector walks the whole heap, which cost 0.5 s of a 1.9 s load (and a third of
    an import's Python time). None of these objects form reference cycles, so pausing costs no
    memory; the collector is re-enabled (if it was on) when the block ends and works as before (its
    next young-generation pass runs at once; the one full pass over these objects comes later, as it
    would have anyway; the bench prints its cost). The switch is per process: in a
    threaded server another thread's collections wait for the block too, and nested or concurrent
    blocks leave it on once the block that turned it off ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
