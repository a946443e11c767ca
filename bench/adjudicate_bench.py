"""The adjudicator's pages over HTTP on a 100,000-item double-annotated campaign: prints p50/p95/max.

    .venv/bin/python bench/adjudicate_bench.py [--items 100000] [--requests 200] [--servers runserver,gunicorn] [--json] [--keep DIR]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey .venv/bin/python bench/adjudicate_bench.py

Builds a throw-away test database (a SQLite file in a temporary folder by default; with DATABASE_URL
set, Django's `test_<name>` database, created and dropped: never the project's own), fills it with N
synthetic TWIST items over 100 conversations of 600 turns (1-3 evidence turns of the recipient each), a two-annotator campaign
with both annotators' answers on every item (some disagree, some say the claim is not self-contained),
three council members' votes on a tenth of the items, and closes it. It builds the stored queue once
(timed: what the first adjudication page after the close pays), then starts a real server on
127.0.0.1 (`manage.py runserver`, and gunicorn with 2 workers when it is installed) on that database,
logs in through the login form and times, over HTTP, each request on a new connection (as a browser after a
pause):
  - the queue page (a random page of 50 entries, with the counts and the retained-set panel)
  - the side-by-side item page of a random queued item
  - a decision: POST keep on the current item (302 to the next undecided), then GET that item page,
    working through the queue in order as an adjudicator does
  - the same as the item page's script made it before it fetched ahead: one POST answered with the next
    item's page
  - as the item page's script makes it: the page a decision leads to fetched ahead while the adjudicator
    reads (timed apart), then the decision naming it, answered 204 when it is current (the wait)
Target: p95 < 50 ms each. Every figure is printed with the load average it was measured at, and with
the server's CPU time per request (read from /proc), which a busy machine moves much less.

On PostgreSQL the stored queue's marks move past a row only once it is older than the commit grace
(adjudication.services.COMMIT_GRACE, 10 s): until then every read of the queue looks at the rows
above them again (their ids). The setup writes everything in its last seconds, so the first server's first pages
would be timed inside that window, a state an adjudicator meets only in the seconds after a bulk
write. The queue page is timed there on its own ("inside the commit grace"), then the bench waits
until the grace has passed before the figures above.
"""

import argparse
import html
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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")

from common import free_port, percentile  # noqa: E402
from common import process_tree_cpu_s as server_cpu  # noqa: E402

PASSWORD = "bench-author-pass"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(name: str, seconds: list[float], cpu: float | None = None) -> dict:
    """Wall-time percentiles over HTTP, and the server's mean CPU per request (which a busy machine
    moves much less than the wall time)."""
    ms = [s * 1000 for s in seconds]
    figures = {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2),
               "max_ms": round(max(ms), 2), "load_average": load()}
    if cpu is not None:
        figures["server_cpu_ms_per_request"] = round(cpu * 1000 / len(ms), 2)
    extra = f" server CPU {figures['server_cpu_ms_per_request']:6.2f} ms/req" if cpu is not None else ""
    print(f"  {name:<44} n={figures['n']:<4} p50={figures['p50_ms']:7.2f} p95={figures['p95_ms']:7.2f} "
          f"max={figures['max_ms']:8.2f} ms{extra}   (load average {figures['load_average']})")
    return figures


def build(n_items: int, seed: int = 1):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotation.models import Answer, Assignment
    from annotation.services import campaign_close, campaign_create
    from council.models import CouncilMember, CouncilVote
    from goldkey import roles
    from items.models import Conversation, Evidence, Item, Session, Turn
    from items.services import item_set_get_or_create

    rng = random.Random(seed)
    started = time.perf_counter()
    annotator = Group.objects.get_or_create(name=roles.ANNOTATOR)[0]
    users = []
    for name in ("bench_a", "bench_b"):
        user = get_user_model().objects.create_user(name, password="x")
        user.groups.add(annotator)
        users.append(user)
    author = get_user_model().objects.create_user("bench_author", password=PASSWORD, is_staff=True)
    author.groups.add(Group.objects.get_or_create(name=roles.AUTHOR)[0])
    item_set = item_set_get_or_create(name="bench twist", kind="twist")
    # The real Track B shape: 100 conversations of 600 turns, 1-3 evidence turns of the recipient an item.
    conversations = Conversation.objects.bulk_create(
        Conversation(external_id=f"conv-bench-{c}", speaker_a="Caroline", speaker_b="Melanie") for c in range(100)
    )
    sessions = Session.objects.bulk_create(
        Session(conversation=conversation, number=s + 1, date_time_raw=f"1:{s:02d} pm on {s % 28 + 1} May, 2023")
        for conversation in conversations for s in range(30)
    )
    turns = Turn.objects.bulk_create(
        (Turn(conversation=conversation, session=sessions[c * 30 + i // 20], dia_id=f"D{i // 20 + 1}:{i % 20 + 1}",
              speaker="Caroline" if i % 2 == 0 else "Melanie", text=f"turn text {i} " * 8, order=i)
         for c, conversation in enumerate(conversations) for i in range(600)),
        batch_size=5000,
    )
    types = ["contradicting", "aligned", "hard_negative"]
    items = Item.objects.bulk_create(
        (
            Item(item_set=item_set, kind="twist", external_id=f"conv-bench-{i % 100}:v1b{i:06d}",
                 conversation=conversations[i % 100],
                 recipient="Caroline", draft=f"Draft number {i}, a message of ordinary length for the bench.",
                 gold_label=types[i % 3], family="B1 invented-activity", rationale="generator rationale",
                 contradicted_quote="turn text" if i % 3 == 0 else "", history_turns=rng.randint(369, 689),
                 batch="v1b")
            for i in range(n_items)
        ),
        batch_size=5000,
    )
    Evidence.objects.bulk_create(
        (Evidence(item=item, turn=turns[(i % 100) * 600 + 2 * k], position=position)  # the recipient's turns
         for i, item in enumerate(items)
         for position, k in enumerate(sorted(rng.sample(range(300), rng.randint(1, 3))))),
        batch_size=5000,
    )
    print(f"  items, conversations, evidence: {time.perf_counter() - started:.1f} s")
    step = time.perf_counter()
    campaign = campaign_create(slug="bench", item_set=item_set, annotators=users, per_item=2, seed=seed)
    print(f"  campaign_create ({2 * n_items:,} assignments): {time.perf_counter() - step:.1f} s")
    step = time.perf_counter()
    verdict = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}
    gold_of = dict(Item.objects.filter(item_set=item_set).values_list("id", "gold_label"))
    answers = []
    for assignment_id, item_id in Assignment.objects.filter(enrollment__campaign=campaign).values_list("id", "item_id"):
        gold = gold_of[item_id]
        q1 = verdict[gold] if rng.random() < 0.85 else rng.choice(["contradicts", "consistent", "cannot-tell"])
        values = {"q1": q1, "q1note": "a note on the verdict"}
        if gold == "contradicting":
            values |= {"q2": "yes" if rng.random() < 0.9 else "no", "q2quote": "yes" if rng.random() < 0.92 else "no"}
        else:
            values |= {"q3": "clean" if rng.random() < 0.97 else "conflict"}
        answers.append(Answer(assignment_id=assignment_id, values=values, revision=1, phase1_done=True, phase2_done=True))
    Answer.objects.bulk_create(answers, batch_size=5000)
    members = [CouncilMember.objects.create(name=f"bench-{m}") for m in ("gpt", "claude", "gemini")]
    ids = list(gold_of)
    CouncilVote.objects.bulk_create(
        (CouncilVote(campaign=campaign, member=m, item_id=i, prompt_version="v1",
                     values={"q1": verdict[gold_of[i]] if rng.random() < 0.8 else "cannot-tell"})
         for m in members for i in ids[: n_items // 10]),
        batch_size=5000,
    )
    campaign_close(campaign=campaign, user=author, end_open=True)
    print(f"  answers ({len(answers):,}), council votes, close: {time.perf_counter() - step:.1f} s")
    return campaign


def start_server(kind: str, env: dict, port: int, log: Path) -> subprocess.Popen:
    python = sys.executable
    if kind == "runserver":
        command = [python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    else:
        command = [python, "-m", "gunicorn", "goldkey.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2", "--log-level", "warning"]
    # The server's log goes to a file: runserver logs every request, and a pipe nobody reads fills up
    # and stops the server.
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{kind} exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.2)
    stop_server(process)
    raise RuntimeError(f"{kind} did not listen on port {port} within 60 s")


def stop_server(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def login(base: str):
    import requests

    session = requests.Session()
    # A new connection per request, as a browser meets a server after a pause (see bench/common.py).
    session.headers["Connection"] = "close"
    session.get(f"{base}/accounts/login/").raise_for_status()
    response = session.post(f"{base}/accounts/login/", data={
        "username": "bench_author", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"],
    }, allow_redirects=False)
    if response.status_code != 302:
        raise RuntimeError(f"login failed: {response.status_code}")
    return session


def measure(base: str, pid: int, queued: list[int], pages: int, requests_n: int, rng: random.Random,
            settled_at: float = 0.0, grace_s: float = 0.0) -> dict:
    """`settled_at`: the time.monotonic() when the setup's rows are past the commit grace; the queue page
    is timed before it on its own, and the figures after it. `grace_s`: the commit grace (PostgreSQL)."""
    session = login(base)
    figures = {}

    def timed(name: str, run) -> dict:
        cpu = server_cpu(pid)
        seconds = run()
        return summary(name, seconds, server_cpu(pid) - cpu)

    def get(path: str) -> float:
        t0 = time.perf_counter()
        response = session.get(base + path)
        elapsed = time.perf_counter() - t0
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code}")
        return elapsed

    if time.monotonic() < settled_at - 1:
        inside = []
        get("/adjudicate/bench/?page=1")  # connections, templates, the first figures of this state
        while time.monotonic() < settled_at - 1 and len(inside) < requests_n:
            inside.append(get(f"/adjudicate/bench/?page={rng.randrange(pages) + 1}"))
        if inside:
            figures["queue_page_inside_grace"] = summary("queue page inside the commit grace (setup's rows held)", inside)
        time.sleep(max(0.0, settled_at - time.monotonic()))
    for _ in range(10):  # warm up: connections, templates, the first figures of this state
        get(f"/adjudicate/bench/?page={rng.randrange(pages) + 1}")
        get(f"/adjudicate/bench/items/{rng.choice(queued)}/")
    figures |= {
        "queue_page": timed("queue page (a page of entries, counts, panel)",
                            lambda: [get(f"/adjudicate/bench/?page={rng.randrange(pages) + 1}") for _ in range(requests_n)]),
        "item_page": timed("side-by-side item page",
                           lambda: [get(f"/adjudicate/bench/items/{rng.choice(queued)}/") for _ in range(requests_n)]),
    }
    # Work through the queue in order, as an adjudicator does: decide the current item, follow the
    # redirect to the next undecided one.
    current = session.get(f"{base}/adjudicate/bench/items/{queued[0]}/")
    path = f"/adjudicate/bench/items/{queued[0]}/"
    saves, nexts, both = [], [], []
    cpu = server_cpu(pid)
    for _ in range(requests_n):
        token = session.cookies["csrftoken"]
        t0 = time.perf_counter()
        response = session.post(base + path, data={"action": "keep", "note": "", "csrfmiddlewaretoken": token},
                                allow_redirects=False)
        saved = time.perf_counter() - t0
        if response.status_code != 302:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")
        path = response.headers["Location"]
        if "/items/" not in path:  # every queued item is decided: back to the queue page
            break
        t1 = time.perf_counter()
        current = session.get(base + path)
        shown = time.perf_counter() - t1
        if current.status_code != 200:
            raise RuntimeError(f"GET {path}: {current.status_code}")
        saves.append(saved)
        nexts.append(shown)
        both.append(saved + shown)
    cpu = server_cpu(pid) - cpu
    figures["decision_save"] = summary("decision save (POST keep -> 302 next)", saves)
    figures["next_item_page"] = summary("next undecided item page (after the 302)", nexts)
    figures["decision_save_and_next"] = summary("decision save + next item page", both, cpu)
    # The item page's script: the same decision asked to answer with the next item's page (one round
    # trip; the page's URL comes in X-Goldkey-Url), going on through the queue from where that left off.
    ones = []
    cpu = server_cpu(pid)
    for _ in range(requests_n if "/items/" in path else 0):
        token = session.cookies["csrftoken"]
        t0 = time.perf_counter()
        response = session.post(base + path, data={"action": "keep", "note": "", "csrfmiddlewaretoken": token},
                                headers={"X-Goldkey-Next": "page"}, allow_redirects=False)
        elapsed = time.perf_counter() - t0
        if response.status_code == 204:  # every queued item is decided
            break
        if response.status_code == 302 and not ones:  # code from before the one-request answer
            print("  (this server answers the decision with a redirect only: no one-request figure)")
            break
        if response.status_code != 200 or "X-Goldkey-Url" not in response.headers:
            raise RuntimeError(f"POST {path} (next page): {response.status_code} {response.text[:300]}")
        path = response.headers["X-Goldkey-Url"]
        ones.append(elapsed)
    if ones:
        figures["decision_save_and_next_one_request"] = summary(
            "decision save answered with the next page (one request)", ones, server_cpu(pid) - cpu)
    # The item page's script as it works: while the adjudicator reads an item, the page a decision on it
    # leads to is fetched ahead (timed apart: nobody waits for it); the decision names that page's key and,
    # the page being current, is answered 204: what the adjudicator waits for is the decision alone.
    waits, aheads, wait_cpu, ahead_cpu, stale = [], [], 0.0, 0.0, 0
    # The two walks before made a decision every 40-80 ms, ~200 inside the commit grace: more than a
    # decision records of the rows held above the mark (services.SEEN_LIMIT), so a sync applies them and
    # no held page is current. An adjudicator reading each item meets that only right after importing a
    # decisions file; this walk starts, as they do, once those rows are past the grace.
    time.sleep(grace_s)
    for _ in range(requests_n if "/items/" in path else 0):
        item_id = path.split("/items/")[1].split("/")[0]
        cpu = server_cpu(pid)
        t0 = time.perf_counter()
        ahead = session.get(f"{base}/adjudicate/bench/items/{item_id}/next/")
        aheads.append(time.perf_counter() - t0)
        ahead_cpu += server_cpu(pid) - cpu
        if ahead.status_code == 404 and not waits:  # code from before the page fetched ahead
            print("  (this server fetches no page ahead: no figure for a decision with the next page held)")
            break
        if ahead.status_code != 200:  # 204: no other item is undecided
            break
        key = html.unescape(re.search(r'id="decision-form" data-key="([^"]+)"', ahead.text).group(1))
        token = session.cookies["csrftoken"]
        cpu = server_cpu(pid)
        t0 = time.perf_counter()
        response = session.post(base + path, data={"action": "keep", "note": "", "csrfmiddlewaretoken": token},
                                headers={"X-Goldkey-Next": "page", "X-Goldkey-Held": key}, allow_redirects=False)
        waits.append(time.perf_counter() - t0)
        wait_cpu += server_cpu(pid) - cpu
        if response.status_code == 200 and "X-Goldkey-Url" in response.headers:
            stale += 1  # the held page was not current: the answer is the page itself, and the wait its
        elif response.status_code != 204 or response.headers.get("X-Goldkey-Held") != "current":
            raise RuntimeError(f"POST {path} (page held): {response.status_code} {response.text[:300]}")
        path = response.headers["X-Goldkey-Url"]
    if waits:
        figures["page_ahead"] = summary("next page fetched ahead (while reading)", aheads, ahead_cpu)
        figures["decision_save_with_next_page_held"] = summary(
            "decision save, next page held (the wait)", waits, wait_cpu)
        figures["decision_save_with_next_page_held"]["answered_with_the_page"] = stale
        print(f"    of which answered with the page itself (the held one not current): {stale}")
    figures["queue_page_after_decisions"] = timed(
        "queue page after those decisions",
        lambda: [get(f"/adjudicate/bench/?page={rng.randrange(pages) + 1}") for _ in range(max(20, requests_n // 4))],
    )
    return figures


def database_url(settings_dict: dict) -> str:
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    at = f"{user}{password}@" if user else ""
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{at}{settings_dict.get('HOST') or '127.0.0.1'}{port}/{settings_dict['NAME']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per page")
    parser.add_argument("--servers", default="runserver,gunicorn", help="comma-separated: runserver, gunicorn")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    parser.add_argument("--keep", metavar="DIR",
                        help="build the database in DIR and keep it (SQLite: DIR/bench.sqlite3; PostgreSQL: test_<name>); "
                             "a later run with the same DIR reuses it and times the next undecided stretch of the queue")
    args = parser.parse_args()

    tmp = args.keep or tempfile.mkdtemp(prefix="goldkey-adjudicate-bench-")
    Path(tmp).mkdir(parents=True, exist_ok=True)
    # The project's own var/ folder (and its database) stays untouched: everything lives in `tmp`.
    os.environ["GOLDKEY_VAR_DIR"] = tmp
    import django

    django.setup()
    from django.db import connection

    if connection.vendor == "sqlite":
        connection.settings_dict["TEST"]["NAME"] = str(Path(tmp) / "bench.sqlite3")
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=bool(args.keep))
    servers = []
    try:
        from adjudication import stored_queue
        from adjudication.models import QueueItem
        from adjudication.services import COMMIT_GRACE, queue_build

        result = {"items": args.items, "database": connection.vendor, "cpus": os.cpu_count(), "python": sys.version.split()[0]}
        print(f"database: {connection.vendor}; items: {args.items:,}; load average {load()} on {os.cpu_count()} CPUs")
        from adjudication.models import QueueState
        from annotation.models import Campaign

        campaign = Campaign.objects.filter(slug="bench").first() if args.keep else None
        if campaign is not None and QueueState.objects.filter(campaign=campaign).exists():
            state = QueueState.objects.get(campaign=campaign)
            result["reused"] = True
            print(f"reusing the database in {tmp} ({state.n_items:,} items; the stored queue as left)")
        else:
            started = time.perf_counter()
            campaign = build(args.items)
            result["build_s"] = round(time.perf_counter() - started, 1)
            print(f"built in {result['build_s']} s")
            t0 = time.perf_counter()
            state = queue_build(campaign=campaign)
            result["queue_build_s"] = round(time.perf_counter() - t0, 2)
            print(f"stored queue built once: {state.n_queued:,} of {state.n_items:,} items queued in "
                  f"{result['queue_build_s']} s (load average {load()})")
        result["queued"] = state.n_queued
        # The setup's rows (and the queue build's own) are past the commit grace from this time on.
        grace = COMMIT_GRACE.get(connection.vendor)
        settled_at = time.monotonic() + (grace.total_seconds() + 1 if grace else 0)
        pages = -(-state.n_queued // stored_queue.PAGE_SIZE)
        # The decisions walk the undecided part of the queue (all of it on a fresh database; a reused
        # one has the earlier runs' decisions at its start).
        queued = list(QueueItem.objects.filter(campaign=campaign, queued=True, decided=False).order_by("sort_key")
                      .values_list("item_id", flat=True))
        env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "GOLDKEY_VAR_DIR": tmp,
               "DJANGO_DEBUG": "0"}
        connection.close()
        kinds = [k.strip() for k in args.servers.split(",") if k.strip()]
        result["servers"] = {}
        for n, kind in enumerate(kinds):
            if kind == "gunicorn":
                try:
                    import gunicorn  # noqa: F401  (optional: measured when installed)
                except ImportError:
                    print("gunicorn is not installed: skipped")
                    continue
            port = free_port()
            process = start_server(kind, env, port, Path(tmp) / f"{kind}.log")
            servers.append(process)
            print(f"{kind} on 127.0.0.1:{port}:")
            # Each server decides its own stretch of the queue (the first server's decisions are made).
            stretch = queued[n * (3 * args.requests + 3):]  # three walks of the queue per server
            result["servers"][kind] = measure(f"http://127.0.0.1:{port}", process.pid, stretch, pages, args.requests,
                                              random.Random(7), settled_at, grace.total_seconds() + 1 if grace else 0)
            stop_server(process)
            servers.remove(process)
        print(f"load average at the end {load()} ({os.cpu_count()} CPUs)")
        if args.json:
            print(json.dumps(result))
    finally:
        for process in servers:
            stop_server(process)
        if not args.keep:
            connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
