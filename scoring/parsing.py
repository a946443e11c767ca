"""Reading system runs: the predictions JSONL and the released per-item results JSON, and the released
score-level-only ingests. Pure.

Both readers check the file against the key it will be scored on and report every problem as
``FILE:LINE: field …`` (the shared import error log, goldkey.lib.jsonio): an item the key does not hold, a
key item without a prediction (Track B has no abstention), a duplicate, a field of the wrong type. On
any problem they raise ImportFailed and return nothing, so a half-read run can never be scored.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    JsonDocument,
    column_length,
    json_line,
    read_json_document,
    read_jsonl,
    text_too_long,
)
from scoring.metrics import CONTRADICTING, KeyItem, Prediction
from scoring.models import ScoreLevelIngest, SystemRun

__all__ = [
    "ImportFailed", "ScoreLevelFile", "predictions_parse", "results_parse", "run_name_problem", "score_level_parse",
    "score_level_read", "split_run_name",
]

NO_ABSTENTION = "(Track B has no abstention: every key item needs a prediction)"


def split_run_name(name: str) -> tuple[str, str]:
    """The released results name configurations "condition:backend" ("flatrag:openai"); a name without a
    colon is a system with one configuration ("mindtwin")."""
    system, _, configuration = name.partition(":")
    return system, configuration


def run_name_problem(name: str, model=SystemRun) -> str | None:
    """Why a run's name ("system:configuration") does not fit the columns of `model` (its system and its
    configuration, each held to its own length), or None."""
    for part, value in zip(("system", "configuration"), split_run_name(name), strict=True):
        if problem := text_too_long(value, column_length(model, part)):
            return f"the name's {part}: {problem}"
    return None


def _missing(key: Mapping[str, KeyItem], seen: set[str], where: str, log: ErrorLog, within: str = "") -> None:
    for item_id in key:
        if item_id not in seen:
            log.add(where, f"item_id: no prediction for key item '{item_id}'{within} {NO_ABSTENTION}")


def _evidence(value, where: str, log: ErrorLog) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        log.add(where, f"evidence: must be a list of cited ids (best first), got {type(value).__name__}")
        return None
    bad = [i for i, e in enumerate(value) if not isinstance(e, str) or not e.strip()]
    if bad:
        log.add(where, f"evidence[{bad[0]}]: every cited id must be a non-empty string, got {value[bad[0]]!r}")
        return None
    return tuple(value)


def predictions_parse(*, path: Path, key: Mapping[str, KeyItem], outside: Mapping[str, KeyItem] | None = None) -> dict[str, Prediction]:
    """One line per item: {"item_id": str, "aligned": bool, "evidence": [cited ids, best first]}
    (aligned false = flagged as contradicting). Other fields are ignored. `outside`: items an earlier
    version of the key held and this one dropped; a run may predict them (it is scored on the key's
    items only), but every key item still needs its prediction."""
    known = {**(outside or {}), **key}
    log = ErrorLog()
    predictions: dict[str, Prediction] = {}
    first_line: dict[str, int] = {}
    last = 0
    for number, record in read_jsonl(path, log):
        last = number
        where = f"{path.name}:{number}"
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            log.add(where, "item_id: missing" if "item_id" not in record else f"item_id: must be a non-empty string, got {item_id!r}")
            continue
        if item_id not in known:
            log.add(where, f"item_id: unknown item '{item_id}' (not in the key)")
            continue
        if item_id in first_line:
            log.add(where, f"item_id: duplicate prediction for '{item_id}' (first on line {first_line[item_id]})")
            continue
        first_line[item_id] = number
        aligned = record.get("aligned")
        if not isinstance(aligned, bool):
            log.add(where, "aligned: missing" if "aligned" not in record else f"aligned: must be true or false, got {aligned!r}")
            continue
        if "evidence" not in record:
            log.add(where, "evidence: missing (use [] when nothing is cited)")
            continue
        evidence = _evidence(record["evidence"], where, log)
        if evidence is None:
            continue
        predictions[item_id] = Prediction(aligned=aligned, evidence=evidence)
    # A missing item has no line of its own: it is reported at the end of the file.
    _missing(key, set(first_line), f"{path.name}:{max(last, 1)}", log)
    log.raise_if_any()
    return predictions


def _where(doc: JsonDocument, *path) -> str:
    """FILE:LINE of the value at `path` inside `doc` (the line of the field itself, when it exists)."""
    return f"{doc.name}:{json_line(doc.text, doc.prefix + path)}"


def _results_item(record, doc: JsonDocument, index: int, key: Mapping[str, KeyItem], log: ErrorLog) -> tuple[str, Prediction] | None:
    def at(field: str) -> str:
        return f"{_where(doc, index, field)}: {field}"

    if not isinstance(record, dict):
        log.add(_where(doc, index), f"expected an item object, got {type(record).__name__}")
        return None
    item_id = record.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        log.add(at("item_id"), "missing" if "item_id" not in record else f"must be a non-empty string, got {item_id!r}")
        return None
    if item_id not in key:
        log.add(at("item_id"), f"unknown item '{item_id}' (not in the key)")
        return None
    ok = True
    pred_aligned = record.get("pred_aligned")
    if not isinstance(pred_aligned, bool):
        log.add(at("pred_aligned"), "missing" if "pred_aligned" not in record else f"must be true or false, got {pred_aligned!r}")
        ok = False
    attributed = record.get("attributed")
    if attributed is not None and not isinstance(attributed, bool):
        log.add(at("attributed"), f"must be true, false or null, got {attributed!r}")
        ok = False
    fact_only = record.get("cited_fact_only", False)
    if not isinstance(fact_only, bool):
        log.add(at("cited_fact_only"), f"must be true or false, got {fact_only!r}")
        ok = False
    conversation = record.get("conv")
    if conversation is not None and conversation != key[item_id].conversation:
        log.add(at("conv"), f"'{conversation}' but the key's item '{item_id}' is in '{key[item_id].conversation}'")
        ok = False
    if ok and key[item_id].gold == CONTRADICTING and not pred_aligned and attributed is None and not fact_only:
        # A caught contradiction's attribution cannot be recomputed from this format (no citations).
        log.add(at("attributed"), f"null on '{item_id}', a flagged contradicting item: true or false needed to score Attr")
        ok = False
    if not ok:
        return None
    return item_id, Prediction(aligned=pred_aligned, attributed=attributed, cited_fact_only=fact_only)


def results_parse(*, path: Path, key: Mapping[str, KeyItem], outside: Mapping[str, KeyItem] | None = None) -> dict[str, dict[str, Prediction]]:
    """The released results format: {"results": {configuration: [{"item_id", "pred_aligned",
    "attributed", "cited_fact_only", "conv"?, …}, …]}, "scores"?: …}. Returns the configurations in file
    order. The stored `scores`, `verdict_correct` and `gold_aligned` are never read: every figure is
    recomputed from the predictions and the key. `outside` as predictions_parse takes it."""
    known = {**(outside or {}), **key}
    doc, data = read_json_document(path)
    log = ErrorLog()
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        log.add(_where(doc), "results: missing (expected an object mapping each configuration to its per-item list)")
        log.raise_if_any()
    runs: dict[str, dict[str, Prediction]] = {}
    for name, rows in data["results"].items():
        inside = doc.inside("results", name)
        if problem := run_name_problem(name):
            log.add(f"{_where(inside)}: results", problem)
            continue
        if not isinstance(rows, list):
            log.add(f"{_where(inside)}: results.{name}", f"expected a list of items, got {type(rows).__name__}")
            continue
        predictions: dict[str, Prediction] = {}
        seen: dict[str, int] = {}
        for index, record in enumerate(rows):
            if log.full:
                break  # each message rescans the text for its line: stop when no more will be shown
            item_id = record.get("item_id") if isinstance(record, dict) else None
            if isinstance(item_id, str) and item_id in seen:
                first = _where(inside, seen[item_id], "item_id").rsplit(":", 1)[1]
                log.add(f"{_where(inside, index, 'item_id')}: item_id",
                        f"duplicate prediction for '{item_id}' in '{name}' (first on line {first})")
                continue
            if isinstance(item_id, str) and item_id in known:
                seen[item_id] = index
            parsed = _results_item(record, inside, index, known, log)
            if parsed is not None:
                predictions[parsed[0]] = parsed[1]
        _missing(key, set(seen), _where(inside), log, within=f" in '{name}'")
        runs[name] = predictions
    if not data["results"]:
        log.add(_where(doc, "results"), "results: no configurations")
    log.raise_if_any()
    return runs


SCORE_LEVEL_NAMES = {"contradicting_acc": "CR", "aligned_acc": "AS", "hard_negative_acc": "HNS", "attribution_acc": "Attr"}


@dataclass(frozen=True)
class ScoreLevelFile:
    note: str  # the file's own note ("" when it has none)
    scores: dict[str, dict[str, float]]  # per system name, its points under the report's metric names


def score_level_read(*, path: Path) -> ScoreLevelFile:
    """A score-level-only ingest ({"note"?: str, "scores": {system: {"contradicting_acc", "aligned_acc",
    "hard_negative_acc", "attribution_acc"}}}, as released when the per-item outputs were lost). Other
    fields of a system's scores are ignored; a system with none of these four is refused."""
    doc, data = read_json_document(path)
    log = ErrorLog()
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, dict):
        log.add(_where(doc), "scores: missing (expected an object per system)")
        log.raise_if_any()
    note = data.get("note", "")
    if not isinstance(note, str):
        log.add(f"{_where(doc, 'note')}: note", f"must be a string, got {type(note).__name__}")
    if not scores:
        log.add(f"{_where(doc, 'scores')}: scores", "no systems")
    out: dict[str, dict[str, float]] = {}
    for system, values in scores.items():
        if not isinstance(values, dict):
            log.add(_where(doc, "scores", system), f"scores.{system}: expected an object of scores, got {type(values).__name__}")
            continue
        if not system.strip():
            log.add(_where(doc, "scores", system), "scores: a system name must be a non-empty string")
            continue
        if problem := run_name_problem(system, ScoreLevelIngest):
            log.add(f"{_where(doc, 'scores', system)}: scores", problem)
            continue
        points = {}
        for name, metric in SCORE_LEVEL_NAMES.items():
            if name not in values:
                continue
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                log.add(_where(doc, "scores", system, name), f"scores.{system}.{name}: must be a number in [0, 1], got {value!r}")
                continue
            points[metric] = float(value)
        if not any(name in values for name in SCORE_LEVEL_NAMES):
            log.add(_where(doc, "scores", system),
                    f"scores.{system}: none of {', '.join(SCORE_LEVEL_NAMES)} (nothing to report for this ingest)")
        out[system] = points
    log.raise_if_any()
    return ScoreLevelFile(note=note, scores=out)


def score_level_parse(*, path: Path) -> dict[str, dict[str, float]]:
    """score_level_read's points per system."""
    return score_level_read(path=path).scores
