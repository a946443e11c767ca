"""Pure work on data already in memory, run in a forked child process beside the caller's own work: the
second core of a machine for the CPU-bound Python of a release (rendering 100,000 records), which one
interpreter cannot spread over threads.

    with in_fork(render_part) as part:   # the child starts on render_part() with a copy of the memory
        ...                               # the parent does the rest meanwhile
        value = part.result()             # render_part()'s value, pickled back through a memory file

The child only computes and writes its pickled result: it never touches a database connection (a query
there is refused before it is sent), a file or a lock the parent holds, and ends with os._exit (no
atexit handler, no connection closed, no buffer flushed). Whatever happens to it (an exception, a
signal, a result that will not pickle, a query), `result()` runs the function in the parent instead
and logs a warning, so the value is always the function's: forking changes when the work is done,
never what it gives. Where fork is unavailable or refused, the function runs in the parent.
"""

import logging
import mmap
import os
import pickle
import signal
import tempfile
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

T = TypeVar("T")


def worth_forking(rows: int) -> bool:
    """Whether work over this many rows (items, entries) is worth a process: forking a large interpreter
    takes a few milliseconds, and a large value's way back (pickled, written, mapped, unpickled) more
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
        self.payload = None
        self.done = False
        self.value = None
        if not fork or not hasattr(os, "fork"):
            return
        # The value comes back through an anonymous file in memory, not a pipe: the child writes it whole
        # and ends without waiting for the parent to read (a pipe holds 64 KiB, and the parent is busy
        # with its own part when the child finishes: 100 MB went through in 64 KiB turns, each waiting
        # for the other process), and the parent maps it and unpickles it in one go.
        payload = _memory_file()
        try:
            pid = os.fork()
        except OSError:  # the process limit, or no memory for the page tables: run it in the parent
            os.close(payload)
            return
        if pid == 0:
            _child(function, payload)  # never returns
        self.pid, self.payload = pid, payload

    def __enter__(self) -> "in_fork":
        return self

    def __exit__(self, *exc) -> None:
        if self.pid is not None:  # left without asking for the value: the child's work is not wanted
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
        self._close()

    def result(self) -> T:
        if self.done:
            return self.value
        value = _NONE
        if self.pid is not None:
            try:
                value = self._value_of_child()
            finally:
                self._close()
        if value is _NONE:
            value = self.function()
        self.done, self.value = True, value
        return value

    def _value_of_child(self):
        status = self._reap()
        if status:
            logger.warning("the forked part %s ended with status %s: running it in this process", self.function, status)
            return _NONE
        # Status None: reaped by another handler (a pool's SIGCHLD), so the payload judges: a child killed
        # before or while writing leaves no pickle or one without its end, which does not load.
        size = os.fstat(self.payload).st_size
        try:
            if not size:
                raise EOFError("no value written")
            with mmap.mmap(self.payload, size, prot=mmap.PROT_READ) as mapped:
                return pickle.loads(mapped)  # noqa: S301 (written by our own child)
        except Exception:
            logger.warning("the forked part %s came back incomplete: running it in this process", self.function)
            return _NONE

    def _reap(self) -> int | None:
        pid, self.pid = self.pid, None
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return None
        return status

    def _close(self) -> None:
        if self.payload is not None:
            os.close(self.payload)
            self.payload = None


_NONE = object()  # no value from the child (None is a value)


def _memory_file() -> int:
    """A file descriptor of a new, nameless file (in memory where the system has memfd_create)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("goldkey-forked-part", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:  # unlinked already: gone when the last descriptor closes
        return os.dup(file.fileno())


def _refuse_queries(execute, sql, params, many, context):
    raise RuntimeError("a forked part may not query the database: its connections are the parent's")


def _child(function, payload: int) -> None:
    status = 1
    try:
        # A query would speak on the parent's connection (a PostgreSQL socket, a SQLite transaction): refused
        # before it is sent, so that a function that queries fails here and the parent runs it instead.
        for connection in connections.all(initialized_only=True):
            connection.execute_wrappers.append(_refuse_queries)
        # Pickled straight into the file: the pickler writes a large bytes value (a release file) to the
        # file as it is, where pickle.dumps copied every value into one growing buffer first — memory
        # touched for the first time, a page fault per 4 KiB (26,000 for a 100 MB value).
        with open(payload, "wb", closefd=False) as file:
            pickle.dump(function(), file, protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    except BaseException:  # noqa: BLE001, S110 (the parent runs the function itself)
        pass
    finally:
        os._exit(status)
