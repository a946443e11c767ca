"""The bulk inserter writes exactly what the ORM would, and refuses rows that do not name every column."""

import json

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django.utils import timezone

from goldkey.lib.bulk import (
    SQLITE_BULK_CACHE_KIB,
    BulkRowError,
    bulk_insert,
    bulk_insert_columns,
    insert_columns,
    json_texts,
)
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
    assert bulk_insert(Item, [_row(item_set, "raw", content={"request": "r", "hidden": hidden})]) == 1

    orm, raw = (model_to_dict(Item.objects.get(external_id=e), exclude=["id", "external_id"]) for e in ("orm", "raw"))
    assert raw == orm
    assert Item.objects.get(external_id="raw").hidden == hidden


def _typed(value):
    """A value with the type of every part: 1, 1.0 and True are equal, but not the same value."""
    if isinstance(value, dict):
        return ("dict", [(key, _typed(child)) for key, child in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(child) for child in value])
    return (type(value).__name__, repr(value))


JSON_VALUES = [
    {"draft": "Hey Ava, …", "history_turns": 600, "quote": "", "flag": True},
    {"é": "ü\u00e9 \" \\ \n\t\u0001 ☃ 𝄞", "nested": [[1, 2.5], {"k": [False, 1e16, -0.0, 1e-300]}]},
    [1, 2**63 - 1, -(2**63), 2**64 - 1, 0.1, 1.7976931348623157e308], "a text", 7, (1, 2), {"t": (3, "x")},
]


@pytest.mark.parametrize("value", JSON_VALUES)
def test_a_json_value_is_written_as_a_text_read_back_as_the_same_value(value):
    from goldkey.lib.bulk import json_text

    assert _typed(json.loads(json_text(value))) == _typed(json.loads(json.dumps(value)))


@pytest.mark.parametrize("value", [
    {"a": float("nan")}, [float("inf")], {"note": None}, {"n": 2**70}, {1: "a key that is no str"}, [-(2**64)],
    "nullify",
])
def test_a_json_value_orjson_would_write_otherwise_or_refuse_is_written_as_json_dumps_writes_it(value):
    """orjson writes NaN and Infinity as null (json.dumps: NaN, which PostgreSQL refuses, as it did) and
    refuses integers beyond 64 bits and keys that are not texts."""
    from goldkey.lib.bulk import json_text

    assert json_text(value) == json.dumps(value)


def test_a_value_json_dumps_refuses_is_refused():
    import dataclasses
    import datetime

    from goldkey.lib.bulk import json_text

    @dataclasses.dataclass
    class Point:
        x: int

    for value in ({"at": datetime.datetime(2026, 12, 6)}, [Point(1)], {"on": datetime.date(2026, 12, 6)}):
        with pytest.raises(TypeError, match="not JSON serializable"):
            json_text(value)
    assert json_text(None) is None


def test_a_nan_in_a_json_column_is_refused_by_postgresql_as_before():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite stores the text NaN")
    from django.db import DataError, transaction

    item_set = item_set_get_or_create(name="bulk", kind="lapse")

    with pytest.raises(DataError), transaction.atomic():
        bulk_insert(Item, [_row(item_set, "nan", content={"request": "r", "score": float("nan")})])
    assert not Item.objects.filter(external_id="nan").exists()


def test_bulk_insert_writes_many_rows_across_batches():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    assert bulk_insert(Item, (_row(item_set, f"i{n:05d}") for n in range(2500))) == 2500
    assert Item.objects.filter(item_set=item_set).count() == 2500


def test_bulk_insert_refuses_a_row_missing_a_column_and_writes_nothing():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    bad = _row(item_set, "b")
    del bad["content"]
    with pytest.raises(BulkRowError, match=r"row 2: missing \['content'\]"):
        bulk_insert(Item, [_row(item_set, "a"), bad])
    assert not Item.objects.filter(item_set=item_set).exists()


def test_bulk_insert_refuses_an_unknown_column():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    with pytest.raises(BulkRowError, match=r"unknown \['colour'\]"):
        bulk_insert(Item, [_row(item_set, "a") | {"colour": "red"}])


def test_bulk_insert_columns_stores_the_same_rows_as_bulk_insert():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    hidden = {"arm": "b", "nested": [2, None]}
    rows = [_row(item_set, f"row{n}", content={"request": f"r{n}", "hidden": hidden}) for n in range(3)]
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    columns["external_id"] = [f"col{n}" for n in range(3)]
    assert bulk_insert(Item, rows) == 3
    assert bulk_insert_columns(Item, columns) == 3

    def stored(prefix):
        return [model_to_dict(item, exclude=["id", "external_id"])
                for item in Item.objects.filter(external_id__startswith=prefix).order_by("external_id")]

    assert stored("col") == stored("row") and len(stored("col")) == 3
    assert Item.objects.get(external_id="col1").hidden == hidden


def test_bulk_insert_columns_refuses_a_missing_or_unknown_column_and_writes_nothing():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    row = _row(item_set, "a")
    columns = {name: [value] for name, value in row.items() if name != "content"} | {"colour": ["red"]}
    with pytest.raises(BulkRowError, match=r"missing \['content'\], unknown \['colour'\]"):
        bulk_insert_columns(Item, columns)
    assert not Item.objects.filter(item_set=item_set).exists()


def test_bulk_insert_columns_refuses_columns_of_different_lengths_and_writes_nothing():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    columns = {name: [value, value] for name, value in _row(item_set, "a").items()}
    columns["external_id"] = ["a"]
    with pytest.raises(BulkRowError, match="different lengths"):
        bulk_insert_columns(Item, columns)
    assert not Item.objects.filter(item_set=item_set).exists()


def test_a_bulk_insert_on_sqlite_gives_the_connection_its_own_cache_size_back():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: the page cache setting is SQLite's")
    item_set = item_set_get_or_create(name="bulk", kind="lapse")

    def cache_size():
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA cache_size")
            return cursor.fetchone()[0]

    before = cache_size()
    assert bulk_insert(Item, [_row(item_set, "a")]) == 1
    assert cache_size() == before != -SQLITE_BULK_CACHE_KIB


def test_json_texts_are_json_dumps_of_each_value_also_where_a_list_holds_the_separator():
    columns = [
        [["D1:3", "D2:5"], [], ["é", "], NaN, ["], ["\0"]],  # one call, split where the lists meet
        [[1, [2]], [float("nan")], [[3], float("nan"), [4]]],  # a separator inside a list: one call per value
        [["only"]],
        [None, ["a"]],
        [{"a": 1}, ["b"]],
        [],
    ]
    for values in columns:
        assert json_texts(values) == [None if v is None else json.dumps(v) for v in values]


def test_sqlite_writes_many_rows_per_statement_in_order_in_one_query_whatever_the_size():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL gets COPY")
    from django.test.utils import CaptureQueriesContext

    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    per = connection.features.max_query_params // (len(insert_columns(Item)) + 1)  # rows per statement
    assert per > 1
    for n in (1, per - 1, per, per + 1, 2 * per + 3):
        names = [f"n{n}-{i:04d}" for i in range(n)]
        with CaptureQueriesContext(connection) as queries:
            assert bulk_insert(Item, [_row(item_set, name, content={"request": name}) for name in names]) == n
        assert sum("INSERT INTO" in q["sql"] for q in queries.captured_queries) == 1
        stored = list(Item.objects.filter(external_id__startswith=f"n{n}-").order_by("id").values_list("external_id", "content__request"))
        assert stored == [(name, name) for name in names]  # every row once (none of the filler), ids in order


def test_the_block_of_a_bulk_insert_runs_after_the_rows_are_sent_and_they_are_stored_when_it_ends():
    from goldkey.lib.bulk import bulk_inserting_columns

    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    rows = [_row(item_set, f"blk{n}") for n in range(5)]
    ran = []
    with bulk_inserting_columns(Item, {name: [row[name] for row in rows] for name in rows[0]}) as written:
        ran.append(written)
    assert ran == [5]
    assert sorted(Item.objects.filter(item_set=item_set).values_list("external_id", flat=True)) == [f"blk{n}" for n in range(5)]


def test_a_query_in_the_block_of_a_bulk_insert_is_refused_and_nothing_is_written():
    from goldkey.lib.bulk import QueryInFlight, bulk_inserting_columns

    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    row = _row(item_set, "q")
    with pytest.raises(QueryInFlight, match="no query may run while a bulk insert writes its rows"):
        with bulk_inserting_columns(Item, {name: [value] for name, value in row.items()}):
            Item.objects.count()  # on PostgreSQL the connection is inside the COPY: this would hang
    assert not Item.objects.filter(item_set=item_set).exists()  # and the connection works again


def test_an_error_in_the_block_of_a_bulk_insert_cancels_it_and_is_the_error_raised():
    from goldkey.lib.bulk import bulk_inserting_columns

    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    rows = [_row(item_set, f"err{n}") for n in range(3)]
    with pytest.raises(LookupError, match="the block failed"):
        with bulk_inserting_columns(Item, {name: [row[name] for row in rows] for name in rows[0]}):
            raise LookupError("the block failed")
    assert not Item.objects.filter(item_set=item_set).exists()
    assert bulk_insert(Item, rows) == 3  # the table and the connection are usable afterwards


def test_a_row_the_database_refuses_is_reported_when_the_block_ends_after_the_block_ran():
    from django.db import IntegrityError

    from goldkey.lib.bulk import bulk_inserting_columns

    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    rows = [_row(item_set, "same"), _row(item_set, "same")]  # an item set's external ids are unique
    ran = []
    with pytest.raises(IntegrityError):
        with bulk_inserting_columns(Item, {name: [row[name] for row in rows] for name in rows[0]}):
            ran.append(True)
    assert ran == [True] or connection.vendor == "sqlite"  # SQLite refuses the rows before the block
    assert not Item.objects.filter(item_set=item_set).exists()


def _rows_then_failure(item_set, good: int):
    """`good` rows (more than one COPY buffer on PostgreSQL, so some are sent), then a row missing a column."""
    for n in range(good):
        yield _row(item_set, f"s{n:05d}")
    bad = _row(item_set, "bad")
    del bad["content"]
    yield bad


def test_a_row_refused_after_thousands_were_streamed_leaves_the_table_untouched_and_the_connection_usable():
    item_set = item_set_get_or_create(name="bulk", kind="lapse")
    with pytest.raises(BulkRowError, match=r"row 5001: missing \['content'\]"):
        bulk_insert(Item, _rows_then_failure(item_set, 5000))
    assert not Item.objects.filter(item_set=item_set).exists()
    assert bulk_insert(Item, (_row(item_set, f"ok{n}") for n in range(3))) == 3


def test_the_rows_of_a_bulk_insert_are_made_while_it_writes_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite takes every row before its first statement")
    from goldkey.lib.bulk import QueryInFlight

    item_set = item_set_get_or_create(name="bulk", kind="lapse")

    def rows():
        yield _row(item_set, "first")
        Item.objects.count()  # the connection is inside the COPY: refused, not hung
        yield _row(item_set, "second")

    with pytest.raises(QueryInFlight, match="no query may run while a bulk insert writes its rows"):
        bulk_insert(Item, rows())
    assert not Item.objects.filter(item_set=item_set).exists()
