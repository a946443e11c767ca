"""Counts the requests the live server is handling, so that a browser test ends only once the server is
quiet. Closing a page fires its pagehide handler, which sends a keepalive save that outlives the page;
without this wait that request reaches the server while the test database is being flushed, and the two
deadlock (the flush then fails and leaves the next test a dirty database)."""

import threading
import time

_changed = threading.Condition()
_in_flight = 0
_last_seen = 0.0


class CountRequests:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        global _in_flight, _last_seen
        with _changed:
            _in_flight += 1
            _last_seen = time.monotonic()
        try:
            return self.get_response(request)
        finally:
            with _changed:
                _in_flight -= 1
                _last_seen = time.monotonic()
                _changed.notify_all()


def wait_until_quiet(*, quiet_s: float = 0.3, timeout_s: float = 10.0) -> bool:
    """True once no request is in flight and none has arrived for `quiet_s` (a request already sent by
    the browser has that long to reach the server); False if the server is still busy after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    with _changed:
        while True:
            now = time.monotonic()
            if _in_flight == 0 and now - _last_seen >= quiet_s:
                return True
            if now >= deadline:
                return False
            _changed.wait(timeout=min(quiet_s, deadline - now))
