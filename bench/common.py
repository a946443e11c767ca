"""What the benches that time a user's path share: the load, percentiles, a server, a fresh connection.

A user's browser or script meets a server it opens a connection to; a bench that reuses one keep-alive
connection times less than they wait for (the TCP handshake and, for gunicorn's sync workers, the worker
taking the new connection). `fresh_get` therefore sends `Connection: close`: every request
opens its own connection, with the session's cookies.
"""

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOSE = {"Connection": "close"}


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages: every figure is printed with them."""
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat (idle and I/O wait are not busy)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def settled(*, busy_below: float = 0.1, window_s: float = 0.5, limit_s: float = 30.0) -> float:
    """Before a whole-tool timing: the files written so far flushed to disk, then a wait until the machine is
    idle (less than `busy_below` of its CPU time busy over a `window_s` window); returns the seconds both took
    (the wait at most `limit_s`). A tool's work outlasts its answer: the kernel writes its files back to disk
    (Label Studio's SQLite database, PostgreSQL's tables) for seconds after, and a server or PostgreSQL's
    autovacuum may go on working; the other tool, timed next, would pay for it."""
    start = time.perf_counter()
    os.sync()
    while time.perf_counter() - start < limit_s:
        busy, total = _cpu_ticks()
        time.sleep(window_s)
        busy_after, total_after = _cpu_ticks()
        if total_after > total and (busy_after - busy) / (total_after - total) < busy_below:
            break
    return round(time.perf_counter() - start, 2)


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def latency(seconds: list[float]) -> dict:
    """p50/p95/max in milliseconds of a list of wall times, with the load they were measured at."""
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2),
            "max_ms": round(max(ms), 2), "load": load()}


def latency_line(name: str, figures: dict) -> str:
    return (f"  {name:<48} n={figures['n']:<4} p50={figures['p50_ms']:7.2f} p95={figures['p95_ms']:7.2f} "
            f"max={figures['max_ms']:8.2f} ms   (load {figures['load']})")


def bytecode_compiled() -> None:
    """The project's modules compiled to bytecode, as an installation has them, before a command's start-up is
    timed: with PYTHONDONTWRITEBYTECODE set and no .pyc files beside the code, every process compiles each
    module from source again (0.1-0.2 s of a command's start-up here)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", r"(^|/)(\.venv|var)(/|$)", str(ROOT)],
                   check=True, capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by a process and its children (gunicorn's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


class Server:
    """A server process in its own process group, its output in a file (a pipe nobody reads fills up and
    stops it), stopped with its workers."""

    def __init__(self, command: list[str], *, env: dict, log: Path, port: int, cwd: Path = ROOT, ready_s: float = 60):
        self.base, self.log = f"http://127.0.0.1:{port}", log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{' '.join(command[:3])} did not listen on port {port} within {ready_s:.0f} s")

    def cpu_s(self) -> float:
        return process_tree_cpu_s(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def gunicorn(env: dict, folder: Path, workers: int = 2) -> Server:
    """Goldkey behind gunicorn (sync workers), as deployed, on the database `env` names."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "goldkey.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers),
               "--log-level", "warning"]
    return Server(command, env=env, log=folder / f"gunicorn-{port}.log", port=port)


def fresh_get(session, url: str, **kwargs):
    """GET on a connection of its own (see the module's docstring). The session's pooled connections are
    closed first: a server that closes after answering without saying so (Django's runserver) would
    otherwise leave a dead connection in the pool for the next request to fail on."""
    session.close()
    return session.get(url, headers={**CLOSE, **kwargs.pop("headers", {})}, **kwargs)


def goldkey_login(session, base: str, username: str, password: str) -> None:
    """Log in through the login form, as a browser does (the CSRF cookie, then the form)."""
    session.get(f"{base}/accounts/login/", headers=CLOSE).raise_for_status()
    response = session.post(f"{base}/accounts/login/", headers={**CLOSE, "Referer": f"{base}/accounts/login/"},
                            data={"username": username, "password": password,
                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]}, allow_redirects=False)
    if response.status_code != 302:
        raise RuntimeError(f"login of {username} failed: {response.status_code}")


def annotators(names, password: str) -> list:
    """Users in the annotator group, each with `password` (after django.setup(): the models are imported here)."""
    from django.contrib.auth import get_user_model

    from goldkey import roles

    roles.ensure_groups()
    users = []
    for name in names:
        user = get_user_model().objects.create_user(name, password=password)
        user.groups.add(roles.Group.objects.get(name=roles.ANNOTATOR))
        users.append(user)
    return users


def annotator_page_figures(scratch, *, slug: str, items: int, requests_per_figure: int, username: str,
                           password: str) -> dict:
    """An annotator's two waits on campaign `slug` (already created in the scratch database), Goldkey behind
    gunicorn with 2 workers, each request on a new connection: Resume (GET /annotate/<slug>/ -> 302) with
    the item page it names, and the item page at random positions. p50/p95/max per figure, with the load."""
    import random

    import requests
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")  # what autovacuum does after the campaign's bulk write
    connection.close()
    server = gunicorn(scratch.env, scratch.folder)
    try:
        session = requests.Session()
        goldkey_login(session, server.base, username, password)
        base = f"{server.base}/annotate/{slug}/"

        def resume() -> None:
            answer = fresh_get(session, base, allow_redirects=False)
            assert answer.status_code == 302, answer.status_code
            page = fresh_get(session, server.base + answer.headers["Location"])
            assert page.status_code == 200, page.status_code

        def item_page(position: int) -> None:
            page = fresh_get(session, f"{base}item/{position}/")
            assert page.status_code == 200, page.status_code

        for _ in range(5):  # warm up: both workers' connections, templates, code paths
            resume()
        rng = random.Random(7)
        figures = {}
        for name, run in (("resume_and_item_page", resume), ("item_page", lambda: item_page(rng.randint(1, items)))):
            walls = []
            for _ in range(requests_per_figure):
                start = time.perf_counter()
                run()
                walls.append(time.perf_counter() - start)
            figures[name] = latency(walls)
        return figures
    finally:
        server.stop()
