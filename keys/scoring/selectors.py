"""Reads for scores against a key: the key as scoring records, the stored runs and their predictions, and
the reports computed from them. Nothing here reads a stored score: every figure is recomputed by
keys.scoring.metrics from the key's entries and the predictions, each time a report is asked for.

A report costs a constant number of queries whatever the number of runs or items: the key, its
entries, their conversations, the runs, their predictions."""

import json
from collections import defaultdict

from django.db.models import TextField
from django.db.models.functions import Cast

from goldkey.errors import ApplicationError, NotFound
from goldkey.lib import statistics
from items.models import Item
from keys import selectors as key_selectors
from keys.models import GoldKey, RunPrediction, SystemRun
from keys.scoring import metrics
from keys.scoring.metrics import KeyItem, Prediction, ScoringError


def key_items(key: GoldKey) -> list[KeyItem]:
    """The key's entries as scoring records. The bootstrap's cluster is the item's conversation; an item
    that points into no conversation is a cluster of its own."""
    entries = key_selectors.key_entries(key)
    conversation = dict(
        Item.objects.filter(key_entries__key=key).values_list("id", "conversation__external_id")
    )
    return [
        KeyItem(
            item_id=e.external_id,
            gold=e.gold,
            conversation=conversation.get(e.item_id) or e.external_id,
            evidence=tuple(e.evidence or ()),
            history_turns=e.history_turns,
        )
        for e in entries
    ]


def scorable_items(key: GoldKey) -> list[KeyItem]:
    """key_items, refused with a clear message when the key's gold is not Track B's (contradicting,
    aligned, hard_negative): the metrics of PROTOCOL.md §10 have nothing to count on other labels."""
    entries = key_items(key)
    try:
        metrics.check_key(entries)
    except ScoringError as exc:
        raise ApplicationError(f"'{key.version}' cannot be scored with the Track B metrics: {exc}") from exc
    return entries


def runs_for_key(key: GoldKey) -> list[SystemRun]:
    """The runs imported against this key version, in import order (the McNemar table's `a` comes first)."""
    return list(SystemRun.objects.filter(key=key).select_related("imported_by", "key").order_by("id"))


def run_for_key(key: GoldKey, run_id: int) -> SystemRun:
    run = SystemRun.objects.select_related("imported_by", "key").filter(key=key, pk=run_id).first()
    if run is None:
        raise NotFound(f"no run {run_id} against '{key.version}'")
    return run


def run_predictions(runs: list[SystemRun]) -> dict[int, dict[str, Prediction]]:
    """Every prediction of these runs, by run id then item id: one query."""
    out: dict[int, dict[str, Prediction]] = {run.pk: {} for run in runs}
    # The evidence comes as text and is decoded here, as key_entries does: at millions of rows the
    # JSONField converter costs more than the decoding.
    rows = (
        RunPrediction.objects.filter(run__in=[run.pk for run in runs])
        .annotate(evidence_raw=Cast("evidence", TextField()))
        .values_list("run_id", "item_external_id", "aligned", "evidence_raw", "attributed", "cited_fact_only")
        .order_by()
    )
    loads = json.loads
    for run_id, item_id, aligned, evidence, attributed, fact_only in rows.iterator(chunk_size=20_000):
        cited = None if evidence is None else loads(evidence)  # JSON null and SQL NULL alike
        out[run_id][item_id] = Prediction(
            aligned=aligned,
            evidence=None if cited is None else tuple(cited),
            attributed=attributed,
            cited_fact_only=fact_only,
        )
    return out


def _run_record(run: SystemRun) -> dict:
    return {
        "id": run.pk,
        "system": run.system,
        "configuration": run.configuration,
        "ingest": run.ingest,
        "metadata": run.metadata,
        "source": {"name": run.source_name, "sha256": run.source_sha256},
        "imported_by": run.imported_by.username if run.imported_by else None,
        "imported_at": run.imported_at.isoformat().replace("+00:00", "Z"),
        "key": run.key.version,
    }


def _multi_ingest(entries: list[KeyItem], runs: list[SystemRun], predictions: dict, replicates: int) -> dict:
    """For each system and configuration run on several ingests: one point per ingest, mean, range and the
    hierarchical bootstrap (PROTOCOL.md §10)."""
    by_base: dict[str, list[SystemRun]] = defaultdict(list)
    for run in runs:
        by_base[run.base_name].append(run)
    return {
        base: {
            **metrics.multi_ingest(entries=entries, ingests=[predictions[run.pk] for run in group], replicates=replicates),
            "runs": [run.name for run in group],
        }
        for base, group in by_base.items()
        if len(group) > 1
    }


def score_report(
    key: GoldKey,
    *,
    runs: list[SystemRun] | None = None,
    entries: list[KeyItem] | None = None,
    bootstrap: bool = True,
    replicates: int = statistics.BOOTSTRAP_REPLICATES,
    seed: int = statistics.BOOTSTRAP_SEED,
) -> dict:
    """The report of `runs` (default: the runs imported against `key`) scored against `key`, citing its
    version and SHA-256: {"key", "runs", "mcnemar", "family", "family_size", "run_records",
    "multi_ingest", "unscorable"}. A run that lacks a prediction for one of the key's items (a later
    version added it) cannot be scored against this key: it is listed under "unscorable" with the reason
    instead of being scored on part of the key."""
    entries = scorable_items(key) if entries is None else entries
    runs = runs_for_key(key) if runs is None else runs
    predictions = run_predictions(runs)
    scorable, unscorable = [], {}
    for run in runs:
        try:
            metrics.check_run(entries, predictions[run.pk])
        except ScoringError as exc:
            unscorable[run.name] = str(exc)
        else:
            scorable.append(run)
    report = metrics.score_report(
        key_version=key.version,
        key_sha256=key.sha256,
        entries=entries,
        runs={run.name: predictions[run.pk] for run in scorable},
        bootstrap=bootstrap,
        replicates=replicates,
        seed=seed,
    )
    report["run_records"] = {run.name: _run_record(run) for run in scorable}
    report["multi_ingest"] = _multi_ingest(entries, scorable, predictions, replicates) if bootstrap else {}
    report["unscorable"] = unscorable
    return report


CHANGE_METRICS = ("CR", "AS", "HNS", "Attr", "GCR", "fact_only")


def score_changes(before: GoldKey, after: GoldKey) -> dict:
    """The runs imported against `before`, scored against `before` and against `after` (the same stored
    predictions; only the key differs), and what changed: per run and metric the k of n on each side,
    the McNemar tests whose counts moved, and the key items that differ between the two versions."""
    runs = runs_for_key(before)
    old_entries, new_entries = scorable_items(before), scorable_items(after)
    old = score_report(before, runs=runs, entries=old_entries)
    new = score_report(after, runs=runs, entries=new_entries)
    rows = []
    for name, figures in old["runs"].items():
        later = new["runs"].get(name)
        for metric in CHANGE_METRICS:
            a = figures[metric]
            b = later[metric] if later else None
            rows.append({
                "run": name,
                "metric": metric,
                "before": a,
                "after": b,
                "changed": b is None or (a["k"], a["n"]) != (b["k"], b["n"])
                or a.get("bootstrap") != b.get("bootstrap"),
            })
    tests_after = {(t["a"], t["b"], t["class"]): t for t in new["mcnemar"]}
    mcnemar = []
    for test in old["mcnemar"]:
        other = tests_after.get((test["a"], test["b"], test["class"]))
        if other is None or (test["b_count"], test["c_count"]) != (other["b_count"], other["c_count"]):
            mcnemar.append({"before": test, "after": other})
    old_ids = {e.item_id: e for e in old_entries}
    new_ids = {e.item_id: e for e in new_entries}
    items = sorted(
        [{"item": i, "change": "dropped", "before": old_ids[i].gold, "after": None} for i in old_ids.keys() - new_ids.keys()]
        + [{"item": i, "change": "added", "before": None, "after": new_ids[i].gold} for i in new_ids.keys() - old_ids.keys()]
        + [
            {"item": i, "change": "changed", "before": old_ids[i].gold, "after": new_ids[i].gold}
            for i in old_ids.keys() & new_ids.keys()
            if old_ids[i] != new_ids[i]
        ],
        key=lambda row: row["item"],
    )
    return {
        "before": old["key"],
        "after": new["key"],
        "runs": list(old["runs"]),
        "metrics": rows,
        "changed": [row for row in rows if row["changed"]],
        "mcnemar_changed": mcnemar,
        "family_size": {"before": old["family_size"], "after": new["family_size"]},
        "items": items,
        "unscorable_after": new["unscorable"],
    }
