"""PostgreSQL's parameters bound on the server (goldkey.lib.pgbinding): the statements a connection repeats
are prepared, and a statement with more parameters than the protocol carries still runs, bound on the
client, with its values intact."""

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor

from goldkey.env import database_from_url
from goldkey.lib.pgbinding import MAX_PARAMETERS, PREPARE_THRESHOLD, BoundedServerBindingCursor
from items.models import Conversation, Session

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite binds its parameters in the library"
)


def test_a_postgresql_url_binds_on_the_server_and_prepares():
    options = database_from_url("postgres://u:p@db:5432/goldkey")["OPTIONS"]
    assert options["server_side_binding"] is True  # Django checks `is True`
    assert options["prepare_threshold"] == PREPARE_THRESHOLD
    assert options["cursor_factory"] is BoundedServerBindingCursor


def test_the_url_keeps_its_options_and_sqlite_is_untouched():
    options = database_from_url("postgres://u:p@db:5432/goldkey?sslmode=require&application_name=web")["OPTIONS"]
    assert options["sslmode"] == "require" and options["application_name"] == "web"
    assert options["server_side_binding"] is True
    assert "OPTIONS" not in database_from_url("sqlite:////tmp/goldkey.sqlite3")


def test_the_url_turns_preparing_or_server_binding_off():
    behind_a_pooler = database_from_url("postgres://u:p@db:5432/goldkey?prepare_threshold=none")["OPTIONS"]
    assert behind_a_pooler["prepare_threshold"] is None and behind_a_pooler["server_side_binding"] is True
    assert database_from_url("postgres://db/goldkey?prepare_threshold=2")["OPTIONS"]["prepare_threshold"] == 2
    client_side = database_from_url("postgres://db/goldkey?server_side_binding=false&sslmode=require")["OPTIONS"]
    assert client_side == {"sslmode": "require"}  # Django's defaults: its ClientCursor, nothing prepared


@pytest.mark.parametrize("query, named", [("server_side_binding=maybe", "server_side_binding='maybe'"),
                                          ("prepare_threshold=often", "prepare_threshold='often'")])
def test_a_bad_url_option_fails_loudly_naming_it(query, named):
    with pytest.raises(ImproperlyConfigured, match=named):
        database_from_url(f"postgres://db/goldkey?{query}")


@postgres_only
@pytest.mark.django_db
def test_the_connection_binds_on_the_server():
    assert connection.features.uses_server_side_binding
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, BoundedServerBindingCursor)


def _prepared(cursor, marker: str) -> int:
    cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", [f"%{marker}%"])
    return cursor.fetchone()[0]


@postgres_only
@pytest.mark.django_db
def test_a_statement_a_connection_repeats_is_prepared():
    with connection.cursor() as cursor:
        for n in range(PREPARE_THRESHOLD):
            cursor.execute("SELECT %s::int + 1 AS repeated_statement_marker", [n])
        assert _prepared(cursor, "repeated_statement_marker") == 0  # prepared after the threshold, not before
        cursor.execute("SELECT %s::int + 1 AS repeated_statement_marker", [PREPARE_THRESHOLD])
        cursor.execute("SELECT %s::int + 1 AS repeated_statement_marker", [PREPARE_THRESHOLD + 1])
        assert cursor.fetchone() == (PREPARE_THRESHOLD + 2,)
        assert _prepared(cursor, "repeated_statement_marker") == 1


@postgres_only
@pytest.mark.django_db
def test_the_protocol_refuses_a_statement_beyond_its_parameters():
    # Why the cursor bounds: Django's own server-binding cursor sends such a statement and fails.
    values = list(range(MAX_PARAMETERS + 1))
    raw = connection.connection
    with pytest.raises(psycopg.OperationalError, match="65535"):
        ServerBindingCursor(raw).execute("SELECT 1 WHERE 0 IN (" + ", ".join(["%s"] * len(values)) + ")", values)
    # Refused before it was sent: the connection's transaction goes on.
    assert raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS


@postgres_only
@pytest.mark.django_db
def test_an_in_list_beyond_the_protocol_runs_with_its_values_intact():
    names = ["50%'s quote", 'a "double" one', "back\\slash"]
    Conversation.objects.bulk_create(Conversation(external_id=n, speaker_a="A", speaker_b="B") for n in names)
    wanted = [f"conv-{i}" for i in range(MAX_PARAMETERS + 10)] + names
    found = Conversation.objects.filter(external_id__in=wanted)
    assert sorted(found.values_list("external_id", flat=True)) == sorted(names)


@postgres_only
@pytest.mark.django_db
def test_a_bulk_create_beyond_the_protocol_writes_every_row():
    conversation = Conversation.objects.create(external_id="conv-bulk", speaker_a="A", speaker_b="B")
    n = MAX_PARAMETERS // 4 + 100  # four columns a row
    Session.objects.bulk_create(
        Session(conversation=conversation, number=i, date_time_raw=f"{i}% of 8 May, 2023") for i in range(n)
    )
    assert Session.objects.filter(conversation=conversation).count() == n
    assert Session.objects.get(conversation=conversation, number=n - 1).date_time_raw == f"{n - 1}% of 8 May, 2023"
