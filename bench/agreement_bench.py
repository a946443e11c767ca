"""Agreement and the adjudication queue for 100,000 double-annotated TWIST items: prints the time.

    .venv/bin/python bench/agreement_bench.py [--items 100000] [--annotators 2] [--per-item 2] [--keep-db]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/agreement_bench.py

Builds a throwaway database (a temporary SQLite file unless DATABASE_URL is set; that database is
flushed first), fills it with synthetic items, two annotators' answers, council votes and some
decisions, then times the load (`campaign_data`), the snapshot (`snapshot_from_data`: the queue and the
retained set, built once) and `campaign_agreement` over it (q1 kappa with analytic and bootstrap
intervals, strata, queue summary, retained set). Target: under 3 s together. `campaign_queue` (full
Items) is timed on its own line.
"""

import argparse
import gc
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(keep_db: bool, reuse: bool = False) -> Path | None:
    folder = None
    if not os.environ.get("DATABASE_URL"):
        folder = Path(tempfile.mkdtemp(prefix="goldkey-adj-bench-"))
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
        print(f"database: {folder / 'bench.sqlite3'}" + ("" if keep_db else " (temporary)"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not reuse:
        call_command("flush", interactive=False, verbosity=0)
    return folder


def build(n: int, seed: int = 1, *, annotators: int = 2, per_item: int = 2):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from adjudication.models import Decision
    from annotation.models import Answer, Assignment
    from annotation.services import campaign_create
    from council.models import CouncilMember, CouncilVote
    from items.models import Item
    from items.services import item_set_get_or_create

    rng = random.Random(seed)
    item_set = item_set_get_or_create(name="bench", kind="twist")
    types = ["contradicting", "aligned", "hard_negative"]
    families = {"contradicting": "B2 negated-commitment", "aligned": "B-AL consistent-message", "hard_negative": "HN-B2 acknowledged pause"}
    items = []
    for i in range(n):
        gold_type = types[i % 3]
        items.append(Item(item_set=item_set, kind="twist", external_id=f"conv-{i % 10}:v1{'bcd'[i % 3]}{i}",
                          recipient="R", draft="d", gold_label=gold_type, family=families[gold_type],
                          history_turns=rng.randint(369, 689), batch=f"v1{'bcd'[i % 3]}"))
    Item.objects.bulk_create(items, batch_size=5000)
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"bench-{p}", password=make_password(None)) for p in range(annotators)]
    )
    campaign = campaign_create(slug="bench", item_set=item_set, annotators=users, per_item=per_item, seed=seed)
    verdict = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}
    gold_of = dict(Item.objects.filter(item_set=item_set).values_list("id", "gold_label"))
    answers = []
    for assignment_id, item_id in Assignment.objects.filter(enrollment__campaign=campaign).values_list("id", "item_id"):
        gold = gold_of[item_id]
        q1 = verdict[gold] if rng.random() < 0.85 else rng.choice(["contradicts", "consistent", "cannot-tell"])
        values = {"q1": q1, "q1note": "note"}
        if gold == "contradicting":
            values |= {"q2": "yes" if rng.random() < 0.9 else "no", "q2quote": "yes" if rng.random() < 0.92 else "no"}
        else:
            values |= {"q3": "clean" if rng.random() < 0.97 else "conflict"}
        answers.append(Answer(assignment_id=assignment_id, values=values, revision=1))
    Answer.objects.bulk_create(answers, batch_size=5000)
    members = [CouncilMember.objects.create(name=f"bench-{m}") for m in ("gpt", "claude", "gemini")]
    ids = list(gold_of)
    votes = [
        CouncilVote(campaign=campaign, member=m, item_id=i, prompt_version="v1",
                    values={"q1": verdict[gold_of[i]] if rng.random() < 0.8 else "cannot-tell"})
        for m in members for i in ids[: n // 10]
    ]
    CouncilVote.objects.bulk_create(votes, batch_size=5000)
    Decision.objects.bulk_create(
        [Decision(campaign=campaign, item_id=i, action=rng.choice(["keep", "drop"])) for i in ids[::7]], batch_size=5000
    )
    return campaign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=2,
                        help="more than two: Fleiss' kappa, alpha, per-pair and per-annotator figures too")
    parser.add_argument("--per-item", type=int, default=2, help="annotators per item")
    parser.add_argument("--keep-db", action="store_true", help="keep the temporary SQLite file")
    parser.add_argument("--reuse", action="store_true", help="time the 'bench' campaign already in DATABASE_URL")
    args = parser.parse_args()
    folder = setup_django(args.keep_db, reuse=args.reuse)
    from adjudication.agreement import campaign_agreement
    from adjudication.selectors import campaign_data, campaign_queue, snapshot_from_data
    from annotation.models import Campaign

    started = time.perf_counter()
    campaign = Campaign.objects.filter(slug="bench").first() if args.reuse else None
    if campaign is None:
        campaign = build(args.items, annotators=args.annotators, per_item=args.per_item)
        print(f"built {args.items:,} items ({args.per_item} of {args.annotators} annotators each) in {time.perf_counter() - started:.1f} s")

    # Imported once per process in a running server (the first agreement after a start pays it, no
    # later one), so it is timed and printed on its own line, outside the total.
    clock = Clock()
    import krippendorff  # noqa: F401
    import statsmodels.stats.inter_rater  # noqa: F401

    clock.lap("one-off per process, not in the total: first import of statsmodels + krippendorff")

    clock = Clock()
    data = campaign_data(campaign)
    clock.lap("load answers, council votes, decisions (6 queries)")
    snapshot = snapshot_from_data(data)
    clock.lap(f"snapshot: queue ({len(snapshot.queue):,} entries) and retained set from the loaded data")
    result = campaign_agreement(campaign, snapshot=snapshot)
    clock.lap("agreement: kappa + intervals, strata, queue summary, retained set")
    wall, cpu = clock.total()
    print(f"TOTAL agreement + queue: {wall:.2f} s wall, {cpu:.2f} s CPU (target < 3 s)")
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
          "(wall time above CPU time is waiting for a busy machine)")
    clock = Clock()
    gc.collect()
    clock.lap("not in the total: one full garbage collection afterwards (the collector pauses during the load)")
    clock = Clock()
    campaign_queue(campaign)
    clock.lap("campaign_queue() alone, with its own load and full Item objects")
    fleiss = result["q1"].get("statistic") == "fleiss"
    ci = result["q1"]["ci95_bootstrap" if fleiss else "ci95"]
    print(f"q1 {'Fleiss' if fleiss else 'Cohen'} kappa {result['q1']['kappa']:.3f} ci95 [{ci[0]:.3f}, {ci[1]:.3f}], "
          f"queue {result['queue']['n']:,}")
    if not args.keep_db and folder:
        shutil.rmtree(folder, ignore_errors=True)


class Clock:
    def __init__(self):
        self.wall0 = self.wall = time.perf_counter()
        self.cpu0 = self.cpu = time.process_time()

    def lap(self, what: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        print(f"  {what}: {wall - self.wall:.2f} s wall, {cpu - self.cpu:.2f} s CPU")
        self.wall, self.cpu = wall, cpu

    def total(self) -> tuple[float, float]:
        return self.wall - self.wall0, self.cpu - self.cpu0


if __name__ == "__main__":
    main()
