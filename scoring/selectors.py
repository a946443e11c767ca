"""Reads for scores against a key: the key as scoring records, the stored runs and their predictions, and
the reports computed from them. Every figure of a run is recomputed by scoring.metrics from the
key's entries and the predictions, each time a report is asked for; the only stored figures read are
score-level-only ingests, a system's own numbers, which the report shows as given.

A report costs a constant number of queries whatever the number of runs or items: the key, its
entries, their conversations, the runs, their predictions (two queries: see run_columns), the
score-level ingests."""

import json
from collections import defaultdict
from operator import attrgetter

import numpy as np
from django.db.models import Aggregate, Count, IntegerField, Q, TextField, Value
from django.db.models.functions import Cast, Coalesce

from adjudication.selectors import _raw_rows, collector_paused
from goldkey.errors import ApplicationError, NotFound
from goldkey.lib import statistics
from items.models import Item
from keys.models import GoldKey, KeyEntry
from scoring import metrics
from scoring.metrics import KeyItem, ScoringError
from scoring.models import RunPrediction, ScoreLevelIngest, SystemRun


def key_items(key: GoldKey) -> list[KeyItem]:
    """The key's entries as scoring records, in the order of keys.selectors.key_entries (by item id). The
    bootstrap's cluster is the item's conversation; an item that points into no conversation is a
    cluster of its own. Only the fields scoring reads, straight from the cursor, the evidence decoded in
    one call: a 100,000-item key is read for every report."""
    rows = list(_raw_rows(
        KeyEntry.objects.filter(key=key)
        .annotate(evidence_raw=Coalesce(Cast("evidence", TextField()), Value("null"), output_field=TextField()))
        .values_list("item_id", "external_id", "gold", "evidence_raw", "history_turns")
        .order_by()
    ))
    conversation = dict(_raw_rows(
        Item.objects.filter(key_entries__key=key).values_list("id", "conversation__external_id").order_by()
    ))
    evidence = json.loads("[" + ",".join(row[3] for row in rows) + "]")
    entries = [
        KeyItem(item_id=external_id, gold=gold, conversation=conversation.get(item_id) or external_id,
                evidence=tuple(cited or ()), history_turns=history)
        for (item_id, external_id, gold, _, history), cited in zip(rows, evidence, strict=True)
    ]
    entries.sort(key=attrgetter("item_id"))
    return entries


def scorable_items(key: GoldKey) -> list[KeyItem]:
    """key_items, refused with a clear message when the key's gold is not Track B's (contradicting,
    aligned, hard_negative): the metrics of PROTOCOL.md §10 have nothing to count on other labels."""
    entries = key_items(key)
    try:
        metrics.check_key(entries)
    except ScoringError as exc:
        raise ApplicationError(f"'{key.version}' cannot be scored with the Track B metrics: {exc}") from exc
    return entries


def dropped_items(key: GoldKey) -> dict[str, KeyItem]:
    """The items earlier versions of this key's line held and this one does not (dropped by an erratum),
    as those versions recorded them, the latest version first. A run made on an earlier version predicts
    them: it is imported and scored on this key's items, and the report lists the rest."""
    dropped: dict[str, KeyItem] = {}
    held = {item.item_id for item in key_items(key)}
    ancestor = key.parent
    while ancestor is not None:
        for item in key_items(ancestor):
            if item.item_id not in held:
                dropped.setdefault(item.item_id, item)
        ancestor = ancestor.parent
    return dropped


def run_authorship(key: GoldKey) -> dict:
    """Who ran the runs against this key (one query): runs per SystemRun.ProducedBy, and the systems run by
    their own authors independently of the key's. TWIST §8: "benchmark" without "proposed" needs N >= 2."""
    rows = list(SystemRun.objects.filter(key=key).values_list("system", "produced_by").order_by())
    counts = {choice: 0 for choice in SystemRun.ProducedBy.values}
    for _, produced_by in rows:
        counts[produced_by] += 1
    independent = sorted({system for system, by in rows if by == SystemRun.ProducedBy.SYSTEM_AUTHORS})
    return {"runs": len(rows), "by": counts, "independent_systems": independent,
            "independent_runs": counts[SystemRun.ProducedBy.SYSTEM_AUTHORS], "enough": len(independent) >= INDEPENDENT_SYSTEMS_NEEDED}


INDEPENDENT_SYSTEMS_NEEDED = 2  # TWIST §8


def runs_for_key(key: GoldKey) -> list[SystemRun]:
    """The runs imported against this key version, in import order (the McNemar table's `a` comes first)."""
    return list(SystemRun.objects.filter(key=key).select_related("imported_by", "key").order_by("id"))


def run_for_key(key: GoldKey, run_id: int) -> SystemRun:
    run = SystemRun.objects.select_related("imported_by", "key").filter(key=key, pk=run_id).first()
    if run is None:
        raise NotFound(f"no run {run_id} against '{key.version}'")
    return run


# ASCII record separator between the values of one run: json.dumps escapes every control character, so
# no stored evidence text holds it; an item id that does (ids are free text) is caught by the row count.
SEPARATOR = "\x1e"


class _Joined(Aggregate):
    """One column of a group's rows as one text, the values joined by `separator`. Every _Joined of one
    query lists the rows in the same order: SQLite's group_concat steps all of a query's aggregates
    through a group's rows together, and PostgreSQL's string_agg is told the order (the row id)."""

    function = "GROUP_CONCAT"
    output_field = TextField()

    def __init__(self, expression, separator: str = SEPARATOR):
        super().__init__(Cast(expression, TextField()), Value(separator))

    def as_postgresql(self, compiler, connection, **extra_context):
        order = f"{connection.ops.quote_name(RunPrediction._meta.db_table)}.{connection.ops.quote_name('id')}"
        return self.as_sql(compiler, connection, function="STRING_AGG",
                           template=f"%(function)s(%(expressions)s ORDER BY {order})", **extra_context)


def _cited(texts: list[str]) -> list:
    """Stored evidence texts (SQL NULL read as JSON null) decoded in one call: the cited ids, or None."""
    return json.loads("[" + ",".join(texts) + "]")


class _ById:
    """A run's attribution outcomes (the released results format) by row, from {item id: value}."""

    __slots__ = ("ids", "values")

    def __init__(self, ids: list[str], values: dict[str, bool | None]):
        self.ids, self.values = ids, values

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return self.values.get(self.ids[i])


def run_columns(runs: list[SystemRun], columns: metrics.KeyColumns,
                outside: dict[int, list[str]] | None = None) -> dict[int, metrics.RunColumns | ScoringError]:
    """Every prediction of these runs placed on the key's columns (metrics.KeyColumns.place), by run id;
    a run that cannot be scored against this key (a key item without a prediction) maps to the reason.

    Two queries whatever the number of runs: the database concatenates each run's item ids, verdicts
    and evidence texts (one row per run, so Python never touches a row object of 5,000,000), and the
    attribution outcomes are read row by row only where a run recorded them (the released results
    format; a run with citations leaves them null). The evidence stays text until the scoring rules
    ask for a caught item's citations (`_cited`). With `outside`, the ids of each run's predictions for
    items the key does not hold are put there by run id (only runs that have any)."""
    if not runs:
        return {}
    ids = [run.pk for run in runs]
    joined = (
        RunPrediction.objects.filter(run__in=ids)
        .values("run_id")
        .order_by()
        .annotate(
            rows=Count("id"),
            item_ids=_Joined("item_external_id"),
            verdicts=_Joined(Cast("aligned", IntegerField()), separator=""),
            evidence=_Joined(Coalesce(Cast("evidence", TextField()), Value("null"), output_field=TextField())),
        )
        .values_list("run_id", "rows", "item_ids", "verdicts", "evidence")
    )
    outcomes: dict[int, dict[str, dict]] = defaultdict(lambda: {"attributed": {}, "cited_fact_only": {}})
    recorded = (
        RunPrediction.objects.filter(run__in=ids)
        .filter(Q(attributed__isnull=False) | Q(cited_fact_only__isnull=False))
        .values_list("run_id", "item_external_id", "attributed", "cited_fact_only")
        .order_by()
    )
    for run_id, item_id, attributed, fact_only in recorded.iterator(chunk_size=20_000):
        outcomes[run_id]["attributed"][item_id] = attributed
        outcomes[run_id]["cited_fact_only"][item_id] = fact_only
    out: dict[int, metrics.RunColumns | ScoringError] = {}
    for run_id, count, item_text, verdicts, evidence in joined:
        item_ids = item_text.split(SEPARATOR)
        texts = evidence.split(SEPARATOR)
        if not len(item_ids) == len(texts) == len(verdicts) == count:
            out[run_id] = ScoringError("an item id of this run holds the ASCII record separator (U+001E): it cannot be read")
            continue
        if outside is not None and count > len(columns.ids):
            outside[run_id] = sorted(i for i in item_ids if i not in columns.position)
        recorded_outcomes = outcomes.get(run_id, {"attributed": {}, "cited_fact_only": {}})
        try:
            out[run_id] = columns.place(
                item_ids=item_ids,
                aligned=np.frombuffer(verdicts.encode("ascii"), np.uint8) == ord("1"),
                evidence=texts,
                attributed=_ById(item_ids, recorded_outcomes["attributed"]),
                cited_fact_only=_ById(item_ids, recorded_outcomes["cited_fact_only"]),
                decode=_cited,
            )
        except ScoringError as exc:
            out[run_id] = exc
    for run_id in ids:
        if run_id not in out:  # a run without a single stored prediction (no group in the query)
            out[run_id] = _missing_run(columns)
    return out


def _missing_run(columns: metrics.KeyColumns) -> metrics.RunColumns | ScoringError:
    """A run without a single stored prediction, placed as any other (refused unless the key is empty)."""
    try:
        return columns.place(item_ids=[], aligned=[], evidence=[], attributed=[], cited_fact_only=[])
    except ScoringError as exc:
        return exc


def _run_record(run: SystemRun) -> dict:
    return {
        "id": run.pk,
        "system": run.system,
        "configuration": run.configuration,
        "ingest": run.ingest,
        "metadata": run.metadata,
        "produced_by": run.produced_by,
        "source": {"name": run.source_name, "sha256": run.source_sha256},
        "imported_by": run.imported_by.username if run.imported_by else None,
        "imported_at": run.imported_at.isoformat().replace("+00:00", "Z"),
        "key": run.key.version,
    }


def score_level_for_key(key: GoldKey) -> list[ScoreLevelIngest]:
    """The score-level-only ingests imported against this key version, in import order."""
    return list(ScoreLevelIngest.objects.filter(key=key).select_related("imported_by").order_by("id"))


def _score_level_record(ingest: ScoreLevelIngest) -> dict:
    return {
        "id": ingest.pk,
        "name": ingest.name,
        "ingest": ingest.ingest,
        "scores": ingest.scores,
        "note": ingest.note,
        "metadata": ingest.metadata,
        "source": {"name": ingest.source_name, "sha256": ingest.source_sha256},
        "imported_by": ingest.imported_by.username if ingest.imported_by else None,
        "imported_at": ingest.imported_at.isoformat().replace("+00:00", "Z"),
    }


def _multi_ingest(entries: list[KeyItem], columns: metrics.KeyColumns, runs: list[SystemRun], placed: dict,
                  score_level: list[ScoreLevelIngest], replicates: int) -> dict:
    """For each system and configuration with several ingests, or with a score-level-only one: one point
    per ingest (per-item runs first, then the score-level figures as given), mean, range and the
    hierarchical bootstrap over the per-item runs (PROTOCOL.md §10)."""
    by_base: dict[str, list[SystemRun]] = defaultdict(list)
    for run in runs:
        by_base[run.base_name].append(run)
    scores_only: dict[str, list[ScoreLevelIngest]] = defaultdict(list)
    for ingest in score_level:
        scores_only[ingest.base_name].append(ingest)
    bases = list(by_base) + [base for base in scores_only if base not in by_base]
    return {
        base: {
            **metrics.multi_ingest(entries=entries, columns=columns, ingests=[placed[run.pk] for run in by_base[base]],
                                   score_level=[i.scores for i in scores_only[base]], replicates=replicates),
            "runs": [run.name for run in by_base[base]],
            "score_level": [_score_level_record(i) for i in scores_only[base]],
        }
        for base in bases
        if len(by_base[base]) + len(scores_only[base]) > 1 or scores_only[base]
    }


@collector_paused()  # 50 runs of 100,000 items: millions of strings and small lists, no cycles
def score_report(
    key: GoldKey,
    *,
    runs: list[SystemRun] | None = None,
    entries: list[KeyItem] | None = None,
    bootstrap: bool = True,
    replicates: int = statistics.BOOTSTRAP_REPLICATES,
    seed: int = statistics.BOOTSTRAP_SEED,
    family: str = "all",
    classes: tuple[str, ...] = metrics.MCNEMAR_CLASSES,
) -> dict:
    """The report of `runs` (default: the runs imported against `key`) scored against `key`, citing its
    version and SHA-256: {"key", "runs", "mcnemar", "family", "family_size", "run_records",
    "multi_ingest", "unscorable", "outside_key"}. A run is scored on the key's items; the ids it also
    predicted (items a derived version dropped) are listed under "outside_key". A run that lacks a prediction for one of the key's items (a later
    version added it) cannot be scored against this key: it is listed under "unscorable" with the reason
    instead of being scored on part of the key."""
    entries = scorable_items(key) if entries is None else entries
    runs = runs_for_key(key) if runs is None else runs
    columns = metrics.KeyColumns(entries)
    outside: dict[int, list[str]] = {}
    placed = run_columns(runs, columns, outside)
    scorable = [run for run in runs if isinstance(placed[run.pk], metrics.RunColumns)]
    unscorable = {run.name: str(placed[run.pk]) for run in runs if isinstance(placed[run.pk], ScoringError)}
    unknown_classes = [c for c in classes if c not in metrics.GOLD_TYPES]
    if unknown_classes or not classes:
        raise ApplicationError(f"--classes: must name gold classes among {', '.join(metrics.GOLD_TYPES)}")
    try:
        report = metrics.score_report(
            key_version=key.version,
            key_sha256=key.sha256,
            entries=entries,
            columns=columns,
            runs={run.name: placed[run.pk] for run in scorable},
            bootstrap=bootstrap,
            replicates=replicates,
            seed=seed,
            family_spec=family,
            classes=classes,
        )
    except ScoringError as exc:
        raise ApplicationError(str(exc)) from exc
    report["run_records"] = {run.name: _run_record(run) for run in scorable}
    report["multi_ingest"] = (
        _multi_ingest(entries, columns, scorable, placed, score_level_for_key(key), replicates) if bootstrap else {}
    )
    report["unscorable"] = unscorable
    # Scored on the key's items: what else a run predicted (items a derived version dropped) is named.
    report["outside_key"] = {run.name: outside[run.pk] for run in scorable if outside.get(run.pk)}
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
