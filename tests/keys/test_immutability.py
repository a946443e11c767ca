"""A frozen key and its entries cannot change by any path; the database is the wall (SQLite and PostgreSQL)."""

import pytest
from django.db import IntegrityError, connection, transaction

from keys.models import GoldKey, KeyEntry
from keys.services import key_build
from tests.adjudication.conftest import make_campaign

pytestmark = pytest.mark.django_db


def refused(fn):
    with pytest.raises(IntegrityError, match="frozen gold keys are immutable"):
        with transaction.atomic():
            fn()


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


def test_an_entry_cannot_be_moved_into_a_frozen_key(frozen_key, author, annotator_b):
    other = make_campaign(slug="other", n=3, annotators=[author, annotator_b])
    draft = key_build(campaign=other, version="TWIST-test-draft", user=author)
    refused(lambda: KeyEntry.objects.filter(key=draft).update(key=frozen_key))


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
    draft.delete()
    assert not GoldKey.objects.filter(version="TWIST-test-draft").exists()


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

    from keys.services import _entries_insert

    template = frozen_key.entries.first()
    extra = SimpleNamespace(
        key_id=frozen_key.pk, item_id=template.item_id, external_id="extra", gold="aligned", evidence=[], quote="",
        family="", history_turns=None, provenance="kept_unanimous",
    )
    refused(lambda: _entries_insert([extra]))  # multi-row INSERT on SQLite, COPY on PostgreSQL
