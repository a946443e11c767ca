"""`manage.py runserver` (what `make demo` serves with) is Goldkey's: WhiteNoise's, with Nagle's algorithm
off on every connection it accepts, so a kept-alive browser connection does not wait for a delayed
acknowledgement between a response's headers and its body."""

import socket

from django.core.management import get_commands, load_command_class
from django.core.servers.basehttp import WSGIRequestHandler

from goldkey.devserver.management.commands.runserver import NoDelayWSGIServer


def test_runserver_is_goldkeys_and_keeps_whitenoises_static_files_off():
    assert get_commands()["runserver"] == "goldkey.devserver"
    command = load_command_class("goldkey.devserver", "runserver")
    assert command.server_cls is NoDelayWSGIServer
    names = [f"{c.__module__}.{c.__name__}" for c in type(command).__mro__]
    assert "whitenoise.runserver_nostatic.management.commands.runserver.Command" in names


def test_every_accepted_connection_has_nagles_algorithm_off():
    server = NoDelayWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    client = socket.create_connection(server.server_address, timeout=5)
    try:
        accepted, _ = server.get_request()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            accepted.close()
        # what the plain server accepts has it on: the setting above is what this class adds
        plain = socket.create_connection(server.server_address, timeout=5)
        raw, _ = server.socket.accept()
        assert raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        raw.close()
        plain.close()
    finally:
        client.close()
        server.server_close()
