"""Writes for scores against a key: importing a system's runs (score_import) and score-level-only
ingests (score_level_import). Every path (command, and whatever page or API is added later) calls these.

An import is all-or-nothing: the file is read in full and checked against the key it cites (every key
item predicted once, no unknown item, every field well-typed) before the first row is written, and a
key whose recorded hash no longer matches its entries is refused, so a score never cites bytes that
are not what the key holds.
"""

import hashlib
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from goldkey.errors import ApplicationError
from goldkey.lib.bulk import bulk_insert
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import GoldKey
from scoring import parsing
from scoring.metrics import Prediction
from scoring.models import RunPrediction, ScoreLevelIngest, SystemRun, run_base_name
from scoring.selectors import dropped_items, scorable_items

PREDICTIONS, RESULTS, SCORES = "predictions", "results", "scores"
FORMATS = (PREDICTIONS, RESULTS, SCORES)  # SCORES: score-level-only ingests, imported by score_level_import


def _scorable_key(version: str) -> GoldKey:
    key = key_selectors.key_get(version)
    if not key.is_frozen:
        raise ApplicationError(f"key '{version}' is a draft: runs are scored against frozen keys only")
    check = key_services.key_verify(version=version)
    if not check["ok"]:
        drift = "; ".join(check.get("drift") or []) or f"recorded sha256 {check['recorded'] or '-'}, computed {check['computed']}"
        raise ApplicationError(f"key '{version}' does not verify ({drift}); no run is scored against it")
    return key


def _checked(version: str, path: Path, ingest: int) -> tuple[GoldKey, Path]:
    if ingest < 1:
        raise ApplicationError(f"--ingest: must be 1 or more, got {ingest}")
    path = Path(path)
    if not path.is_file():
        raise ApplicationError(f"{path}: no such file")
    return _scorable_key(version), path


_split = parsing.split_run_name


def _prediction_row(run_id: int, item_id: str, p: Prediction) -> dict:
    return {
        "run_id": run_id,
        "item_external_id": item_id,
        "aligned": p.aligned,
        "evidence": None if p.evidence is None else list(p.evidence),
        "attributed": p.attributed,
        "cited_fact_only": p.cited_fact_only,
    }


def _refuse_taken(key: GoldKey, ingest: int, names: set[tuple[str, str]]) -> None:
    """Runs and score-level ingests are records of what a system said against these bytes: never
    replaced, and one ingest of a system is either per-item or score-level, not both."""
    taken = set()
    for model in (SystemRun, ScoreLevelIngest):
        taken |= set(model.objects.filter(key=key, ingest=ingest).values_list("system", "configuration")) & names
    if taken:
        listed = ", ".join(run_base_name(s, c) for s, c in sorted(taken))
        raise ApplicationError(
            f"{key.version} already has ingest {ingest} of {listed}; import it as another ingest (--ingest) instead"
        )


@transaction.atomic
def score_import(
    *,
    version: str,
    path: Path,
    fmt: str = PREDICTIONS,
    system: str = "",
    configuration: str = "",
    ingest: int = 1,
    metadata: dict | None = None,
    produced_by: str = SystemRun.ProducedBy.UNSTATED,
    user=None,
) -> list[SystemRun]:
    """Import a system's run (predictions JSONL) or the released per-item results (one run per
    configuration in the file; with `system`, only that system's configurations) against a frozen key
    version. Returns the runs created, in file order. Raises ImportFailed listing every FILE:LINE problem,
    or ApplicationError; nothing is written then."""
    if fmt not in (PREDICTIONS, RESULTS):
        hint = " (score-level ingests: score_level_import)" if fmt == SCORES else ""
        raise ApplicationError(f"--format: '{fmt}' is not one of {PREDICTIONS}, {RESULTS}{hint}")
    if produced_by not in SystemRun.ProducedBy.values:
        raise ApplicationError(f"--produced-by: '{produced_by}' is not one of {', '.join(SystemRun.ProducedBy.values)}")
    key, path = _checked(version, path, ingest)
    data = path.read_bytes()
    by_id = {item.item_id: item for item in scorable_items(key)}
    outside = dropped_items(key)
    if fmt == PREDICTIONS:
        if not system:
            raise ApplicationError("--system: required for a predictions file (the name the run is reported under)")
        if not configuration:
            system, configuration = _split(system)  # "flatrag:openai" names the same run either way
        if problem := parsing.run_name_problem(f"{system}:{configuration}"):
            raise ApplicationError(f"--system: {problem}")
        parsed = {(system, configuration): parsing.predictions_parse(path=path, key=by_id, outside=outside)}
    else:
        configurations = parsing.results_parse(path=path, key=by_id, outside=outside)
        parsed = {_split(name): predictions for name, predictions in configurations.items()}
        if system:
            parsed = {name: p for name, p in parsed.items() if name[0] == system}
            if not parsed:
                raise ApplicationError(
                    f"{path.name}: no configuration of system '{system}' (the file holds "
                    f"{', '.join(sorted(configurations))})"
                )
    _refuse_taken(key, ingest, set(parsed))
    digest = hashlib.sha256(data).hexdigest()
    now = timezone.now()
    runs = []
    for (run_system, run_configuration), predictions in parsed.items():
        run = SystemRun.objects.create(
            key=key, system=run_system, configuration=run_configuration, ingest=ingest, metadata=metadata or {},
            produced_by=produced_by, source_name=path.name, source_sha256=digest, imported_by=user, imported_at=now,
        )
        bulk_insert(RunPrediction, (_prediction_row(run.pk, item_id, p) for item_id, p in predictions.items()))
        runs.append(run)
    return runs


@transaction.atomic
def score_level_import(
    *,
    version: str,
    path: Path,
    system: str = "",
    ingest: int = 1,
    metadata: dict | None = None,
    user=None,
) -> list[ScoreLevelIngest]:
    """Import a score-level-only results file (per system, the figures of one ingest whose per-item
    outputs were lost) against a frozen key version: one ScoreLevelIngest per system in the file (with
    `system`, only that system's configurations), in file order. All or nothing, refused as score_import
    refuses: ImportFailed listing every FILE:LINE problem, or ApplicationError."""
    key, path = _checked(version, path, ingest)
    scorable_items(key)  # the figures are Track B's: a key with other gold cannot carry them
    data = path.read_bytes()
    read = parsing.score_level_read(path=path)
    parsed = {_split(name): scores for name, scores in read.scores.items()}
    if system:
        parsed = {name: scores for name, scores in parsed.items() if name[0] == system}
        if not parsed:
            raise ApplicationError(
                f"{path.name}: no configuration of system '{system}' (the file holds {', '.join(sorted(read.scores))})"
            )
    _refuse_taken(key, ingest, set(parsed))
    digest = hashlib.sha256(data).hexdigest()
    now = timezone.now()
    return [
        ScoreLevelIngest.objects.create(
            key=key, system=run_system, configuration=run_configuration, ingest=ingest, scores=scores,
            note=read.note, metadata=metadata or {}, source_name=path.name, source_sha256=digest,
            imported_by=user, imported_at=now,
        )
        for (run_system, run_configuration), scores in parsed.items()
    ]
