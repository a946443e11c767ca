"""The bulk inserter writes exactly what the ORM would, and refuses rows that do not name every column."""

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from goldkey.lib.bulk import BulkRowError, bulk_insert, insert_columns
from items.models import Item
from items.services import item_set_get_or_create

pytestmark = pytest.mark.django_db


def _row(item_set, external_id, **extra):
    row = {f.attname: f.get_default() for f in insert_columns(Item)}
    row.update(item_set_id=item_set.id, kind="lapse", external_id=external_id, created_at=timezone.now())
    row.update(extra)
    return row


def test_bulk_insert_stores_the_same_values_as_the_orm():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    hidden = {"arm": "a", "nested": [1, "two", None], "é": "ü"}
    Item.objects.create(item_set=item_set, kind="lapse", external_id="orm", request="r", hidden=hidden)
    assert bulk_insert(Item, [_row(item_set, "raw", request="r", hidden=hidden)]) == 1

    orm, raw = (model_to_dict(Item.objects.get(external_id=e), exclude=["id", "external_id"]) for e in ("orm", "raw"))
    assert raw == orm
    assert Item.objects.get(external_id="raw").hidden == hidden


def test_bulk_insert_writes_many_rows_across_batches():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    assert bulk_insert(Item, (_row(item_set, f"i{n:05d}") for n in range(2500))) == 2500
    assert Item.objects.filter(item_set=item_set).count() == 2500


def test_bulk_insert_refuses_a_row_missing_a_column_and_writes_nothing():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    bad = _row(item_set, "b")
    del bad["hidden"]
    with pytest.raises(BulkRowError, match=r"row 2: missing \['hidden'\]"):
        bulk_insert(Item, [_row(item_set, "a"), bad])
    assert not Item.objects.filter(item_set=item_set).exists()


def test_bulk_insert_refuses_an_unknown_column():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    with pytest.raises(BulkRowError, match=r"unknown \['colour'\]"):
        bulk_insert(Item, [_row(item_set, "a") | {"colour": "red"}])
