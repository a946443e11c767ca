"""goldkey/lib/forked.py: a pure function run in a forked child gives its value, or, whatever happens to
the child, the value the parent computes itself; a child is always reaped."""

import os
import signal
import time

import pytest

from goldkey.lib.forked import in_fork

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_function_runs_in_another_process_and_its_value_comes_back():
    parent = os.getpid()
    big = b"x" * 3_000_000  # larger than a pipe's buffer: written while the parent reads
    with in_fork(lambda: (os.getpid(), big + b"!", {"nested": [1, "é"]})) as part:
        assert part.pid is not None
        pid = part.pid
        where, content, value = part.result()
    assert where == pid != parent
    assert content == big + b"!" and value == {"nested": [1, "é"]}
    assert part.result()[0] == pid  # asked again: the same value, not a second run
    assert _reaped(pid)


def test_the_child_writes_its_whole_value_and_ends_before_the_parent_asks_for_it():
    # A value far larger than a pipe's buffer: the child does not wait for the parent to read it (the
    # parent is busy with its own part until it asks).
    with in_fork(lambda: b"z" * 20_000_000) as part:
        deadline = time.monotonic() + 30
        ended = None
        while ended is None and time.monotonic() < deadline:
            # WNOWAIT: seen to have ended, left to result() to reap.
            ended = os.waitid(os.P_PID, part.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            time.sleep(0.01)
        assert ended is not None and ended.si_status == 0
        assert part.result() == b"z" * 20_000_000


def test_a_child_that_fails_leaves_the_work_to_the_parent(caplog):
    parent = os.getpid()

    def fails_in_the_child():
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return "computed by the parent"

    with in_fork(fails_in_the_child) as part:
        pid = part.pid
        assert part.result() == "computed by the parent"
    assert _reaped(pid)
    assert [r.levelname for r in caplog.records if r.name == "goldkey.lib.forked"] == ["WARNING"]  # said so


def test_a_child_killed_by_a_signal_leaves_the_work_to_the_parent():
    parent = os.getpid()

    def killed_in_the_child():
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return os.getpid()

    with in_fork(killed_in_the_child) as part:
        assert part.result() == parent


def test_a_value_that_does_not_pickle_is_computed_by_the_parent():
    parent = os.getpid()
    with in_fork(lambda: (os.getpid(), lambda: None)) as part:
        where, function = part.result()
    assert where == parent and callable(function)


def test_a_value_that_fails_to_pickle_after_a_large_part_was_written_is_computed_by_the_parent():
    # The child pickles straight into the file: 5 MB are written before the function is found not to
    # pickle, and what is there does not pass for a value.
    parent = os.getpid()
    with in_fork(lambda: (os.getpid(), b"x" * 5_000_000, lambda: None)) as part:
        where, content, function = part.result()
    assert where == parent and len(content) == 5_000_000 and callable(function)


def test_leaving_the_block_without_the_value_stops_and_reaps_the_child():
    with pytest.raises(KeyError), in_fork(lambda: b"y" * 5_000_000) as part:
        pid = part.pid
        raise KeyError("the parent's own work failed")
    assert _reaped(pid)


def test_without_fork_the_function_runs_here_when_its_value_is_asked_for():
    calls = []
    with in_fork(lambda: calls.append(os.getpid()) or "value", fork=False) as part:
        assert part.pid is None and calls == []
        assert part.result() == "value"
    assert calls == [os.getpid()]


@pytest.mark.django_db
def test_a_query_in_the_child_is_refused_before_it_is_sent_and_the_parent_runs_the_function():
    from django.contrib.auth import get_user_model
    from django.db import connection

    get_user_model().objects.create(username="in-the-parents-transaction")
    parent = os.getpid()

    def counts_users():
        return os.getpid(), get_user_model().objects.count()

    with in_fork(counts_users) as part:
        where, users = part.result()
    assert (where, users) == (parent, 1)
    # The parent's connection and its transaction are intact.
    assert get_user_model().objects.filter(username="in-the-parents-transaction").exists()
    assert connection.execute_wrappers == []
