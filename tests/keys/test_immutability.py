"""A frozen key and its entries cannot change by any path; the database is the wall (SQLite and PostgreSQL)."""

import pytest
from django.db import IntegrityError, connection, transaction

from goldkey.lib.bulk import bulk_insert_columns
from keys.models import GoldKey, KeyEntry
from keys.services import key_build
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite only: INSERT OR REPLACE is SQLite's statement")
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only")
ENTRY_COLUMNS = "key_id, item_id, external_id, gold, evidence, quote, family, history_turns, provenance"


def refused(fn):
    with pytest.raises(IntegrityError, match="frozen gold keys are immutable"):
        with transaction.atomic():
            fn()


def sql(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def rows_of(key) -> list[tuple]:
    return list(KeyEntry.objects.filter(key=key).order_by("id").values_list())


@pytest.fixture
def draft(frozen_key, author, annotator_b):
    """A draft key of another campaign, beside the frozen one."""
    other = make_campaign(slug="other", n=3, annotators=[author, annotator_b])
    return key_build(campaign=other, version="TWIST-test-draft", user=author)


def test_frozen_key_row_cannot_be_saved_through_the_orm(frozen_key):
    frozen_key.notes = "rewritten"
    refused(frozen_key.save)


def test_frozen_key_cannot_be_unfrozen_with_queryset_update(frozen_key):
    refused(lambda: GoldKey.objects.filter(pk=frozen_key.pk).update(status="draft"))


def test_frozen_key_cannot_be_deleted_through_the_orm(frozen_key):
    from django.db.models import ProtectedError

    # Its sealed release protects it first; without the release the trigger refuses (below, raw SQL).
    with pytest.raises(ProtectedError), transaction.atomic():
        frozen_key.delete()
    assert GoldKey.objects.filter(pk=frozen_key.pk).exists()


def test_frozen_entry_cannot_be_saved_through_the_orm(frozen_key):
    entry = frozen_key.entries.first()
    entry.gold = "aligned" if entry.gold != "aligned" else "contradicting"
    refused(entry.save)


def test_frozen_entry_cannot_be_deleted_through_the_orm(frozen_key):
    refused(frozen_key.entries.first().delete)
    refused(lambda: KeyEntry.objects.filter(key=frozen_key).delete())


def test_frozen_entries_cannot_be_changed_with_update_or_bulk_update(frozen_key):
    refused(lambda: KeyEntry.objects.filter(key=frozen_key).update(gold="aligned"))
    entries = list(frozen_key.entries.all())
    for entry in entries:
        entry.quote = "tampered"
    refused(lambda: KeyEntry.objects.bulk_update(entries, ["quote"]))


def test_no_entry_can_be_added_to_a_frozen_key(frozen_key):
    template = frozen_key.entries.first()
    refused(
        lambda: KeyEntry.objects.create(
            key=frozen_key, item=template.item, external_id="extra", gold="aligned", provenance="kept_unanimous"
        )
    )


def test_an_entry_cannot_be_moved_into_a_frozen_key(frozen_key, draft):
    refused(lambda: KeyEntry.objects.filter(key=draft).update(key=frozen_key))


def test_raw_inserts_into_a_frozen_key_are_refused_and_write_nothing(frozen_key, draft):
    template = frozen_key.entries.first()
    before, draft_before = rows_of(frozen_key), rows_of(draft)
    values = "(%s, %s, %s, 'aligned', '[]', '', '', NULL, 'kept_unanimous')"
    refused(lambda: sql(f"INSERT INTO adjudication_keyentry ({ENTRY_COLUMNS}) VALUES {values}",
                        [frozen_key.pk, template.item_id, "extra"]))
    # One statement of many rows, one of them for the frozen key (in the middle): none is written.
    rows = [(draft.pk, template.item_id, f"many-{i}") for i in range(50)]
    rows[25] = (frozen_key.pk, template.item_id, "many-frozen")
    refused(lambda: sql(f"INSERT INTO adjudication_keyentry ({ENTRY_COLUMNS}) VALUES " + ", ".join([values] * len(rows)),
                        [v for row in rows for v in row]))
    assert rows_of(frozen_key) == before and rows_of(draft) == draft_before


@sqlite_only
def test_insert_or_replace_cannot_land_on_a_frozen_keys_entry(frozen_key, draft):
    entry = frozen_key.entries.order_by("id").first()
    before = rows_of(frozen_key)
    values = "'aligned', '[]', 'replaced', '', NULL, 'kept_unanimous')"
    # By the id of a frozen entry, carrying a draft key: only the id lands on the frozen row.
    refused(lambda: sql(f"INSERT OR REPLACE INTO adjudication_keyentry (id, {ENTRY_COLUMNS}) VALUES (%s, %s, %s, %s, {values}",
                        [entry.pk, draft.pk, entry.item_id, "moved"]))
    # By a frozen key's (key_id, external_id), with no id.
    refused(lambda: sql(f"INSERT OR REPLACE INTO adjudication_keyentry ({ENTRY_COLUMNS}) VALUES (%s, %s, %s, {values}",
                        [frozen_key.pk, entry.item_id, entry.external_id]))
    # REPLACE INTO is the same statement under another name.
    refused(lambda: sql(f"REPLACE INTO adjudication_keyentry (id, {ENTRY_COLUMNS}) VALUES (%s, %s, %s, %s, {values}",
                        [entry.pk, draft.pk, entry.item_id, entry.external_id]))
    assert rows_of(frozen_key) == before


@sqlite_only
def test_update_or_replace_cannot_land_on_a_frozen_key_or_its_entries(frozen_key, draft):
    entry = frozen_key.entries.order_by("id").first()
    before = rows_of(frozen_key)
    refused(lambda: sql("UPDATE OR REPLACE adjudication_keyentry SET id = %s WHERE id = %s",
                        [entry.pk, draft.entries.first().pk]))
    # A draft key row taking a frozen key's id would keep its entries and release under a draft.
    refused(lambda: sql("UPDATE OR REPLACE adjudication_goldkey SET id = %s WHERE id = %s", [frozen_key.pk, draft.pk]))
    refused(lambda: sql("UPDATE OR REPLACE adjudication_goldkey SET version = %s WHERE id = %s",
                        [frozen_key.version, draft.pk]))
    assert rows_of(frozen_key) == before
    assert GoldKey.objects.get(pk=frozen_key.pk).is_frozen


@sqlite_only
def test_insert_or_replace_still_rewrites_a_draft_keys_entry(frozen_key, draft):
    entry = draft.entries.order_by("id").first()
    values = "'aligned', '[]', %s, '', NULL, 'kept_unanimous')"
    sql(f"INSERT OR REPLACE INTO adjudication_keyentry (id, {ENTRY_COLUMNS}) VALUES (%s, %s, %s, %s, {values}",
        [entry.pk, draft.pk, entry.item_id, entry.external_id, "by id"])
    assert KeyEntry.objects.get(pk=entry.pk).quote == "by id"
    sql(f"INSERT OR REPLACE INTO adjudication_keyentry ({ENTRY_COLUMNS}) VALUES (%s, %s, %s, {values}",
        [draft.pk, entry.item_id, entry.external_id, "by external id"])
    replaced = KeyEntry.objects.get(key=draft, external_id=entry.external_id)
    assert replaced.quote == "by external id" and replaced.pk != entry.pk


@postgres_only
def test_upserts_cannot_change_a_frozen_keys_entries(frozen_key):
    entry = frozen_key.entries.first()
    before = rows_of(frozen_key)
    insert = (f"INSERT INTO adjudication_keyentry ({ENTRY_COLUMNS}) "
              "VALUES (%s, %s, %s, 'aligned', '[]', '', '', NULL, 'kept_unanimous') ON CONFLICT (key_id, external_id) ")
    refused(lambda: sql(insert + "DO UPDATE SET quote = 'upserted'", [frozen_key.pk, entry.item_id, entry.external_id]))
    refused(lambda: sql(insert + "DO NOTHING", [frozen_key.pk, entry.item_id, "extra"]))
    assert rows_of(frozen_key) == before


def test_a_bulk_insert_with_one_row_for_a_frozen_key_writes_nothing(frozen_key, draft):
    """COPY on PostgreSQL (checked once for the statement), one prepared INSERT per row on SQLite."""
    template = frozen_key.entries.first()
    before, draft_before = rows_of(frozen_key), rows_of(draft)
    n = 300

    def columns(keys):
        return {
            "key_id": keys, "item_id": [template.item_id] * n, "external_id": [f"bulk-{i}" for i in range(n)],
            "gold": ["aligned"] * n, "evidence": [[]] * n, "quote": [""] * n, "family": [""] * n,
            "history_turns": [None] * n, "provenance": ["kept_unanimous"] * n, "detail": [None] * n,
        }

    keys = [draft.pk] * n
    keys[n - 2] = frozen_key.pk
    refused(lambda: bulk_insert_columns(KeyEntry, columns(keys)))
    assert rows_of(frozen_key) == before and rows_of(draft) == draft_before
    # The same rows, all for the draft: a draft key takes inserts.
    assert bulk_insert_columns(KeyEntry, columns([draft.pk] * n)) == n
    assert KeyEntry.objects.filter(key=draft).count() == len(draft_before) + n


def test_frozen_key_and_entries_cannot_be_changed_with_raw_sql(frozen_key):
    def run(sql, params):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    refused(lambda: run("UPDATE adjudication_keyentry SET gold = 'aligned' WHERE key_id = %s", [frozen_key.pk]))
    refused(lambda: run("DELETE FROM adjudication_keyentry WHERE key_id = %s", [frozen_key.pk]))
    refused(lambda: run("UPDATE adjudication_goldkey SET sha256 = 'x' WHERE id = %s", [frozen_key.pk]))
    refused(lambda: run("DELETE FROM adjudication_goldkey WHERE id = %s", [frozen_key.pk]))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="TRUNCATE exists on PostgreSQL only")
def test_tables_holding_a_frozen_key_cannot_be_truncated(frozen_key):
    def run():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending from setup
            cursor.execute("TRUNCATE adjudication_keyentry CASCADE")

    refused(run)


def test_draft_keys_stay_editable(key_campaign, author):
    from tests.adjudication.conftest import decide

    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="TWIST-test-draft", user=author)
    KeyEntry.objects.filter(key=draft).update(quote="editable")
    draft.notes = "still a draft"
    draft.save()
    draft.version = "TWIST-test-draft-2"  # a version no frozen key holds
    draft.save()
    draft.delete()
    assert not GoldKey.objects.filter(version__startswith="TWIST-test-draft").exists()


def test_frozen_key_is_read_only_in_the_admin(client, admin_user, frozen_key):
    client.force_login(admin_user)
    url = f"/admin/keys/goldkey/{frozen_key.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200
    assert b'name="notes"' not in page.content  # rendered read-only, no input
    assert b'name="_save"' not in page.content
    response = client.post(url, {"notes": "changed via admin", "version": "hacked"})
    assert response.status_code == 403
    frozen_key.refresh_from_db()
    assert frozen_key.notes == "" and frozen_key.version == "TWIST-test-v1.0"


def test_frozen_key_cannot_be_deleted_in_the_admin(client, admin_user, frozen_key):
    client.force_login(admin_user)
    response = client.post(f"/admin/keys/goldkey/{frozen_key.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert GoldKey.objects.filter(pk=frozen_key.pk).exists()


def test_admin_offers_no_bulk_delete_of_keys(client, admin_user, frozen_key):
    client.force_login(admin_user)
    response = client.post(
        "/admin/keys/goldkey/", {"action": "delete_selected", "_selected_action": [frozen_key.pk], "post": "yes"}
    )
    assert GoldKey.objects.filter(pk=frozen_key.pk).exists()
    assert response.status_code in (200, 302)


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_the_api_offers_no_way_to_change_a_frozen_key(client, admin_user, frozen_key, method):
    client.force_login(admin_user)
    response = getattr(client, method)(
        f"/api/keys/{frozen_key.version}/", data={"notes": "x"}, content_type="application/json"
    )
    assert response.status_code == 405
    frozen_key.refresh_from_db()
    assert frozen_key.notes == ""


def test_the_services_bulk_writer_cannot_add_entries_to_a_frozen_key(frozen_key):
    from types import SimpleNamespace

    from keys.services import _entries_inserting

    template = frozen_key.entries.first()
    extra = SimpleNamespace(
        key_id=frozen_key.pk, item_id=template.item_id, external_id="extra", gold="aligned", evidence=[], quote="",
        family="", history_turns=None, provenance="kept_unanimous", detail=None,
    )
    def insert():
        with _entries_inserting([extra]):
            pass

    refused(insert)  # multi-row INSERT on SQLite, COPY on PostgreSQL
