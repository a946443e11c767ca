"""PostgreSQL connections bind their parameters on the server, so that psycopg prepares the statements a
connection runs again and again: PostgreSQL then parses and plans each of them once per connection
instead of on every request.

A request's statements are the same few each time (the session, the user, the campaign, the item, a
decision's writes), and on a busy machine the backend's parsing and planning of each is stretched by the
wait for a CPU: prepared, an adjudicator's decision beside a whole test suite waits a quarter to a third
less (bench/README.md, issue 40 session 7). Django binds on the client by default; it supports binding on
the server as an option (`server_side_binding`), and psycopg prepares a statement once it has run
`prepare_threshold` times on a connection.

What binding on the server changes: the protocol carries at most 65,535 parameters in a statement, and
Django 5.2 does not split a statement for that on PostgreSQL (an `__in` list or a `bulk_create` grows with
the data). Such a statement is bound on the client here, exactly as Django binds every statement by
default, instead of failing as an OperationalError.

`env.database_from_url` puts both in every PostgreSQL entry's OPTIONS; the URL can turn them off.
"""

from django.db.backends.postgresql.base import ServerBindingCursor
from psycopg import ClientCursor

# The extended query protocol counts a statement's parameters in 16 bits.
MAX_PARAMETERS = 65_535
# Runs of one statement on a connection before psycopg prepares it (psycopg's own default): a request's
# statements pass it within the first requests a connection serves, a one-off report's never do.
PREPARE_THRESHOLD = 5


class BoundedServerBindingCursor(ServerBindingCursor):
    """Django's cursor with parameters bound on the server, but for a statement with more parameters than
    the protocol carries: its parameters are merged into its text on the client, as psycopg's
    ClientCursor (Django's default) sends every statement."""

    def execute(self, query, params=None, **kwargs):
        if params is not None and len(params) > MAX_PARAMETERS:
            query, params = ClientCursor(self.connection).mogrify(query, params), None
        return super().execute(query, params, **kwargs)
