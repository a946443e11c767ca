"""key_verify covers the whole key and never crashes: a frozen key's status turned back to draft, an
erratum accepted or applied without a decision, a deleted item and a stored file it cannot read are each
named in its report (exit 1), never a traceback."""

from contextlib import contextmanager
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from keys.models import Erratum, KeyEntry
from keys.services import erratum_decide, erratum_file, key_verify
from tests.keys.test_releases import behind_goldkeys_back, verify

pytestmark = pytest.mark.django_db


def test_a_frozen_key_turned_back_to_draft_is_reported(frozen_key):
    behind_goldkeys_back("UPDATE adjudication_goldkey SET status = 'draft' WHERE id = %s", [frozen_key.pk])
    code, message = verify(frozen_key.version)
    assert code == 1 and "key: its status is draft, but it was frozen at" in message and "has a sealed release" in message


def test_an_untouched_frozen_key_verifies(frozen_key):
    assert verify(frozen_key.version)[0] == 0


def _forged(key, user, **fields) -> Erratum:
    """An accepted erratum written straight into the table, as no Goldkey path writes one."""
    return Erratum.objects.create(key=key, item_external_id="s-0002", kind="relabel", value="aligned",
                                  description="quietly accepted", filed_by=user, status="accepted", **fields)


def test_an_accepted_erratum_without_a_decision_trail_is_reported(frozen_key, outsider):
    erratum = _forged(frozen_key, outsider)
    code, message = verify(frozen_key.version)
    assert code == 1
    assert f"errata: erratum {erratum.pk} (s-0002) is accepted with no decision trail" in message


def test_an_erratum_with_a_decider_but_no_time_is_reported_too(frozen_key, outsider, author):
    _forged(frozen_key, outsider, decided_by=author)
    assert "no decision trail" in verify(frozen_key.version)[1]


def test_a_forged_accepted_erratum_is_not_derived_into_a_new_version(frozen_key, outsider, author):
    _forged(frozen_key, outsider)
    with pytest.raises(CommandError, match="no decision trail"):
        call_command("key_derive", frozen_key.version, "--key-version", "TWIST-test-v1.1", "--by", "author", stdout=StringIO())


def test_an_applied_erratum_that_was_rejected_is_reported(frozen_key, outsider, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0002", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=False, note="no", user=author)
    Erratum.objects.filter(pk=erratum.pk).update(applied_in=frozen_key)
    assert f"errata: erratum {erratum.pk} (s-0002) is applied but rejected" in verify(frozen_key.version)[1]


def test_errata_decided_through_goldkey_verify(frozen_key, outsider, author):
    for accept in (True, False):
        erratum = erratum_file(key=frozen_key, item_external_id="s-0002" if accept else "s-0003", kind="drop",
                               description="x", user=outsider)
        erratum_decide(erratum=erratum, accept=accept, note="checked", user=author)
    assert verify(frozen_key.version)[0] == 0


@contextmanager
def deleted(table: str, pk: int):
    """The row deleted as only a database superuser can (triggers and foreign keys lifted: SQLite checks
    its deferred foreign keys at commit, PostgreSQL skips them as a replica), and put back afterwards."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [pk])
        columns, row = [c[0] for c in cursor.description], cursor.fetchone()
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        try:
            behind_goldkeys_back(f"DELETE FROM {table} WHERE id = %s", [pk])
            yield
        finally:
            names = ", ".join(f'"{c}"' for c in columns)
            behind_goldkeys_back(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(row))})", list(row))
            if connection.vendor == "postgresql":
                cursor.execute("SET session_replication_role = origin")


def test_a_deleted_item_is_reported_not_raised(frozen_key):
    entry = KeyEntry.objects.filter(key=frozen_key).order_by("external_id").first()
    with deleted("items_item", entry.item_id):
        code, message = verify(frozen_key.version)  # was: KeyError from the re-render
        result = key_verify(version=frozen_key.version)
    assert code == 1 and f"items: entry {entry.external_id}'s item no longer exists" in message
    assert not result["ok"] and any(d.startswith("live: *: not compared") for d in result["drift"])
    assert verify(frozen_key.version)[0] == 0  # put back, it verifies again


def test_a_deleted_item_of_a_draft_key_is_reported_too(decided, author):
    from keys.services import key_build

    draft = key_build(campaign=decided, version="TWIST-draft-gone", user=author)
    entry = KeyEntry.objects.filter(key=draft).order_by("external_id").first()
    with deleted("items_item", entry.item_id):
        result = key_verify(version=draft.version)
    assert not result["ok"] and f"items: entry {entry.external_id}'s item no longer exists" in result["drift"]


def test_a_draft_that_was_never_frozen_has_nothing_to_report(decided, author):
    from keys.services import key_build

    draft = key_build(campaign=decided, version="TWIST-draft-ok", user=author)
    assert key_verify(version=draft.version)["drift"] == []
