"""The stored path of a report: predictions read from the database as columns score exactly as the same
predictions given as records, in a constant number of queries."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from goldkey.lib.bulk import bulk_insert
from items.models import Conversation, Item
from items.services import item_set_get_or_create
from keys.models import GoldKey, KeyEntry
from scoring import metrics
from scoring import selectors as score_selectors
from scoring.metrics import KeyItem, Prediction
from scoring.models import RunPrediction, SystemRun

pytestmark = pytest.mark.django_db

TYPES = ("contradicting", "aligned", "hard_negative")
REPLICATES = 300


def random_key(rng: random.Random, n: int, conversations: int) -> list[KeyItem]:
    history = {f"conv-{c}": rng.choice((400, 620, 621, 689)) for c in range(conversations)}
    entries = []
    for i in range(n):
        conversation = f"conv-{rng.randrange(conversations)}"
        entries.append(KeyItem(
            item_id=f"{conversation}:x{i:04d}", gold=rng.choice(TYPES), conversation=conversation,
            evidence=tuple(f"D{rng.randint(1, 4)}:{rng.randint(1, 4)}" for _ in range(rng.randint(1, 3))),
            history_turns=history[conversation],
        ))
    return entries


def random_run(rng: random.Random, entries: list[KeyItem], *, released: bool = False) -> dict[str, Prediction]:
    """Citations drawn so that every rule is hit: gold turns inside and outside the top three, extracted
    facts only, nothing cited; or (released) only the attribution outcome, sometimes unknown."""
    run = {}
    for e in entries:
        aligned = rng.random() < 0.5
        if released:
            run[e.item_id] = Prediction(aligned=aligned, attributed=rng.choice((True, False, None)),
                                        cited_fact_only=rng.choice((True, False, False)))
            continue
        cited = [f"D{rng.randint(1, 4)}:{rng.randint(1, 4)}" if rng.random() < 0.8 else f"fact:{rng.randint(1, 9)}"
                 for _ in range(rng.randint(0, 5))]
        run[e.item_id] = Prediction(aligned=aligned, evidence=tuple(cited))
    return run


def store_key(entries: list[KeyItem], version: str = "RANDOM-v1.0") -> GoldKey:
    """A frozen key holding these entries, written directly (the scoring reads do not verify its hash)."""
    item_set = item_set_get_or_create(name=f"{version} items", kind="twist")
    Conversation.objects.bulk_create([Conversation(external_id=c, speaker_a="A", speaker_b="B")
                                      for c in sorted({e.conversation for e in entries})], ignore_conflicts=True)
    conversation = dict(Conversation.objects.values_list("external_id", "id"))
    Item.objects.bulk_create(Item(item_set=item_set, kind="twist", external_id=e.item_id, gold_label=e.gold,
                                  conversation_id=conversation[e.conversation], history_turns=e.history_turns)
                             for e in entries)
    item_ids = dict(Item.objects.filter(item_set=item_set).values_list("external_id", "id"))
    key = GoldKey.objects.create(benchmark=item_set.track.benchmark, kind="twist", version=version)
    bulk_insert(KeyEntry, ({"key_id": key.pk, "item_id": item_ids[e.item_id], "external_id": e.item_id, "gold": e.gold,
                            "evidence": list(e.evidence), "quote": "", "family": "", "history_turns": e.history_turns,
                            "provenance": "kept_unanimous", "detail": None} for e in entries))
    GoldKey.objects.filter(pk=key.pk).update(status=GoldKey.Status.FROZEN, sha256="ab" * 32, frozen_at=timezone.now())
    return GoldKey.objects.get(pk=key.pk)


def store_run(key: GoldKey, system: str, predictions: dict[str, Prediction], rng: random.Random, *, ingest: int = 1) -> SystemRun:
    """The run's rows written in a shuffled order: the stored path must not depend on the row order."""
    run = SystemRun.objects.create(key=key, system=system, ingest=ingest, source_name="test", source_sha256="0" * 64)
    rows = [{"run_id": run.pk, "item_external_id": item_id, "aligned": p.aligned,
             "evidence": None if p.evidence is None else list(p.evidence),
             "attributed": p.attributed, "cited_fact_only": p.cited_fact_only} for item_id, p in predictions.items()]
    rng.shuffle(rows)
    bulk_insert(RunPrediction, rows)
    return run


def test_the_stored_columns_and_the_records_give_identical_reports_on_a_seeded_random_key():
    rng = random.Random(2026)
    entries = random_key(rng, 300, 7)
    key = store_key(entries)
    runs = {
        "alpha": random_run(rng, entries),
        "beta": random_run(rng, entries),
        "released": random_run(rng, entries, released=True),
        # A run imported against a version that held one more item: the extra prediction is ignored.
        "wider": {**random_run(rng, entries), "conv-0:dropped": Prediction(aligned=False, evidence=("D1:1",))},
        "alpha@ingest2": random_run(rng, entries),
    }
    for name, predictions in runs.items():
        system, _, ingest = name.partition("@ingest")
        store_run(key, system, predictions, rng, ingest=int(ingest or 1))
    stored = score_selectors.score_report(key, replicates=REPLICATES)
    records = metrics.score_report(key_version=key.version, key_sha256=key.sha256, entries=entries, runs=runs,
                                   replicates=REPLICATES)
    assert list(stored["runs"]) == list(runs)
    for name in runs:
        assert stored["runs"][name] == records["runs"][name], name
    assert stored["runs"]["wider"]["ignored_predictions"] == 1
    assert stored["mcnemar"] == records["mcnemar"] and stored["family"] == records["family"]
    # And both equal the plain reference, one item at a time.
    assert stored["runs"]["released"] == metrics.run_score(entries=entries, predictions=runs["released"], replicates=REPLICATES)
    expected = metrics.multi_ingest(entries=entries, ingests=[runs["alpha"], runs["alpha@ingest2"]], replicates=REPLICATES)
    assert stored["multi_ingest"]["alpha"] == {**expected, "runs": ["alpha", "alpha@ingest2"], "score_level": []}
    assert stored["unscorable"] == {}


def test_a_stored_run_missing_a_key_item_is_unscorable_with_the_records_message():
    rng = random.Random(7)
    entries = random_key(rng, 40, 3)
    key = store_key(entries)
    full = random_run(rng, entries)
    partial = {k: v for k, v in full.items() if k != entries[5].item_id}
    store_run(key, "full", full, rng)
    store_run(key, "partial", partial, rng)
    SystemRun.objects.create(key=key, system="empty", source_name="test", source_sha256="0" * 64)
    report = score_selectors.score_report(key, replicates=REPLICATES)
    assert list(report["runs"]) == ["full"]
    with pytest.raises(metrics.ScoringError) as refused:
        metrics.check_run(entries, partial)
    assert report["unscorable"]["partial"] == str(refused.value)
    assert report["unscorable"]["empty"].startswith("40 key item(s) have no prediction")


@pytest.mark.parametrize("released", [False, True])
def test_the_report_costs_the_same_queries_for_2_runs_and_for_10(released):
    rng = random.Random(11)
    entries = random_key(rng, 60, 4)
    key = store_key(entries)

    def queries(count: int) -> int:
        SystemRun.objects.filter(key=key).delete()
        for r in range(count):
            store_run(key, f"system-{r}", random_run(rng, entries, released=released), rng)
        with CaptureQueriesContext(connection) as captured:
            report = score_selectors.score_report(key, replicates=20)
        assert len(report["runs"]) == count
        return len(captured.captured_queries)

    assert queries(2) == queries(10)


def test_a_run_whose_item_id_holds_the_separator_is_listed_unscorable_and_the_others_still_score():
    rng = random.Random(5)
    entries = random_key(rng, 30, 2) + [KeyItem(item_id="odd\x1eid", gold="aligned", conversation="conv-0")]
    key = store_key(entries)
    store_run(key, "plain", random_run(rng, entries), rng)
    report = score_selectors.score_report(key, replicates=20)
    assert list(report["runs"]) == [] and "ASCII record separator" in report["unscorable"]["plain"]
    other = store_key(entries[:-1], version="RANDOM-v2.0")
    store_run(other, "plain", random_run(rng, entries[:-1]), rng)
    assert list(score_selectors.score_report(other, replicates=20)["runs"]) == ["plain"]
