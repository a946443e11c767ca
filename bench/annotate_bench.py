"""Server time of the annotator's hot paths in a 100,000-item campaign.

Builds a throw-away test database (SQLite file in a temp dir by default; PostgreSQL when DATABASE_URL
is set — a test_<name> database is created and dropped), bulk-creates a synthetic TWIST corpus of
N items in one 600-turn conversation and a two-annotator campaign over it (2·N assignments), then
measures with Django's in-process test client:
  - GET the item page (Phase 1), at random positions
  - POST an answer save through the API (autosave of q1), at random positions
  - GET the Phase 2 item page of a consistent item (with the recipient's full turn index)
and prints p50/p95/max in milliseconds. Target: p95 < 20 ms.

    .venv/bin/python bench/annotate_bench.py [--items 100000] [--requests 400]
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")


def percentile(values, q):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def report(name, timings):
    """Wall time, and the process CPU time of the same requests (less sensitive to a busy machine)."""
    ms = [t[0] * 1000 for t in timings]
    cpu = [t[1] * 1000 for t in timings]
    print(f"{name:<38} n={len(ms):<4} wall p50={statistics.median(ms):6.2f} p95={percentile(ms, 95):6.2f} "
          f"max={max(ms):7.2f} ms | cpu p50={statistics.median(cpu):6.2f} p95={percentile(cpu, 95):6.2f} ms")


class timed:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.result = (time.perf_counter() - self.wall, time.process_time() - self.cpu)


def build(n_items: int):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotation.services import campaign_create
    from items.models import Conversation, Evidence, GoldType, Item, ItemKind, Session, Turn
    from items.services import item_set_get_or_create

    started = time.perf_counter()
    group, _ = Group.objects.get_or_create(name="annotator")
    users = []
    for name in ("bench_a", "bench_b"):
        user = get_user_model().objects.create_user(name, password="x")
        user.groups.add(group)
        users.append(user)
    item_set = item_set_get_or_create(name="bench twist", kind=ItemKind.TWIST)
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
    types = [GoldType.CONTRADICTING, GoldType.ALIGNED, GoldType.HARD_NEGATIVE]
    items = Item.objects.bulk_create(
        (
            Item(item_set=item_set, kind=ItemKind.TWIST, external_id=f"conv-bench:b{i:06d}", conversation=conversation,
                 recipient="Caroline", draft=f"Draft number {i}, a message of ordinary length for the bench.",
                 gold_type=types[i % 3], family="B1 invented-activity", rationale="generator rationale",
                 contradicted_quote="turn text" if i % 3 == 0 else "", history_turns=600)
            for i in range(n_items)
        ),
        batch_size=5000,
    )
    Evidence.objects.bulk_create(
        (Evidence(item=item, turn=turns[(2 * i) % 600], position=0) for i, item in enumerate(items)),
        batch_size=5000,
    )
    campaign = campaign_create(slug="bench", item_set=item_set, annotators=users, seed=1)
    print(f"built {n_items} items, {2 * n_items} assignments in {time.perf_counter() - started:.1f} s")
    return campaign, users


def measure(campaign, users, n_items: int, requests: int):
    from django.test import Client

    from annotation.models import Assignment, Enrollment
    from annotation.services import answer_save, phase1_finish

    rng = random.Random(7)
    client = Client()
    client.force_login(users[0])
    enrollment = Enrollment.objects.get(campaign=campaign, annotator=users[0])
    # warm up
    for _ in range(20):
        client.get(f"/annotate/bench/item/{rng.randrange(n_items) + 1}/")

    page = []
    for _ in range(requests):
        position = rng.randrange(n_items) + 1
        with timed() as t:
            response = client.get(f"/annotate/bench/item/{position}/")
        page.append(t.result)
        assert response.status_code == 200
    report("item page (Phase 1)", page)

    positions = rng.sample(range(n_items), requests)
    pks = dict(Assignment.objects.filter(enrollment=enrollment, position__in=positions).values_list("position", "pk"))
    save = []
    for position in positions:
        with timed() as t:
            response = client.post(f"/api/annotation/assignments/{pks[position]}/answer/",
                                   {"values": {"q1": rng.choice(["contradicts", "consistent", "cannot-tell"])},
                                    "time_on_item_ms": 4000}, content_type="application/json")
        save.append(t.result)
        assert response.status_code == 200, response.content
    report("answer save (API autosave)", save)

    # Phase 2: complete Phase 1 for the other annotator in bulk-ish, then time their Phase 2 page.
    other = Enrollment.objects.get(campaign=campaign, annotator=users[1])
    from annotation.models import Answer

    Answer.objects.bulk_create(
        (Answer(assignment_id=pk, values={"q1": "consistent"}, phase1_done=True, revision=1)
         for pk in Assignment.objects.filter(enrollment=other).values_list("pk", flat=True).iterator()),
        batch_size=5000,
    )
    Enrollment.objects.filter(pk=other.pk).update(phase1_done_count=n_items)
    last = Assignment.objects.select_related("item", "enrollment__campaign").filter(enrollment=other).order_by("position").first()
    Answer.objects.filter(assignment=last).delete()
    Enrollment.objects.filter(pk=other.pk).update(phase1_done_count=n_items - 1)
    last.enrollment.refresh_from_db()
    t0 = time.perf_counter()
    result = answer_save(assignment=last, values={"q1": "consistent"})
    completion = time.perf_counter() - t0
    assert result.phase1_ready
    print(f"{'save of the last Phase 1 answer':<38} wall {completion * 1000:.2f} ms")
    t0 = time.perf_counter()
    phase1_finish(enrollment=other)
    finish = time.perf_counter() - t0
    print(f"{'Finish Phase 1 (exact check)':<38} wall {finish * 1000:.2f} ms")
    client.force_login(users[1])
    aligned = list(Assignment.objects.filter(enrollment=other, item__gold_type="aligned")
                   .values_list("position", flat=True)[:requests])
    phase2 = []
    for position in aligned[: requests // 2]:
        with timed() as t:
            response = client.get(f"/annotate/bench/item/{position + 1}/")
        phase2.append(t.result)
        assert response.status_code == 200
    report("item page (Phase 2, 300-turn index)", phase2)
    for position in range(10):
        client.get(f"/annotate/bench/item/{position + 1}/")
    mywork = []
    for _ in range(50):
        with timed() as t:
            client.get("/annotate/")
        mywork.append(t.result)
    report("my work", mywork)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="goldkey-bench-")
    os.environ.setdefault("GOLDKEY_VAR_DIR", tmp)
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if connection.vendor == "sqlite":
        connection.settings_dict["TEST"]["NAME"] = str(Path(tmp) / "bench.sqlite3")
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor}; items: {args.items}; python {sys.version.split()[0]}; "
              f"load average {os.getloadavg()[0]:.2f}")
        campaign, users = build(args.items)
        measure(campaign, users, args.items, args.requests)
        print(f"load average at the end {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    finally:
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
