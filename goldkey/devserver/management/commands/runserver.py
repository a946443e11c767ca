"""`runserver` (WhiteNoise's, which leaves static files to WhiteNoise) with Nagle's algorithm off on every
accepted connection.

The development server's handler writes a response's status line and headers, then its body, in separate
sends. With Nagle's algorithm on, the body waits until the client acknowledges the headers, and a
client on a kept-alive connection (every browser) delays that acknowledgement by up to 40 ms: each page
after the first took ~44 ms where a fresh connection took ~4 ms. gunicorn, the production server,
already sets TCP_NODELAY.
"""

import socket

from django.core.servers.basehttp import WSGIServer
from whitenoise.runserver_nostatic.management.commands.runserver import Command as RunserverCommand


class NoDelayWSGIServer(WSGIServer):
    def get_request(self):
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class Command(RunserverCommand):
    server_cls = NoDelayWSGIServer
