"""Pure work on data already in memory, run in a forked child process beside the caller's own work: the
second core of a machine for the CPU-bound Python of a release (rendering 100,000 records), which one
interpreter cannot spread over threads.

    with in_fork(render_part) as part:   # the child starts on render_part() with a copy of the memory
        ...                               # the parent does the rest meanwhile
        value = part.result()             # render_part()'s value, pickled back through a pipe

The child only computes and writes its pickled result: it never touches a database connection (a query
there is refused before it is sent), a file or a lock the parent holds, and ends with os._exit (no
atexit handler, no connection closed, no buffer flushed). Whatever happens to it (an exception, a
signal, a result that will not pickle, a query), `result()` runs the function in the parent instead
and logs a warning, so the value is always the function's: forking changes when the work is done,
never what it gives. Where fork is unavailable or refused, the function runs in the parent.
"""

import logging
import os
import pickle
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

T = TypeVar("T")


def worth_forking(rows: int) -> bool:
    """Whether work over this many rows (items, entries) is worth a process: forking a large interpreter
    takes a few milliseconds, and a large value's way back through the pipe more
    (settings.GOLDKEY_FORK_FROM_ROWS)."""
    return rows >= settings.GOLDKEY_FORK_FROM_ROWS


class in_fork:  # noqa: N801 (used as a function: `with in_fork(f) as part`)
    """function() started in a forked child; `result()` waits for its value. Leaving the block without
    asking for it (the parent's own work raised) stops and reaps the child."""

    def __init__(self, function: Callable[[], T], *, fork: bool = True):
        """`fork`: False runs the function in this process, when its value is asked for (work too small
        to be worth a process)."""
        self.function = function
        self.pid = None
        self.read_end = None
        self.done = False
        self.value = None
        if not fork or not hasattr(os, "fork"):
            return
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # the process limit, or no memory for the page tables: run it in the parent
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:
            _child(function, read_end, write_end)  # never returns
        os.close(write_end)
        self.pid, self.read_end = pid, read_end

    def __enter__(self) -> "in_fork":
        return self

    def __exit__(self, *exc) -> None:
        self._reap()

    def result(self) -> T:
        if self.done:
            return self.value
        payload = None
        if self.pid is not None:
            chunks = []
            while chunk := os.read(self.read_end, 1 << 20):
                chunks.append(chunk)
            status = self._reap()
            if status in (0, None):  # None: reaped by another handler (a pool's SIGCHLD), judged by the payload
                payload = b"".join(chunks)
        value = self.function() if not payload else self._loads(payload)
        self.done, self.value = True, value
        return value

    def _loads(self, payload: bytes):
        try:
            return pickle.loads(payload)  # noqa: S301 (written by our own child)
        except Exception:  # a child killed mid-write
            logger.warning("the forked part %s came back incomplete: running it in this process", self.function)
            return self.function()

    def _reap(self) -> int | None:
        if self.read_end is not None:
            os.close(self.read_end)  # a child still writing gets EPIPE and ends
            self.read_end = None
        if self.pid is None:
            return None
        pid, self.pid = self.pid, None
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return None
        if status:
            logger.warning("the forked part %s ended with status %s: running it in this process", self.function, status)
        return status


def _refuse_queries(execute, sql, params, many, context):
    raise RuntimeError("a forked part may not query the database: its connections are the parent's")


def _child(function, read_end: int, write_end: int) -> None:
    status = 1
    try:
        os.close(read_end)
        # A query would speak on the parent's connection (a PostgreSQL socket, a SQLite transaction): refused
        # before it is sent, so that a function that queries fails here and the parent runs it instead.
        for connection in connections.all(initialized_only=True):
            connection.execute_wrappers.append(_refuse_queries)
        payload = pickle.dumps(function(), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(write_end, view):]
        status = 0
    except BaseException:  # noqa: BLE001, S110 (the parent runs the function itself)
        pass
    finally:
        os._exit(status)
