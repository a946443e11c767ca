"""The migration that replaces the entries' insert checks and drops their key_id index, both ways (SQLite
and PostgreSQL): what it installs, and that a frozen key refuses inserts before and after it."""

import re

import pytest
from django.db import IntegrityError, connection, transaction

from tests.migrating import migrate, migrate_to_latest

BEFORE = [("keys", "0009_erratum_add")]
ENTRY = "adjudication_keyentry"

# name -> timing and events (in the order the database prints them), per row or per statement
TRIGGERS = {
    "sqlite": {
        "before": {
            "keyentry_frozen_no_insert": "BEFORE INSERT", "keyentry_frozen_no_replace": "BEFORE INSERT",
            "keyentry_frozen_no_update": "BEFORE UPDATE", "keyentry_frozen_no_delete": "BEFORE DELETE",
        },
        "after": {
            "keyentry_frozen_no_insert": "BEFORE INSERT",
            "keyentry_frozen_no_update": "BEFORE UPDATE", "keyentry_frozen_no_delete": "BEFORE DELETE",
        },
    },
    "postgresql": {
        "before": {
            "keyentry_frozen_immutable": "BEFORE INSERT OR DELETE OR UPDATE ROW",
            "keyentry_no_truncate": "BEFORE TRUNCATE STATEMENT",
        },
        "after": {
            "keyentry_frozen_immutable": "BEFORE DELETE OR UPDATE ROW",
            "keyentry_frozen_no_insert": "AFTER INSERT STATEMENT",
            "keyentry_no_truncate": "BEFORE TRUNCATE STATEMENT",
        },
    },
}
INDEXES = {
    "before": {("item_id",), ("key_id",), ("key_id", "external_id")},
    "after": {("item_id",), ("key_id", "external_id")},
}




def triggers() -> dict[str, str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [ENTRY])
            pattern = r"CREATE TRIGGER \w+ (\w+ \w+) ON"
        else:
            cursor.execute(
                "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                [ENTRY],
            )
            pattern = r"CREATE TRIGGER \w+ ((?:BEFORE|AFTER) [A-Z ]+?) ON .* FOR EACH (ROW|STATEMENT)"
        found = {}
        for name, definition in cursor.fetchall():
            if "_valid_key_references_" in name:  # keys 0013's reference checks: tests/keys/test_entry_references.py
                continue
            match = re.match(pattern, " ".join(definition.split()))
            found[name] = " ".join(match.groups())
        return found


def indexes() -> set[tuple[str, ...]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, ENTRY)
    return {
        tuple(c["columns"]) for c in constraints.values()
        if (c["index"] or c["unique"]) and not c["primary_key"] and not c["foreign_key"]
    }


def inserts_into_a_frozen_key_are_refused(key) -> None:
    # Only the columns every migration state has: later migrations add columns the model reads.
    entry_id, item_id = key.entries.order_by("id").values_list("id", "item_id").first()
    statements = [
        (f"INSERT INTO {ENTRY} (key_id, item_id, external_id, gold, evidence, quote, family, history_turns, provenance) "
         "VALUES (%s, %s, 'extra', 'aligned', '[]', '', '', NULL, 'kept_unanimous')", [key.pk, item_id]),
    ]
    if connection.vendor == "sqlite":
        statements.append((f"INSERT OR REPLACE INTO {ENTRY} SELECT * FROM {ENTRY} WHERE id = %s", [entry_id]))
    for sql, params in statements:
        with pytest.raises(IntegrityError, match="frozen gold keys are immutable"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql, params)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("frozen_rows_teardown")
def test_the_insert_checks_migration_reverses_and_reapplies(frozen_key):
    expected = TRIGGERS[connection.vendor]
    assert triggers() == expected["after"] and indexes() == INDEXES["after"]
    migrate(BEFORE)
    try:
        assert triggers() == expected["before"] and indexes() == INDEXES["before"]
        inserts_into_a_frozen_key_are_refused(frozen_key)
    finally:
        migrate_to_latest()
    assert triggers() == expected["after"] and indexes() == INDEXES["after"]
    inserts_into_a_frozen_key_are_refused(frozen_key)
