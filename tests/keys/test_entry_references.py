"""A key entry names a key and an item that exist. On SQLite its foreign keys say so; on PostgreSQL
statement triggers do (keys 0013), with the same guarantees: what an insert or an update names must
exist, what an entry names cannot be deleted, re-keyed or truncated away, and two transactions cannot
each miss the other's rows: a delete waits for an insert naming its rows, and an insert waits for such
a delete."""

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction

from goldkey.lib.bulk import bulk_insert_columns
from items.models import Item, ItemSet
from keys.models import GoldKey, KeyEntry
from keys.services import key_build
from tests.annotation.test_references import _connect, postgres_only, sql, waits_then_refused

pytestmark = pytest.mark.django_db

INSERT = ("INSERT INTO adjudication_keyentry (key_id, item_id, external_id, gold, evidence, quote, family, history_turns, "
          "provenance) VALUES (%s, %s, %s, 'aligned', '[]', '', '', NULL, 'kept_unanimous')")
NAMES_NOTHING = "names no (gold key|item)|still named by a key entry|truncated while key entries name"


def refused(statement, params=(), match=NAMES_NOTHING):
    with pytest.raises(IntegrityError, match=match):
        with transaction.atomic():
            sql(statement, params)


def _spare_item(key, external_id="spare"):
    """An item of the key's campaign's set that no entry names."""
    model = Item.objects.filter(item_set=key.campaign.item_set).first()
    model.pk, model.external_id = None, external_id
    model.save()
    return model


def test_the_database_keeps_foreign_keys_or_the_triggers_that_replace_them():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, KeyEntry._meta.db_table)
    references = sorted(c["foreign_key"] for c in constraints.values() if c["foreign_key"])
    if connection.vendor == "sqlite":
        assert references == [("adjudication_goldkey", "id"), ("items_item", "id")]
        return
    assert references == []  # checked per statement: a foreign key checks (and locks) row by row
    assert _reference_triggers() == TRIGGERS


TRIGGERS = {
    "keyentry_valid_key_references_on_insert", "keyentry_valid_key_references_on_update",
    "adjudication_goldkey_valid_key_references_on_delete", "adjudication_goldkey_valid_key_references_on_rekey",
    "adjudication_goldkey_valid_key_references_on_truncate", "items_item_valid_key_references_on_delete",
    "items_item_valid_key_references_on_rekey", "items_item_valid_key_references_on_truncate",
}


def _reference_triggers() -> set[str]:
    return {name for (name,) in sql("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname = ANY(%s)",
                                    [sorted(TRIGGERS)])}


def test_an_entry_must_name_a_key_and_an_item_that_exist(draft):
    spare = _spare_item(draft)
    missing_item = Item.objects.order_by("-pk").first().pk + 1000
    missing_key = GoldKey.objects.order_by("-pk").first().pk + 1000
    before = KeyEntry.objects.count()
    for key_id, item_id in ((draft.pk, missing_item), (missing_key, spare.pk)):
        with pytest.raises(IntegrityError):
            with transaction.atomic():
                sql(INSERT, [key_id, item_id, "x-1"])
                connection.check_constraints(table_names=[KeyEntry._meta.db_table])  # SQLite's are deferred
    assert KeyEntry.objects.count() == before
    sql(INSERT, [draft.pk, spare.pk, "x-1"])  # a row that names what exists goes in
    assert KeyEntry.objects.filter(key=draft, item=spare).exists()


def test_deleting_and_rebuilding_a_draft_still_deletes_its_entries(draft, decided, author):
    """Django deletes a key's entries before the key: the triggers let it, and a rebuild's delete too."""
    rebuilt = key_build(campaign=decided, version=draft.version, user=author)
    assert rebuilt.pk == draft.pk and rebuilt.entries.count() == 8
    rebuilt.delete()
    assert not GoldKey.objects.filter(pk=draft.pk).exists() and not KeyEntry.objects.filter(key_id=draft.pk).exists()


@postgres_only
def test_postgresql_names_the_missing_key_or_item(draft):
    missing = Item.objects.order_by("-pk").first().pk + 1000
    refused(INSERT, [draft.pk, missing, "x-1"], match=f"item_id {missing} names no item")
    gone = GoldKey.objects.order_by("-pk").first().pk + 1000
    refused(INSERT, [gone, _spare_item(draft).pk, "x-1"], match=f"key_id {gone} names no gold key")


@postgres_only
def test_a_bulk_insert_with_one_bad_row_among_many_is_refused_whole(draft):
    """From 20,000 rows the trigger reads the items with hash joins, below it by primary key: both forms
    find the one bad row, and nothing of the statement is left."""
    template = Item.objects.filter(item_set=draft.campaign.item_set).first()
    fields = {f.attname: getattr(template, f.attname) for f in Item._meta.concrete_fields if not f.primary_key}
    ids = [item.pk for item in Item.objects.bulk_create(Item(**{**fields, "external_id": f"bulk-{i:05d}"}) for i in range(20_000))]
    missing = max(ids) + 1000

    def columns(items):
        n = len(items)
        return {"key_id": [draft.pk] * n, "item_id": items, "external_id": [f"e-{i:05d}" for i in range(n)],
                "gold": ["aligned"] * n, "evidence": [[]] * n, "quote": [""] * n, "family": [""] * n,
                "history_turns": [None] * n, "provenance": ["kept_unanimous"] * n, "detail": [None] * n}

    before = KeyEntry.objects.count()
    for rows in (ids[:100], ids):  # the lookup form, then the hashed form
        with pytest.raises(IntegrityError, match=f"item_id {missing} names no item"):
            with transaction.atomic():
                bulk_insert_columns(KeyEntry, columns(rows[:-1] + [missing]))
        assert KeyEntry.objects.count() == before
    bulk_insert_columns(KeyEntry, columns(ids))
    assert KeyEntry.objects.filter(key=draft).count() == before + 20_000


@postgres_only
def test_what_an_entry_names_cannot_be_deleted_rekeyed_or_truncated_away(draft):
    entry = KeyEntry.objects.filter(key=draft).first()
    refused("DELETE FROM items_item WHERE id = %s", [entry.item_id], match=f"item {entry.item_id} is still named by a key entry")
    refused("DELETE FROM adjudication_goldkey WHERE id = %s", [draft.pk], match=f"key {draft.pk} is still named by a key entry")
    refused("UPDATE items_item SET id = id + 100000 WHERE id = %s", [entry.item_id])
    refused("UPDATE adjudication_goldkey SET id = id + 100000 WHERE id = %s", [draft.pk])
    refused("UPDATE adjudication_keyentry SET item_id = item_id + 100000 WHERE id = %s", [entry.pk], match="names no item")
    refused("UPDATE adjudication_keyentry SET key_id = key_id + 100000 WHERE id = %s", [entry.pk], match="names no gold key")
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at a TRUNCATE
    # CASCADE follows foreign keys only: it would empty the keys and leave the entries behind.
    refused("TRUNCATE adjudication_goldkey CASCADE", match="adjudication_goldkey: truncated while key entries name its rows")
    assert KeyEntry.objects.filter(pk=entry.pk).exists()
    # An entry moves to an item that exists; what no entry (nor assignment) names is re-keyed and goes freely.
    spare, free = _spare_item(draft), _spare_item(draft, "free")
    sql("UPDATE adjudication_keyentry SET item_id = %s WHERE id = %s", [spare.pk, entry.pk])
    assert KeyEntry.objects.get(pk=entry.pk).item_id == spare.pk
    sql("UPDATE items_item SET id = id + 100000 WHERE id = %s", [free.pk])
    sql("DELETE FROM items_item WHERE id = %s", [free.pk + 100000])
    assert not Item.objects.filter(external_id="free").exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_delete_waits_for_an_insert_naming_its_item_and_is_then_refused(draft):
    spare = _spare_item(draft)
    # The delete waits for the item's set, locked by the insert.
    error = waits_then_refused([(INSERT, [draft.pk, spare.pk, "x-1"])], [("DELETE FROM items_item WHERE id = %s", [spare.pk])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation), error
    assert KeyEntry.objects.filter(item=spare).count() == 1 and Item.objects.filter(pk=spare.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_waits_for_a_delete_of_its_item_and_is_then_refused(draft):
    """Without the lock the insert would find the item (the delete is not committed) and keep a row
    naming an item that is gone."""
    spare = _spare_item(draft)
    error = waits_then_refused([("DELETE FROM items_item WHERE id = %s", [spare.pk])], [(INSERT, [draft.pk, spare.pk, "x-1"])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation) and "names no item" in str(error), error
    assert not KeyEntry.objects.filter(item_id=spare.pk).exists() and not Item.objects.filter(pk=spare.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_item_moved_to_another_set_waits_for_an_insert_naming_it(draft):
    """A move takes the old set's lock, so the item cannot leave the set an insert locked and be deleted
    under the other set's lock."""
    spare = _spare_item(draft)
    own = draft.campaign.item_set
    elsewhere = ItemSet.objects.create(track=own.track, name="elsewhere", kind=own.kind)
    error = waits_then_refused([(INSERT, [draft.pk, spare.pk, "x-1"])], [
        ("UPDATE items_item SET item_set_id = %s WHERE id = %s", [elsewhere.pk, spare.pk]),
        ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
    ])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation), error
    assert KeyEntry.objects.filter(item=spare).count() == 1


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_waits_for_a_delete_of_its_key_and_is_then_refused(decided, author):
    empty = GoldKey.objects.create(benchmark=decided.item_set.track.benchmark, kind=decided.item_set.kind,
                                   version="TWIST-empty", campaign=None, created_by=author)
    item = Item.objects.filter(item_set=decided.item_set).first()
    # The insert waits for the key row, locked by the delete.
    error = waits_then_refused([("DELETE FROM adjudication_goldkey WHERE id = %s", [empty.pk])], [(INSERT, [empty.pk, item.pk, "x-1"])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation) and "names no gold key" in str(error), error
    assert not KeyEntry.objects.filter(key_id=empty.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_under_repeatable_read_the_references_are_refused_rather_than_half_checked(draft):
    spare = _spare_item(draft)
    entry = KeyEntry.objects.filter(key=draft).first()
    with _connect() as repeatable:
        repeatable.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        repeatable.commit()  # the transactions from here on
        for statement, params in ((INSERT, [draft.pk, spare.pk, "x-1"]),
                                  ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
                                  ("UPDATE items_item SET id = id + 100000 WHERE id = %s", [spare.pk]),
                                  ("UPDATE adjudication_keyentry SET item_id = %s WHERE id = %s", [spare.pk, entry.pk])):
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="checked under READ COMMITTED only"):
                repeatable.execute(statement, params)
            repeatable.rollback()
    assert Item.objects.filter(pk=spare.pk).exists() and not KeyEntry.objects.filter(item=spare).exists()


@postgres_only
def test_reversing_the_migration_puts_the_foreign_keys_back(transactional_db, draft):
    from tests.migrating import migrate, migrate_to_latest

    migrate([("keys", "0012_key_jobs")])
    try:
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, KeyEntry._meta.db_table)
        assert sorted(c["foreign_key"] for c in constraints.values() if c["foreign_key"]) == [
            ("adjudication_goldkey", "id"), ("items_item", "id")]
        deferred = sql("SELECT bool_and(condeferrable AND condeferred) FROM pg_constraint "
                       "WHERE conrelid = 'adjudication_keyentry'::regclass AND contype = 'f'")
        assert deferred == [(True,)]  # as Django makes them
        assert _reference_triggers() == set()
    finally:
        migrate_to_latest()
    test_the_database_keeps_foreign_keys_or_the_triggers_that_replace_them()
