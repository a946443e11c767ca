"""One bulk inserter for batch writes (imports, freezing a key) that must not pay the ORM's per-object cost.

At 100,000 items, building model instances and preparing every value field by field was most of an
import. Callers validate everything before they write, so this writes rows as they are: PostgreSQL
gets COPY, other databases one executemany. Constraint violations and
database triggers still fire, so nothing is hidden.

The columns come from the model's `_meta`, not from a list kept beside it: a row must name every
concrete field except the auto primary key (the database knows no Django defaults), and a missing or
unknown name is refused before anything is written.
"""

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from operator import itemgetter

from django.db import connection, models


class BulkRowError(ValueError):
    pass


def insert_columns(model) -> list[models.Field]:
    """The fields a bulk insert writes: every concrete field but an auto-created primary key."""
    return [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]


def _converter(field: models.Field):
    """The one preparation a value needs to be written as is (None for values written unchanged)."""
    if isinstance(field, models.JSONField):
        return lambda value: None if value is None else json.dumps(value)
    if isinstance(field, models.DateTimeField) and connection.vendor != "postgresql":
        return lambda value: connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value
    return None


def bulk_insert(model, rows: Iterable[Mapping[str, object]]) -> int:
    """Insert rows given as dicts keyed by field attname (`item_set_id`, `external_id`, …); returns the
    number of rows written."""
    fields = insert_columns(model)
    names = [f.attname for f in fields]
    pick = itemgetter(*names)
    converters = [(i, conv) for i, f in enumerate(fields) if (conv := _converter(f)) is not None]
    expected = set(names)

    def prepared():
        for n, row in enumerate(rows, 1):
            if len(row) != len(expected) or not expected.issuperset(row):
                missing, unknown = sorted(expected - set(row)), sorted(set(row) - expected)
                raise BulkRowError(
                    f"{model._meta.label} row {n}: missing {missing or 'nothing'}, unknown {unknown or 'nothing'}"
                )
            values = list(pick(row))
            for i, conv in converters:
                values[i] = conv(values[i])
            yield values

    # Every row is checked before the first is written, so a bad row leaves the table untouched.
    prepared_rows = list(prepared())
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for values in prepared_rows:
                    copy.write_row(values)
            return len(prepared_rows)
        # One prepared statement for every row: constant in queries whatever the size, and SQLite's
        # fastest path (its 999-parameter limit never applies to executemany).
        marks = ", ".join(["%s"] * len(fields))
        cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", prepared_rows)
    return len(prepared_rows)
