"""One bulk inserter for batch writes (imports, freezing a key) that must not pay the ORM's per-object cost.

At 100,000 items, building model instances and preparing every value field by field was most of an
import. Callers validate everything before they write, so this writes rows as they are: PostgreSQL
gets COPY, SQLite one executemany of a many-row INSERT. Constraint violations and
database triggers still fire, so nothing is hidden.

The columns come from the model's `_meta`, not from a list kept beside it: a row must name every
concrete field except the auto primary key (the database knows no Django defaults), and a missing or
unknown name is refused, and nothing is written. `bulk_insert` takes a dict per row, from any iterable:
on PostgreSQL they are streamed (each row sent as it is made, inside a savepoint, so a refused row takes
back the ones before it);
`bulk_insert_columns` the same rows as one list per column, for many narrow rows where building a
dict per row would cost more than writing it; `bulk_inserting_columns` the same, with a block of the
caller's own work run while the database finishes the insert.
"""

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from operator import itemgetter

import orjson
from django.db import connection, models, transaction


class BulkRowError(ValueError):
    pass


def insert_columns(model) -> list[models.Field]:
    """The fields a bulk insert writes: every concrete field but an auto-created primary key."""
    return [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]


# orjson's types beyond json.dumps's (a datetime, a dataclass) raise TypeError instead of being written.
_ORJSON_AS_JSON_DUMPS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def json_text(value) -> str | None:
    """The JSON text of a JSON column's value (None stays None: SQL NULL): a text the database reads as the
    same value as `json.dumps(value)` (its characters may differ: orjson writes é where json.dumps writes
    \\u00e9, 1e16 for 1e+16), written by orjson in a sixth of json.dumps's time (a fifth of an import's
    Python while its items stream). json.dumps writes it where orjson would not give the same value or
    error: a null anywhere (orjson writes NaN and Infinity as null, json.dumps as what PostgreSQL refuses),
    an integer beyond 64 bits or a key that is not a str (orjson refuses them), a type json.dumps refuses."""
    if value is None:
        return None
    try:
        text = orjson.dumps(value, option=_ORJSON_AS_JSON_DUMPS)
    except TypeError:
        return json.dumps(value)
    if b"null" in text:
        return json.dumps(value)
    return text.decode()


def _converter(field: models.Field):
    """The one preparation a value needs to be written as is (None for values written unchanged)."""
    if isinstance(field, models.JSONField):
        return json_text
    if isinstance(field, models.DateTimeField) and connection.vendor != "postgresql":
        return lambda value: connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value
    return None


# Between two lists in one encoded list, NaN (a bare token, never a string) makes the text `], NaN, [`.
_LIST_SEPARATOR = "], NaN, ["
_NAN = float("nan")


def json_texts(values: Sequence) -> list:
    """`json.dumps(value)` of every value (None stays None: SQL NULL), as the JSON converter writes it.

    A column of lists (a key's evidence: 100,000 short lists) is encoded in ONE call, as a list with
    NaN between its lists, and the text split where they meet: the text of a list is its items' texts
    joined by the item separator, each the text json.dumps gives it alone. Where two lists meet,
    `], NaN, [` is structural; the same text inside a list (in a string, or a nested list beside a
    NaN) only adds occurrences, and the separator cannot overlap itself, so a count of exactly
    len - 1 means every occurrence is a meeting point. Otherwise, or for any other values, each value
    is encoded on its own (as keys.canonical.jsonl_bytes does for records)."""
    if len(values) > 1 and all(type(value) is list for value in values):
        interleaved = [_NAN] * (2 * len(values) - 1)
        interleaved[::2] = values
        text = json.dumps(interleaved)[1:-1]
        if text.count(_LIST_SEPARATOR) == len(values) - 1:
            # json.dumps never writes a raw NUL (a string holds it escaped, as \u0000): a safe place to split.
            return text.replace(_LIST_SEPARATOR, "]\0[").split("\0")
    return [None if value is None else json.dumps(value) for value in values]


def bulk_insert(model, rows: Iterable[Mapping[str, object]]) -> int:
    """Insert rows given as dicts keyed by field attname (`item_set_id`, `external_id`, …); returns the
    number of rows written."""
    fields = insert_columns(model)
    names = [f.attname for f in fields]
    pick = itemgetter(*names)
    converters = [(i, conv) for i, f in enumerate(fields) if (conv := _converter(f)) is not None]
    expected = set(names)

    written = 0

    def prepared():
        # Per row, one comparison of the key sets and the picked tuple as it is where no value needs
        # converting (an import's 200,000 citations): a third of the time of counting, testing and copying
        # each row into a list.
        nonlocal written
        for written, row in enumerate(rows, 1):
            if row.keys() != expected:
                missing, unknown = sorted(expected - set(row)), sorted(set(row) - expected)
                raise BulkRowError(
                    f"{model._meta.label} row {written}: missing {missing or 'nothing'}, unknown {unknown or 'nothing'}"
                )
            values = pick(row)
            if converters:
                values = list(values)
                for i, conv in converters:
                    values[i] = conv(values[i])
            yield values

    if connection.vendor == "postgresql":
        # Streamed: each row is sent as it is made, so the caller's work making the rows (an import's
        # 100,000 items and 200,000 citations) runs while PostgreSQL parses, indexes and checks the rows
        # before it, on the other core. A row refused mid-stream (here, by the caller's generator or by
        # the database) cancels the COPY, and the savepoint takes back the rows already sent. (psycopg's
        # queued writer, sending from a thread, measured no faster: the socket's buffer already lets the
        # two sides overlap.)
        with transaction.atomic(), connection.execute_wrapper(_no_queries):
            _write(model, fields, prepared())
    else:
        # Every row is checked before the first is written (SQLite's statements take them in chunks).
        _write(model, fields, list(prepared()))
    return written


def bulk_insert_columns(model, columns: Mapping[str, Sequence]) -> int:
    """Insert rows given column by column: `{attname: values}`, every column as long as the others;
    returns the number of rows written. The same rows as `bulk_insert` without a dict per row, for
    many narrow rows (a campaign's assignments, two per item and annotator pair)."""
    with bulk_inserting_columns(model, columns) as written:
        return written


class QueryInFlight(RuntimeError):
    """A query while the connection is inside a COPY: from the block of `bulk_inserting_columns`, or from the
    rows `bulk_insert` is given, which are made while they are written."""


def _no_queries(execute, sql, params, many, context):
    raise QueryInFlight(
        "no query may run while a bulk insert writes its rows: the connection is inside the COPY (query: "
        + sql[:80] + ")"
    )


@contextmanager
def bulk_inserting_columns(model, columns: Mapping[str, Sequence]) -> Iterator[int]:
    """`bulk_insert_columns`, with the block run while the database finishes the insert; yields the
    number of rows. On PostgreSQL every row has been sent when the block starts, and the end of the
    COPY is awaited after it: the server parses, inserts, indexes and checks the rows (a third of a
    second for a 100,000-entry key) while this process does the block's work. Its errors (a
    constraint, a trigger) are raised when the block ends. On SQLite the rows are inserted before
    the block runs.

    The block must not use the database — on PostgreSQL the connection is in the middle of the COPY —
    so a query in it is refused (QueryInFlight), on both databases alike. If the block raises, nothing
    is written (the COPY is cancelled; on SQLite the insert's savepoint is rolled back), and the block's
    exception is the one raised."""
    fields = insert_columns(model)
    names = [f.attname for f in fields]
    expected = set(names)
    if set(columns) != expected:
        missing, unknown = sorted(expected - set(columns)), sorted(set(columns) - expected)
        raise BulkRowError(f"{model._meta.label} columns: missing {missing or 'nothing'}, unknown {unknown or 'nothing'}")
    lengths = {name: len(columns[name]) for name in names}
    if len(set(lengths.values())) > 1:
        raise BulkRowError(f"{model._meta.label} columns of different lengths: {lengths}")
    values = []
    for field, name in zip(fields, names, strict=True):
        if isinstance(field, models.JSONField):
            values.append(json_texts(columns[name]))
            continue
        conv = _converter(field)
        values.append(columns[name] if conv is None else [conv(v) for v in columns[name]])
    with transaction.atomic(), _writing(model, fields, zip(*values, strict=True)), connection.execute_wrapper(_no_queries):
        yield lengths[names[0]]


# Pages SQLite may keep while one bulk statement runs (KiB; negative means KiB in PRAGMA cache_size).
# The default 2 MiB is smaller than the indexes a large insert touches in random order (an assignment's
# item, its (enrollment, item) pair), so pages were dropped and read back through the pager for every
# few rows: a 200,000-row insert spent about as long on that as on inserting. Memory is only taken as
# pages are used, and the connection's own setting comes back afterwards.
SQLITE_BULK_CACHE_KIB = 64 * 1024


def _write(model, fields: list[models.Field], rows: Iterable[Sequence]) -> None:
    with _writing(model, fields, rows):
        pass


@contextmanager
def _writing(model, fields: list[models.Field], rows: Iterable[Sequence]) -> Iterator[None]:
    """Write the rows; the block runs after they are sent (PostgreSQL: before the COPY's end is awaited)
    or inserted (SQLite)."""
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for values in rows:
                    copy.write_row(values)
                yield
            return
        sql, statements = _sqlite_statements(table, columns, len(fields), list(rows))
        cursor.execute("PRAGMA cache_size")
        (cache_size,) = cursor.fetchone()
        cursor.execute(f"PRAGMA cache_size = {-SQLITE_BULK_CACHE_KIB}")
        try:
            cursor.executemany(sql, statements)
        finally:
            cursor.execute(f"PRAGMA cache_size = {int(cache_size)}")
    yield


def _sqlite_statements(table: str, columns: str, width: int, rows: list[Sequence]):
    """One prepared INSERT of many rows, and its parameters, statement by statement.

    A table with an INSERT trigger makes SQLite keep a statement journal for each INSERT (a copy of every
    page the statement changes, so that a RAISE undoes that statement alone). With one statement per
    row, that copied the 4-5 pages each row touches: about 1,000,000 page copies for a 100,000-entry
    key, written to a temporary file once an enclosing savepoint's journal had spilled there (as in a
    freeze), which was half of the insert. With as many rows per statement as Django lets SQLite bind (999
    parameters), a page is copied once per statement. One statement shape serves every chunk, the last one
    too (constant in queries whatever the size): each row comes with a flag, 1, and the last statement
    is filled up with rows flagged 0, which its WHERE leaves out. Same rows, in the same order (so the
    same ids), the same constraints and triggers."""
    per = max(1, min(len(rows), connection.features.max_query_params // (width + 1)))
    marks = "(" + ", ".join(["%s"] * (width + 1)) + ")"
    picked = ", ".join(f"column{i}" for i in range(2, width + 2))  # SQLite names VALUES columns column1, …
    sql = f"INSERT INTO {table} ({columns}) SELECT {picked} FROM (VALUES {', '.join([marks] * per)}) WHERE column1"
    filler = (0,) + (None,) * width

    def statements():
        for start in range(0, len(rows), per):
            chunk = rows[start:start + per]
            params = [value for row in chunk for value in (1, *row)]
            params.extend(filler * (per - len(chunk)))
            yield params

    return sql, statements()
