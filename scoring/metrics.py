"""The Track B metrics of system runs against a key (PROTOCOL.md §10), with their intervals and tests.

Inputs are plain records: the key's entries (KeyItem) and, per run, a prediction for every key item
(Prediction). Every count is k of n with its Wilson interval; CR, AS and HNS also carry the
conversation-clustered bootstrap. Paired metrics travel together: every figure set holds CR, AS, HNS,
Attr and GCR, never one of them alone.

Two paths compute the same numbers. `run_score` and `mcnemar_family` are the plain reference, one item
at a time; `score_report` scores many runs at once with numpy (one bootstrap count matrix shared by all
runs, McNemar counts as matrix products) and is tested to equal the plain path exactly. The batch path
takes a run either as {item id: Prediction} or as RunColumns (the stored path reads its rows straight
into them, KeyColumns.place); both go through the same `_outcomes`, tested to give the same report.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, repeat
from operator import attrgetter

import numpy as np

from goldkey.lib import statistics

CONTRADICTING, ALIGNED, HARD_NEGATIVE = "contradicting", "aligned", "hard_negative"
GOLD_TYPES = (CONTRADICTING, ALIGNED, HARD_NEGATIVE)
CLASS_METRICS = {"CR": CONTRADICTING, "AS": ALIGNED, "HNS": HARD_NEGATIVE}
MCNEMAR_CLASSES = (CONTRADICTING, HARD_NEGATIVE)
ATTRIBUTION_BUDGET = 3  # only the first three cited ids count, so citing everything cannot inflate Attr
HISTORY_SPLIT = 620
SHORT, LONG = f"history<={HISTORY_SPLIT}", f"history>{HISTORY_SPLIT}"
# A cited id that is not a LoCoMo turn id (D19:1) is an extracted fact: it never earns attribution.
TURN_ID = re.compile(r"D\d+:\d+")


class ScoringError(ValueError):
    """The run cannot be scored against this key (an item without a prediction, an unknown gold type)."""


@dataclass(frozen=True, slots=True)
class KeyItem:
    """One key entry as scoring needs it."""

    item_id: str
    gold: str  # contradicting | aligned | hard_negative
    conversation: str  # the bootstrap's cluster
    evidence: tuple[str, ...] = ()  # gold turn ids
    history_turns: int | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    """A system's output for one item. `evidence` is None when the run only reports the outcome of the
    attribution check (the released results format): then `attributed` and `cited_fact_only` say it."""

    aligned: bool  # False = flagged as contradicting
    evidence: tuple[str, ...] | None = None  # cited ids, best first
    attributed: bool | None = None
    cited_fact_only: bool | None = None


# ---------------------------------------------------------------------------------------------
# One item


def is_correct(item: KeyItem, prediction: Prediction) -> bool:
    """Gold is aligned unless the item is contradicting."""
    return prediction.aligned == (item.gold != CONTRADICTING)


def is_caught(item: KeyItem, prediction: Prediction) -> bool:
    """A contradicting item correctly flagged."""
    return item.gold == CONTRADICTING and not prediction.aligned


def is_fact_only(item: KeyItem, prediction: Prediction) -> bool:
    """A caught item whose citations are all extracted facts, none a turn."""
    if not is_caught(item, prediction):
        return False
    if prediction.evidence is None:
        return bool(prediction.cited_fact_only)
    return bool(prediction.evidence) and not any(TURN_ID.fullmatch(e) for e in prediction.evidence)


def is_attributed(item: KeyItem, prediction: Prediction) -> bool:
    """A caught item with at least one of its first three cited ids in the gold evidence (exact match);
    fact-only citations are never credited."""
    if not is_caught(item, prediction) or is_fact_only(item, prediction):
        return False
    if prediction.evidence is None:
        return bool(prediction.attributed)
    gold = set(item.evidence)
    return any(e in gold for e in prediction.evidence[:ATTRIBUTION_BUDGET])


# ---------------------------------------------------------------------------------------------
# Figures


def proportion(k: int, n: int) -> dict:
    low, high = statistics.wilson_interval(k, n)
    return {"k": k, "n": n, "value": k / n if n else 0.0, "wilson": [low, high]}


def _figures_from_counts(right: dict, total: dict, caught: int, attributed: int, fact_only: int) -> dict:
    figures = {metric: proportion(right[gold], total[gold]) for metric, gold in CLASS_METRICS.items()}
    figures["Attr"] = proportion(attributed, caught)
    figures["GCR"] = proportion(attributed, total[CONTRADICTING])
    figures["fact_only"] = proportion(fact_only, caught)
    figures["balanced_accuracy"] = (figures["CR"]["value"] + figures["AS"]["value"]) / 2
    figures["n_items"] = sum(total.values())
    return figures


def figures(entries: Sequence[KeyItem], predictions: Mapping[str, Prediction]) -> dict:
    """CR, AS, HNS, Attr, GCR, fact-only citations (each k of n with Wilson) and balanced accuracy."""
    check_run(entries, predictions)
    right = dict.fromkeys(GOLD_TYPES, 0)
    total = dict.fromkeys(GOLD_TYPES, 0)
    caught = attributed = fact_only = 0
    for item in entries:
        prediction = predictions[item.item_id]
        total[item.gold] += 1
        right[item.gold] += is_correct(item, prediction)
        if is_caught(item, prediction):
            caught += 1
            attributed += is_attributed(item, prediction)
            fact_only += is_fact_only(item, prediction)
    return _figures_from_counts(right, total, caught, attributed, fact_only)


def history_strata(entries: Sequence[KeyItem]) -> dict[str, list[KeyItem]]:
    """Items with a history of at most 620 turns, and longer ones (items without a length in neither)."""
    strata: dict[str, list[KeyItem]] = {SHORT: [], LONG: []}
    for item in entries:
        if item.history_turns is not None:
            strata[SHORT if item.history_turns <= HISTORY_SPLIT else LONG].append(item)
    return strata


def check_key(entries: Sequence[KeyItem]) -> None:
    bad = sorted({item.gold for item in entries} - set(GOLD_TYPES))
    if bad:
        raise ScoringError(f"unknown gold type(s) in the key: {', '.join(bad)} (expected {', '.join(GOLD_TYPES)})")


def _missing_error(missing: Sequence[str]) -> ScoringError:
    shown = ", ".join(missing[:10]) + (f", … ({len(missing)} in all)" if len(missing) > 10 else "")
    return ScoringError(f"{len(missing)} key item(s) have no prediction (Track B has no abstention): {shown}")


def check_run(entries: Sequence[KeyItem], predictions: Mapping[str, Prediction]) -> int:
    """Refuse a run that leaves a key item without a prediction (Track B has no abstention) or a key
    with an unknown gold type. Returns how many predictions are for items outside the key: a run
    imported against one version is scored against a later one that dropped items."""
    check_key(entries)
    missing = [item.item_id for item in entries if item.item_id not in predictions]
    if missing:
        raise _missing_error(missing)
    return len(predictions) - len(entries)  # key ids are unique, and every one has a prediction


def _bootstrap_section(replicates: int, seed: int) -> dict:
    return {"replicates": replicates, "seed": seed, "cluster": "conversation", "metrics": list(CLASS_METRICS)}


def run_score(
    *,
    entries: Sequence[KeyItem],
    predictions: Mapping[str, Prediction],
    replicates: int = statistics.BOOTSTRAP_REPLICATES,
    seed: int = statistics.BOOTSTRAP_SEED,
    bootstrap: bool = True,
) -> dict:
    """Every figure of one run (the plain reference path): the metrics, the bootstrap interval of CR,
    AS and HNS, and the same metrics (Wilson only) within each history stratum."""
    ignored = check_run(entries, predictions)
    result = figures(entries, predictions)
    if bootstrap:
        for metric, gold in CLASS_METRICS.items():
            clusters: dict[str, list[int]] = {}
            for item in entries:
                if item.gold == gold:
                    clusters.setdefault(item.conversation, []).append(int(is_correct(item, predictions[item.item_id])))
            low, high = statistics.cluster_bootstrap(clusters, replicates=replicates, seed=seed)
            result[metric]["bootstrap"] = [low, high]
        result["bootstrap"] = _bootstrap_section(replicates, seed)
    result["strata"] = {name: figures(subset, predictions) for name, subset in history_strata(entries).items()}
    result["ignored_predictions"] = ignored
    return result


def _family_section(names: list[str], classes: Sequence[str], size: int, *, spec: str = "all",
                    description: str = "", pairs: int | None = None) -> dict:
    return {
        "size": size,
        "spec": spec,
        "description": description or f"every pair of the {len(names)} runs",
        "runs": names,
        "classes": list(classes),
        "pairs": len(names) * (len(names) - 1) // 2 if pairs is None else pairs,
        "test": "exact two-sided McNemar",
        "correction": "Holm over every test listed",
    }


FAMILY_SPECS = "all | against:RUN | pairs:A~B,C~D | floors:SYSTEM"


def family_pairs(names: Sequence[str], spec: str = "all") -> tuple[list[tuple[int, int]], str]:
    """The pairs of runs (indexes into `names`, `a` first) a Holm family holds, and how to say it. The family is
    the author's choice and the report states it: "all" (every pair), "against:RUN" (each run against that
    one), "pairs:A~B,C~D" (a listed set), "floors:SYSTEM" (each run against its own configuration's run of
    SYSTEM, e.g. draftonly:openai for flatrag:openai: the draft-only floor of the same backend)."""
    names = list(names)
    kind, _, argument = spec.partition(":")
    if kind == "all" and not argument:
        return list(combinations(range(len(names)), 2)), f"every pair of the {len(names)} runs"
    if kind == "against" and argument in names:
        b = names.index(argument)
        return [(b, a) for a in range(len(names)) if a != b], f"{argument} against each of the other {len(names) - 1} runs"
    if kind == "pairs" and argument:
        pairs = []
        for pair in argument.split(","):
            a, sep, b = pair.strip().partition("~")
            if not sep or a not in names or b not in names or a == b:
                raise ScoringError(f"--family: '{pair.strip()}' is not two runs of the report joined by ~ (A~B)")
            pairs.append((names.index(a), names.index(b)))
        return pairs, f"the {len(pairs)} listed pairs"
    if kind == "floors" and argument:
        pairs = []
        for i, name in enumerate(names):
            system, _, configuration = name.partition(":")
            floor = f"{argument}:{configuration}" if configuration else argument
            if system != argument and floor in names:
                pairs.append((names.index(floor), i))
        if not pairs:
            raise ScoringError(f"--family: no run has a {argument} run of its own configuration to be tested against")
        return pairs, f"each run against its own configuration's {argument} run ({len(pairs)} pairs)"
    raise ScoringError(f"--family: '{spec}' is not one of {FAMILY_SPECS} (with a run of the report)")


def mcnemar_family(
    *, entries: Sequence[KeyItem], runs: Mapping[str, Mapping[str, Prediction]], classes: Sequence[str] = MCNEMAR_CLASSES
) -> dict:
    """Exact McNemar for every pair of runs (in the mapping's order: `a` is the earlier) on each class,
    Holm-adjusted over the whole family (plain reference path). b_count = a right and b wrong."""
    names = list(runs)
    for predictions in runs.values():
        check_run(entries, predictions)
    tests = []
    for a, b in combinations(names, 2):
        for gold in classes:
            b_count = c_count = 0
            for item in entries:
                if item.gold == gold:
                    right_a = is_correct(item, runs[a][item.item_id])
                    right_b = is_correct(item, runs[b][item.item_id])
                    b_count += right_a and not right_b
                    c_count += right_b and not right_a
            tests.append({"a": a, "b": b, "class": gold, "b_count": b_count, "c_count": c_count,
                          "p": statistics.mcnemar_exact(b_count, c_count)})
    for test, adjusted in zip(tests, statistics.holm_adjust([t["p"] for t in tests]), strict=True):
        test["p_holm"], test["family_size"] = adjusted, len(tests)
    return {"tests": tests, "family": _family_section(names, classes, len(tests))}


# ---------------------------------------------------------------------------------------------
# Many runs at once (the batch path: same numbers, numpy)


@dataclass(frozen=True, slots=True)
class RunColumns:
    """One run as columns over the key's items, built by KeyColumns.place (stored rows) or
    KeyColumns.place_mapping (Prediction records): no per-item object is needed to score it.

    `aligned[j]` is the verdict on the key's j-th entry; the per-item citation fields are sequences in
    the run's own row order, `row[j]` being the row of the key's j-th entry. The rules read them only
    on caught items, so a sequence may decode its values on access (the stored path keeps the cited
    ids as JSON text until then)."""

    aligned: np.ndarray  # bool, one per key entry
    row: np.ndarray  # int, key entry -> row in the sequences below
    evidence: Sequence  # tuple of cited ids, best first, or None (released results format)
    attributed: Sequence  # bool or None: read only when evidence is None
    cited_fact_only: Sequence  # bool or None: read only when evidence is None
    ignored: int = 0  # predictions for items outside the key (a later version dropped them)
    # Turns the evidence values read at caught items into cited-id sequences or None, all at once (the
    # stored path keeps them as JSON texts and decodes the few it needs in one call).
    decode: Callable[[list], list] | None = None


class _Field:
    """One attribute of a list of Predictions, read on access (only caught items are ever read)."""

    __slots__ = ("rows", "name")

    def __init__(self, rows: list[Prediction], name: str):
        self.rows, self.name = rows, name

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, j: int):
        return getattr(self.rows[j], self.name)


class KeyColumns:
    """The key as arrays: gold class per item, conversation index per class, strata masks, and each item
    id's column (built once per key, then used to place every run's rows)."""

    def __init__(self, entries: Sequence[KeyItem]):
        check_key(entries)
        self.entries = list(entries)
        self.ids = [item.item_id for item in self.entries]
        self.position = {item_id: j for j, item_id in enumerate(self.ids)}
        self._last_ids: tuple[list[str], np.ndarray] | None = None  # the last run's row ids, placed
        gold = np.array([GOLD_TYPES.index(item.gold) for item in self.entries], dtype=np.int8)
        self.masks = {g: gold == i for i, g in enumerate(GOLD_TYPES)}
        self.gold_aligned = gold != GOLD_TYPES.index(CONTRADICTING)
        self.clusters: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for g, mask in self.masks.items():
            conversations = [self.entries[j].conversation for j in np.flatnonzero(mask)]
            names = sorted(set(conversations))
            position = {c: i for i, c in enumerate(names)}
            index = np.array([position[c] for c in conversations], dtype=np.int64)
            self.clusters[g] = (index, np.bincount(index, minlength=len(names)))
        history = [item.history_turns for item in self.entries]
        self.strata = {
            SHORT: np.array([h is not None and h <= HISTORY_SPLIT for h in history], dtype=bool),
            LONG: np.array([h is not None and h > HISTORY_SPLIT for h in history], dtype=bool),
        }

    def place(self, *, item_ids: Sequence[str], aligned, evidence: Sequence, attributed: Sequence,
              cited_fact_only: Sequence, decode: Callable[[list], list] | None = None) -> RunColumns:
        """One run's rows, in any order (the i-th value of each argument is the i-th row), placed on the
        key's columns. Rows for items outside the key are counted and ignored; a key item without a row is
        refused as check_run refuses it, and so is an item with two rows."""
        n = len(self.ids)
        if self._last_ids is not None and self._last_ids[0] == item_ids:
            # Runs written in the same row order (every bulk import of one file layout) share their
            # columns: comparing two id lists costs far less than hashing every id again.
            where = self._last_ids[1]
        else:
            where = np.fromiter(map(self.position.get, item_ids, repeat(-1)), np.int64, len(item_ids))
            self._last_ids = (list(item_ids), where)
        inside = np.flatnonzero(where >= 0)
        columns = where[inside]
        covered = np.bincount(columns, minlength=n)
        if (covered == 0).any():
            raise _missing_error([self.ids[j] for j in np.flatnonzero(covered == 0).tolist()])
        if (covered > 1).any():
            twice = [self.ids[j] for j in np.flatnonzero(covered > 1).tolist()]
            raise ScoringError(f"{len(twice)} key item(s) have more than one prediction: {', '.join(twice[:10])}")
        row = np.empty(n, np.int64)
        row[columns] = inside
        verdicts = np.asarray(aligned, dtype=bool) if len(item_ids) else np.zeros(0, bool)
        return RunColumns(aligned=verdicts[row], row=row, evidence=evidence, attributed=attributed,
                          cited_fact_only=cited_fact_only, ignored=len(item_ids) - n, decode=decode)

    def place_mapping(self, predictions: Mapping[str, Prediction]) -> RunColumns:
        """A run given as {item id: Prediction} (the parsers' output, the tests' runs), placed on the key's
        columns without copying a field of every item."""
        try:
            rows = list(map(predictions.__getitem__, self.ids))
        except KeyError:
            check_run(self.entries, predictions)
            raise
        return RunColumns(
            aligned=np.fromiter(map(attrgetter("aligned"), rows), bool, len(rows)),
            row=np.arange(len(rows)),
            evidence=_Field(rows, "evidence"),
            attributed=_Field(rows, "attributed"),
            cited_fact_only=_Field(rows, "cited_fact_only"),
            ignored=len(predictions) - len(rows),  # key ids are unique, and every one has a prediction
        )

    def as_columns(self, run: "Mapping[str, Prediction] | RunColumns") -> RunColumns:
        return run if isinstance(run, RunColumns) else self.place_mapping(run)


def _outcomes(columns: KeyColumns, runs: Sequence[RunColumns]) -> tuple[np.ndarray, ...]:
    """(runs × items) boolean arrays: correct, caught, attributed, fact-only. The verdicts are compared
    as arrays; on caught items only, is_fact_only and is_attributed are applied inline as list
    comprehensions (the same rules, without re-deriving is_caught three times per item: 10^6 caught
    items in the benchmark)."""
    shape = (len(runs), len(columns.ids))
    correct, caught = np.zeros(shape, bool), np.zeros(shape, bool)
    attributed, fact_only = np.zeros(shape, bool), np.zeros(shape, bool)
    contradicting = columns.masks[CONTRADICTING]
    gold = [item.evidence for item in columns.entries]
    turn = TURN_ID.fullmatch
    budget = ATTRIBUTION_BUDGET
    for r, run in enumerate(runs):
        correct[r] = run.aligned == columns.gold_aligned
        caught[r] = contradicting & ~run.aligned
        index = np.flatnonzero(caught[r])
        rows = run.row[index].tolist()
        cited = [run.evidence[i] for i in rows]
        if run.decode is not None:
            cited = run.decode(cited)
        facts = [
            bool(run.cited_fact_only[i]) if e is None else (bool(e) and not any(map(turn, e)))
            for i, e in zip(rows, cited, strict=True)
        ]
        grounded = [
            bool(run.attributed[i]) if e is None else any(map(gold[j].__contains__, e[:budget]))
            for i, j, e in zip(rows, index.tolist(), cited, strict=True)
        ]
        fact_only[r, index] = facts
        attributed[r, index] = np.array(grounded, dtype=bool) & ~np.array(facts, dtype=bool)
    return correct, caught, attributed, fact_only


def _figures_many(columns: KeyColumns, outcomes: tuple[np.ndarray, ...], within: np.ndarray | None) -> list[dict]:
    correct, caught, attributed, fact_only = outcomes
    masks = {g: (m if within is None else m & within) for g, m in columns.masks.items()}
    right = {g: correct[:, m].sum(axis=1) for g, m in masks.items()}
    total = {g: int(m.sum()) for g, m in masks.items()}
    keep = np.ones(correct.shape[1], bool) if within is None else within
    n_caught, n_attr, n_fact = (x[:, keep].sum(axis=1) for x in (caught, attributed, fact_only))
    return [
        _figures_from_counts({g: int(right[g][r]) for g in GOLD_TYPES}, total, int(n_caught[r]), int(n_attr[r]), int(n_fact[r]))
        for r in range(correct.shape[0])
    ]


def _mcnemar_many(columns: KeyColumns, correct: np.ndarray, names: list[str], classes: Sequence[str],
                  spec: str = "all") -> dict:
    counts = {}
    for gold in classes:
        x = correct[:, columns.masks[gold]].astype(float)
        # [a, b] = items a got right and b wrong = a's right items minus those both got right (x·xᵀ is
        # one symmetric BLAS product; every value is an exact integer in float64).
        counts[gold] = x.sum(axis=1)[:, None] - x @ x.T
    tests = []
    pairs, description = family_pairs(names, spec)
    for a, b in pairs:
        for gold in classes:
            tests.append({"a": names[a], "b": names[b], "class": gold,
                          "b_count": int(counts[gold][a, b]), "c_count": int(counts[gold][b, a])})
    p = statistics.mcnemar_exact_many(np.array([t["b_count"] for t in tests], dtype=np.int64),
                                      np.array([t["c_count"] for t in tests], dtype=np.int64))
    for test, raw, adjusted in zip(tests, p.tolist(), statistics.holm_adjust(p.tolist()), strict=True):
        test["p"], test["p_holm"], test["family_size"] = raw, adjusted, len(tests)
    return {"tests": tests, "family": _family_section(names, classes, len(tests), spec=spec, description=description,
                                                      pairs=len(pairs))}


def score_report(
    *,
    key_version: str,
    key_sha256: str,
    entries: Sequence[KeyItem],
    runs: Mapping[str, Mapping[str, Prediction] | RunColumns],
    columns: KeyColumns | None = None,
    family: Sequence[str] | None = None,
    family_spec: str = "all",
    classes: Sequence[str] = MCNEMAR_CLASSES,
    replicates: int = statistics.BOOTSTRAP_REPLICATES,
    seed: int = statistics.BOOTSTRAP_SEED,
    bootstrap: bool = True,
) -> dict:
    """Every run's figures (as run_score) and the McNemar family (as mcnemar_family) against one key,
    which the report cites by version and SHA-256. `family` names the runs whose pairs form the Holm
    family (default: all, in the mapping's order), `family_spec` which of their pairs (family_pairs) and
    `classes` on which gold classes; the report states the family and its size beside every adjusted p.

    A run is either {item id: Prediction} or RunColumns placed on `columns` (the KeyColumns of
    `entries`, built here when not given): both are scored by the same rules, to the same report."""
    columns = KeyColumns(entries) if columns is None else columns
    placed = [columns.as_columns(run) for run in runs.values()]
    outcomes = _outcomes(columns, placed)
    ignored = [run.ignored for run in placed]
    results = _figures_many(columns, outcomes, None)
    strata = {name: _figures_many(columns, outcomes, mask) for name, mask in columns.strata.items()}
    if bootstrap and runs:  # no run, no interval (and numpy has nothing to stack)
        shared: dict[int, np.ndarray] = {}  # the draws depend only on the number of conversations
        for metric, gold in CLASS_METRICS.items():
            index, sizes = columns.clusters[gold]
            if not sizes.size:
                for figure in results:
                    figure[metric]["bootstrap"] = [0.0, 0.0]
                continue
            correct = outcomes[0][:, columns.masks[gold]]
            hits = np.stack([np.bincount(index, weights=row, minlength=sizes.size) for row in correct])
            if sizes.size not in shared:
                draws = statistics.bootstrap_draws(sizes.size, replicates=replicates, seed=seed)
                shared[sizes.size] = statistics.draw_counts(draws, sizes.size)
            intervals = statistics.cluster_bootstrap_many(sizes, hits, replicates=replicates, counts=shared[sizes.size])
            for figure, (low, high) in zip(results, intervals.tolist(), strict=True):
                figure[metric]["bootstrap"] = [low, high]
    names = list(runs)
    report_runs = {}
    for r, name in enumerate(names):
        figure = results[r]
        if bootstrap:
            figure["bootstrap"] = _bootstrap_section(replicates, seed)
        figure["strata"] = {stratum: rows[r] for stratum, rows in strata.items()}
        figure["ignored_predictions"] = ignored[r]
        report_runs[name] = figure
    family_names = list(family) if family is not None else names
    unknown = [n for n in family_names if n not in runs]
    if unknown:
        raise ScoringError(f"the McNemar family names runs that are not in the report: {', '.join(unknown)}")
    rows = [names.index(n) for n in family_names]
    mcnemar = _mcnemar_many(columns, outcomes[0][rows], family_names, classes, family_spec)
    return {
        "key": {"version": key_version, "sha256": key_sha256},
        "runs": report_runs,
        "mcnemar": mcnemar["tests"],
        "family": mcnemar["family"],
        "family_size": mcnemar["family"]["size"],
    }


# ---------------------------------------------------------------------------------------------
# Several ingests of one system


SCORE_LEVEL_METRICS = ("CR", "AS", "HNS", "Attr", "GCR")


def multi_ingest(
    *,
    entries: Sequence[KeyItem],
    ingests: Sequence[Mapping[str, Prediction] | RunColumns],
    score_level: Sequence[Mapping[str, float]] = (),
    columns: KeyColumns | None = None,
    replicates: int = statistics.BOOTSTRAP_REPLICATES,
    seed: int = statistics.HIERARCHICAL_SEED,
) -> dict:
    """One point per ingest (per-item ingests first, then score-level-only ones, whose values come as
    {"CR": 0.42, ...}), their mean and range, and for CR, AS and HNS the conversation × ingest
    hierarchical bootstrap over the per-item ingests (score-level ingests have no items to resample).
    An ingest is given as score_report takes a run."""
    columns = KeyColumns(entries) if columns is None else columns
    outcomes = _outcomes(columns, [columns.as_columns(run) for run in ingests])
    per_item = _figures_many(columns, outcomes, None)
    result: dict = {"ingests": {"per_item": len(ingests), "score_level": len(score_level)},
                    "bootstrap": {"replicates": replicates, "seed": seed, "kind": "conversation x ingest"}}
    for metric in SCORE_LEVEL_METRICS:
        points = [f[metric]["value"] for f in per_item] + [float(s[metric]) for s in score_level if metric in s]
        section = {"points": points, "mean": sum(points) / len(points) if points else 0.0,
                   "range": [min(points), max(points)] if points else [0.0, 0.0]}
        if metric in CLASS_METRICS and ingests:
            mask = columns.masks[CLASS_METRICS[metric]]
            conversations = [columns.entries[j].conversation for j in np.flatnonzero(mask).tolist()]
            clusters = []
            for correct in outcomes[0][:, mask].tolist():
                by_conversation: dict[str, list[int]] = {}
                for conversation, right in zip(conversations, correct, strict=True):
                    by_conversation.setdefault(conversation, []).append(int(right))
                clusters.append(by_conversation)
            section["hierarchical"] = list(statistics.hierarchical_bootstrap(clusters, replicates=replicates, seed=seed))
        result[metric] = section
    return result
