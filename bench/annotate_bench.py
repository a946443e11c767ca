"""The annotator's waits over HTTP, against real servers, in a 100,000-item two-annotator campaign.

Builds a throw-away database (bench/scratch.py: a SQLite file in a temporary folder, or a test_<name>
database when DATABASE_URL names a PostgreSQL server; never the project's own), a synthetic TWIST
corpus of N items in one 600-turn conversation, and times `campaign_create` over it (N items x 2
annotators). Then it starts the servers itself — `manage.py runserver` and, if installed, gunicorn
(2 sync workers) — logs both annotators in through the login form, and times, as a browser sends them:

  - Resume (GET /annotate/<campaign>/ -> 302 to the first open item) at item 1 and at 1%, 50% and 99%
    of the annotator's Phase 1 done (the answers before each point are bulk-written, untimed; every
    redirect is checked to land on the first open item). On PostgreSQL the tables are then vacuumed,
    untimed: the bulk write leaves every answered assignment's entry dead in the open-assignments
    index, and the autovacuum it sets off would run during the timing. An annotator who answered
    those items one by one has had them vacuumed long since; until a vacuum, Resume steps over the
    dead entries (PostgreSQL marks them on the first scan: 0.15 ms a query at 99,000 of them).
  - the item page (Phase 1) at random positions
  - the answer save as the page's autosave sends it (POST JSON with CSRF header, base revision, writer,
    running number): the first field of an item (a new answer) and the next field (its note)
  - "my work"

Each figure is the client's wall time per request (p50/p95/max ms) and the servers' CPU per request
(all of the server's processes, from /proc). Every figure is printed with the load average.
`campaign_create` is printed as wall time, this process's CPU (SQLite runs in it) and, on PostgreSQL,
the CPU of the connection's backend (from /proc, when the server runs on this machine); `--creates N`
times N campaigns over the same items (the later ones meet the assignments of the earlier), and
`--create-only` stops there.

    .venv/bin/python bench/annotate_bench.py [--items 100000] [--requests 200] [--servers runserver,gunicorn] [--json]
    .venv/bin/python bench/annotate_bench.py --create-only --creates 3
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/annotate_bench.py
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scratch import scratch_database  # noqa: E402

SLUG = "bench"
PASSWORD = "bench-pass"
PROGRESS_POINTS = (("item 1", 0.0), ("1%", 0.01), ("50%", 0.50), ("99%", 0.99))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(args, text: str) -> None:
    if not args.json:
        print(text, flush=True)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def summary(wall_s: list[float], server_cpu_s: float) -> dict:
    ms = [w * 1000 for w in wall_s]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "max_ms": round(max(ms), 2),
        "server_cpu_ms_per_request": round(1000 * server_cpu_s / len(ms), 2),
        "load": load(),
    }


# ----- building the campaign (untimed, except campaign_create) ----------------------------------

def build(n_items: int, creates_count: int = 1) -> dict:
    from django.contrib.auth import get_user_model

    from annotation.services import campaign_create
    from goldkey import roles
    from items.models import Conversation, Evidence, Item, Session, Turn
    from items.services import item_set_get_or_create

    roles.ensure_groups()
    users = []
    for name in ("bench_a", "bench_b"):
        user = get_user_model().objects.create_user(name, password=PASSWORD)
        user.groups.add(roles.Group.objects.get(name=roles.ANNOTATOR))
        users.append(user)
    item_set = item_set_get_or_create(name="bench twist", kind="twist")
    conversation = Conversation.objects.create(external_id="conv-bench", speaker_a="Caroline", speaker_b="Melanie")
    sessions = Session.objects.bulk_create(
        Session(conversation=conversation, number=s + 1, date_time_raw=f"1:{s:02d} pm on {s % 28 + 1} May, 2023")
        for s in range(30)
    )
    turns = Turn.objects.bulk_create(
        Turn(conversation=conversation, session=sessions[i // 20], dia_id=f"D{i // 20 + 1}:{i % 20 + 1}",
             speaker="Caroline" if i % 2 == 0 else "Melanie", text=f"turn text {i} " * 8, order=i)
        for i in range(600)
    )
    types = ["contradicting", "aligned", "hard_negative"]
    items = Item.objects.bulk_create(
        (
            Item(item_set=item_set, kind="twist", external_id=f"conv-bench:b{i:06d}", conversation=conversation,
                 recipient="Caroline", draft=f"Draft number {i}, a message of ordinary length for the bench.",
                 gold_label=types[i % 3], family="B1 invented-activity", rationale="generator rationale",
                 contradicted_quote="turn text" if i % 3 == 0 else "", history_turns=600)
            for i in range(n_items)
        ),
        batch_size=5000,
    )
    Evidence.objects.bulk_create(
        (Evidence(item=item, turn=turns[(2 * i) % 600], position=0) for i, item in enumerate(items)),
        batch_size=5000,
    )
    creates = []
    for n in range(creates_count):
        # The first campaign meets an empty assignment table; each further one (another campaign over
        # the same items, as a second round or a reliability pass makes) meets the ones before it.
        load_before = load()
        server0, pid = backend_cpu_s(), backend_pid()
        waits0 = cpu_wait_s(os.getpid()), cpu_wait_s(pid)
        wall, cpu = time.perf_counter(), time.process_time()
        campaign_create(slug=SLUG if n == 0 else f"{SLUG}-{n + 1}", item_set=item_set, annotators=users, seed=1)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        server = backend_cpu_s()
        waits = [None if w0 is None or w1 is None else round(w1 - w0, 2)
                 for w0, w1 in zip(waits0, (cpu_wait_s(os.getpid()), cpu_wait_s(pid)), strict=True)]
        creates.append({"items": n_items, "annotators": 2, "assignments": 2 * n_items,
                        "assignments_before": 2 * n_items * n, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                        "database_server_cpu_s": round(server - server0, 2) if server is not None else None,
                        "waited_for_cpu_s": waits[0], "database_server_waited_for_cpu_s": waits[1],
                        "load_before": load_before, "load": load()})
    return {"users": users, "campaign_create": creates}


def backend_pid() -> int | None:
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backend_cpu_s() -> float | None:
    """CPU used so far by this connection's PostgreSQL backend, when it runs on this machine (SQLite
    runs inside this process, so its time is in the process's own CPU)."""
    pid = backend_pid()
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_wait_s(pid: int | None) -> float | None:
    """Time the process's threads have spent runnable but waiting for a CPU (the scheduler's run
    delay, /proc/<pid>/task/*/schedstat): on a shared 2-CPU machine, how much of a wall time is the
    load rather than the work."""
    if pid is None:
        return None
    try:
        return sum(int((task / "schedstat").read_text().split()[1]) for task in Path(f"/proc/{pid}/task").iterdir()) / 1e9
    except OSError:
        return None


def advance(enrollment, done_before: int, upto: int) -> None:
    """Bulk-write Phase 1 answers for positions [done_before, upto) as answer_save would leave them
    (answer, the assignment's flag, the enrollment's counter); untimed setup for the Resume points."""
    if upto > done_before:
        _answered(enrollment, done_before, upto)
    _vacuum()


def _answered(enrollment, done_before: int, upto: int) -> None:
    """The answers of positions [done_before, upto), written in one transaction."""
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Answer, Assignment, Enrollment
    from goldkey.lib.bulk import bulk_insert

    now = timezone.now()
    with transaction.atomic():
        ids = Assignment.objects.filter(enrollment=enrollment, position__gte=done_before, position__lt=upto)
        bulk_insert(Answer, (
            {"assignment_id": pk, "values": {"q1": "consistent"}, "time_on_item_ms": 4000, "revision": 1,
             "updated_at": now, "phase1_done": True, "phase2_done": False, "answered_at": now, "extra": {}}
            for pk in ids.values_list("pk", flat=True)
        ))
        if any(f.name == "phase1_done" for f in Assignment._meta.concrete_fields):  # absent before the flags
            ids.update(phase1_done=True)
        Enrollment.objects.filter(pk=enrollment.pk).update(phase1_done_count=upto)


def _vacuum() -> None:
    """On PostgreSQL, what autovacuum would have done by the time an annotator gets this far (see the
    module's docstring); outside any transaction, which VACUUM refuses."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) annotation_assignment, annotation_answer, annotation_enrollment")


# ----- servers -------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_commands(names: list[str], port_of) -> dict:
    python = sys.executable
    commands = {}
    for name in names:
        port = port_of()
        if name == "runserver":
            commands[name] = (port, [python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"])
        elif name == "gunicorn":
            gunicorn = shutil.which("gunicorn") or str(Path(python).with_name("gunicorn"))
            if not Path(gunicorn).exists():
                continue
            commands[name] = (port, [gunicorn, "goldkey.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2",
                                     "--log-level", "warning"])
    return commands


def group_cpu_s(pgid: int) -> float:
    """User + system CPU of every live process in the group (the server and its workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # field 5 of stat: the process group
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def wait_ready(session, base: str, process) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            if session.get(f"{base}/accounts/login/", timeout=2).status_code == 200:
                return
        except Exception:  # noqa: BLE001 - not listening yet
            pass
        time.sleep(0.1)
    raise SystemExit(f"server at {base} did not answer")


def login(requests, base: str, username: str):
    session = requests.Session()
    page = session.get(f"{base}/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = session.post(f"{base}/accounts/login/", data={"username": username, "password": PASSWORD,
                                                             "csrfmiddlewaretoken": token},
                            headers={"Referer": f"{base}/accounts/login/"}, allow_redirects=False)
    assert response.status_code == 302, (response.status_code, response.text[:300])
    session.get(f"{base}/annotate/")  # sets the CSRF cookie the item page's script reads
    return session


class Server:
    def __init__(self, name, port, command, env, folder: Path):
        self.name, self.base = name, f"http://127.0.0.1:{port}"
        # To a file, not a pipe: runserver logs every request, and a full pipe would stall it.
        self.log = folder / f"{name}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                                            stdout=out, stderr=subprocess.STDOUT)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def timed(self, requests_fn, count: int) -> dict:
        walls = []
        cpu0 = group_cpu_s(self.process.pid)
        for i in range(count):
            start = time.perf_counter()
            requests_fn(i)
            walls.append(time.perf_counter() - start)
        return summary(walls, group_cpu_s(self.process.pid) - cpu0)


# ----- measuring -----------------------------------------------------------------------------------

def measure(args, scratch, built: dict) -> dict:
    import requests

    from annotation.models import Assignment, Enrollment

    users = built["users"]
    enrollment_a = Enrollment.objects.get(campaign__slug=SLUG, annotator=users[0])
    enrollment_b = Enrollment.objects.get(campaign__slug=SLUG, annotator=users[1])
    commands = server_commands(args.servers, free_port)
    servers = [Server(name, port, command, scratch.env, scratch.folder) for name, (port, command) in commands.items()]
    results: dict = {name: {} for name in commands}
    try:
        sessions = {}
        for server in servers:
            wait_ready(requests.Session(), server.base, server.process)
            sessions[server.name] = (login(requests, server.base, users[0].username),
                                     login(requests, server.base, users[1].username))

        # Resume, annotator A, at each progress point; each redirect must land on the first open item.
        done = 0
        for label, fraction in PROGRESS_POINTS:
            upto = min(args.items - 1, round(fraction * args.items))
            advance(enrollment_a, done, upto)
            done = upto
            expected = f"/annotate/{SLUG}/item/{upto + 1}/"
            for server in servers:
                session = sessions[server.name][0]

                def resume(_, session=session, expected=expected, base=server.base):
                    response = session.get(f"{base}/annotate/{SLUG}/", allow_redirects=False)
                    assert response.status_code == 302 and response.headers["Location"] == expected, (
                        response.status_code, response.headers.get("Location"), expected)

                for _ in range(5):
                    resume(0)  # warm up
                results[server.name][f"resume at {label}"] = figure = server.timed(resume, args.requests)
                log(args, line(server.name, f"Resume at {label} (-> item {upto + 1})", figure))

        # Annotator B: item pages and saves at random positions, each server its own positions.
        rng = random.Random(7)
        positions = rng.sample(range(args.items), args.requests * len(servers))
        pk_of = dict(Assignment.objects.filter(enrollment=enrollment_b, position__in=positions)
                     .values_list("position", "pk"))
        for index, server in enumerate(servers):
            session = sessions[server.name][1]
            mine = positions[index * args.requests:(index + 1) * args.requests]
            csrf = session.cookies["csrftoken"]
            writer = f"bench-{server.name}"

            base = server.base

            def page(i, session=session, mine=mine, base=base):
                response = session.get(f"{base}/annotate/{SLUG}/item/{mine[i] + 1}/")
                assert response.status_code == 200, response.status_code

            def save(i, session=session, mine=mine, values=None, revision=0, seq=1, csrf=csrf, writer=writer, base=base):
                response = session.post(
                    f"{base}/api/annotation/assignments/{pk_of[mine[i]]}/answer/",
                    data=json.dumps({"values": values or {"q1": ("contradicts", "consistent", "cannot-tell")[i % 3]},
                                     "time_on_item_ms": 4000, "revision": revision, "writer": writer, "seq": seq}),
                    headers={"Content-Type": "application/json", "X-CSRFToken": csrf,
                             "Referer": f"{base}/annotate/{SLUG}/item/{mine[i] + 1}/"},
                )
                assert response.status_code == 200 and response.json()["changed"], (response.status_code, response.text[:300])

            def note(i, save=save):
                save(i, values={"q1note": f"a note of ordinary length about item {i}"}, revision=1, seq=2)

            def my_work(_, session=session, base=base):
                assert session.get(f"{base}/annotate/").status_code == 200

            for i in range(5):
                page(i)
            for name, fn in (("item page (Phase 1)", page), ("answer save: first field (new answer)", save),
                             ("answer save: next field (note)", note), ("my work", my_work)):
                results[server.name][name] = figure = server.timed(fn, args.requests)
                log(args, line(server.name, name, figure))
    finally:
        for server in servers:
            server.stop()
            problems = [ln for ln in server.log.read_text(errors="replace").splitlines()
                        if '" 200 ' not in ln and '" 302 ' not in ln and ln.strip()]
            if problems and not args.json:
                print(f"[{server.name} log, other than 200/302 lines]\n" + "\n".join(problems[-8:]))
    return results


def line(server: str, name: str, f: dict) -> str:
    return (f"{server:<9} {name:<42} n={f['n']:<4} p50={f['p50_ms']:7.2f} p95={f['p95_ms']:7.2f} "
            f"max={f['max_ms']:7.2f} ms | server CPU {f['server_cpu_ms_per_request']:6.2f} ms/request "
            f"| load {f['load'][0]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200, help="requests per figure and server")
    parser.add_argument("--servers", type=lambda s: s.split(","), default=["runserver", "gunicorn"])
    parser.add_argument("--creates", type=int, default=1,
                        help="campaign_create runs over the same items (each a new campaign), each timed")
    parser.add_argument("--create-only", action="store_true", help="time campaign_create only: no servers")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with scratch_database() as scratch:
        started = time.perf_counter()
        log(args, f"database: {scratch.vendor} ({scratch.name}); items: {args.items:,}; python {sys.version.split()[0]}; "
                  f"load average {load()} on {os.cpu_count()} CPUs")
        built = build(args.items, args.creates)
        for c in built["campaign_create"]:
            server_cpu = (f" + {c['database_server_cpu_s']:.2f} s in the database server"
                          if c["database_server_cpu_s"] is not None else "")
            waited = " + ".join(f"{w:.2f}" for w in (c["waited_for_cpu_s"], c["database_server_waited_for_cpu_s"])
                                if w is not None)
            log(args, f"campaign_create: {c['items']:,} items x 2 annotators ({c['assignments']:,} assignments, "
                      f"{c['assignments_before']:,} already in the table): {c['wall_s']:.2f} s wall, "
                      f"{c['cpu_s']:.2f} s CPU in this process{server_cpu}; waited {waited or '?'} s for a CPU "
                      f"| load {c['load_before'][0]:.2f} before, {c['load'][0]:.2f} after")
        log(args, f"(setup {time.perf_counter() - started:.1f} s)")
        if args.create_only:
            if args.json:
                print(json.dumps({"database": scratch.vendor, "items": args.items, "python": sys.version.split()[0],
                                  "cpus": os.cpu_count(), "campaign_create": built["campaign_create"],
                                  "load_at_end": load()}, indent=1))
            return
        servers = measure(args, scratch, built)
        result = {"database": scratch.vendor, "items": args.items, "python": sys.version.split()[0],
                  "cpus": os.cpu_count(), "campaign_create": built["campaign_create"], "servers": servers, "load_at_end": load()}
        if args.json:
            print(json.dumps(result, indent=1))
        else:
            print(f"load average at the end {load()} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
