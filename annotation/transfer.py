"""Answer files in the released formats, as each protocol's spec declares them (`AnswerFile`): a JSON
answer document (TWIST) or JSONL records (Lapse). Import is validated in full before anything is
written, and all-or-nothing."""

import json
from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction
from django.utils import timezone

import protocols
from annotation.models import Answer, Assignment, Campaign, Enrollment
from annotation.services import (
    answer_save,
    enrollment_close_phase1,
    enrollment_submit,
    phase1_finish,
    phase1_missing,
)
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import ErrorLog, ImportFailed, json_key_lines, read_json_document, read_jsonl
from protocols.base import AnswerFile


def _enrollment(campaign: Campaign, annotator: str) -> Enrollment:
    """An enrollment by pseudonym ('A') or by username."""
    enrollment = (
        Enrollment.objects.filter(campaign=campaign, pseudonym=annotator).select_related("annotator").first()
        or Enrollment.objects.filter(campaign=campaign, annotator__username=annotator).select_related("annotator").first()
    )
    if enrollment is None:
        names = ", ".join(Enrollment.objects.filter(campaign=campaign).values_list("pseudonym", flat=True))
        raise ApplicationError(f"'{annotator}' is not an annotator of campaign '{campaign.slug}' (annotators: {names})")
    return enrollment


def _parse_document(path: Path, log: ErrorLog) -> dict[str, tuple[int, dict]]:
    """{item_id: (line, values)} of a {"annotator", "exported", "answers": {item_id: {...}}} document: the
    line where the item's answer starts, for error messages."""
    doc, data = read_json_document(path)
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
        raise ImportFailed([f"{path.name}:1: expected {{\"annotator\", \"exported\", \"answers\": {{item_id: {{...}}}}}}"])
    lines = json_key_lines(doc.text, ("answers",))
    answers = {}
    for item_id, values in data["answers"].items():
        if not isinstance(values, dict):
            log.add(f"{path.name}:{lines.get(item_id, 1)}: {item_id}", "an answer must be an object of question keys")
            continue
        answers[item_id] = (lines.get(item_id), values)
    return answers


def _parse_ts(value) -> datetime | None:
    """The record's ISO-8601 time, or None when absent or not a time (then kept verbatim in `extra`)."""
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _format_ts(value: datetime | None) -> str:
    """The released files' form: 2026-08-13T18:51:31.832Z (UTC, milliseconds)."""
    if value is None:
        return ""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _parse_records(path: Path, log: ErrorLog, fmt: AnswerFile) -> dict[str, tuple]:
    """One JSON record per line: the item id field, the answer fields, annotator, ts, and anything
    else (kept verbatim in `extra`)."""
    answers: dict[str, tuple] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        gid = record.get(fmt.id_field)
        if not isinstance(gid, str) or not gid:
            log.add(where, f"missing field '{fmt.id_field}'")
            continue
        if gid in answers:
            log.add(where, f"duplicate answer for '{gid}'")
            continue
        missing = [key for key in fmt.required if not isinstance(record.get(key), str)]
        if missing:
            log.add(where, f"{gid}: missing field '{missing[0]}'")
            continue
        values = {key: record[key] for key in fmt.required}
        for key in fmt.fields:
            value = record.get(key, "")
            if key not in fmt.required and value:
                values[key] = value if isinstance(value, str) else json.dumps(value)
        extra = {k: v for k, v in record.items() if k not in fmt.record_keys}
        answered_at = _parse_ts(record.get("ts"))
        if answered_at is None and record.get("ts") not in (None, ""):
            extra["ts"] = record["ts"]  # not a time: kept as given, so the export gives it back
        meta = {"answered_at": answered_at, "extra": extra}
        answers[gid] = (line, values, meta)
    return answers


def answers_import(
    *, campaign: Campaign, path: Path, annotator: str, user=None, submit: bool = True, dry_run: bool = False,
    order_seed: int | None = None,
) -> dict:
    """Load one annotator's released answer file into the campaign, as that annotator's answers
    (in the protocol's answer-file format). See `answers_load` for the rules. The enrollment records
    that its order is not known (the file does not say what order its annotator saw), or `order_seed`,
    the seed of the tool that ordered the items, when the authors give it."""
    path = Path(path)
    enrollment = _enrollment(campaign, annotator)
    log = ErrorLog()
    fmt = protocols.get(campaign.protocol).answer_file
    if fmt.layout == "document":
        raw = {item_id: (line, values, {}) for item_id, (line, values) in _parse_document(path, log).items()}
    else:
        raw = _parse_records(path, log, fmt)
    return _load(enrollment, raw, log, path.name, user=user, submit=submit, dry_run=dry_run, order_seed=order_seed)


def answers_load(
    *, campaign: Campaign, annotator: str, answers: dict[str, dict], user=None, submit: bool = True,
    dry_run: bool = False,
) -> dict:
    """Load one annotator's answers given as {item_id: {question: value}} (the "answers" object of a
    TWIST answer file): the programmatic twin of `answers_import`, for scripts and test fixtures.

    Validated in full first (every error names the item and the field), then written all-or-nothing
    through `answer_save`, so the two-phase lock applies: every Phase 1 answer is written first, then
    Phase 1 is closed — a set of answers that carries Phase 2 answers is a finished, exported
    annotation, even where a verdict is missing (PROTOCOL's `missing_answers`) — then the Phase 2
    answers. With `submit` the enrollment is handed in as the answers leave it (an exported file is finished work)."""
    enrollment = _enrollment(campaign, annotator)
    raw = {item_id: (None, values, {}) for item_id, values in answers.items()}
    return _load(enrollment, raw, ErrorLog(), "answers", user=user, submit=submit, dry_run=dry_run)


def _load(enrollment: Enrollment, raw: dict, log: ErrorLog, source_name: str, *, user, submit: bool,
          dry_run: bool, order_seed: int | None = None) -> dict:
    campaign = enrollment.campaign
    assignments = {
        a.item.external_id: a
        for a in Assignment.objects.filter(enrollment=enrollment).select_related("item", "enrollment__campaign")
    }
    for item_id, (line, values, _) in raw.items():
        where = f"{source_name}:{line}" if line else f"{source_name}: {item_id}"
        assignment = assignments.get(item_id)
        if assignment is None:
            log.add(where, f"item '{item_id}' is not assigned to {enrollment.pseudonym} in campaign '{campaign.slug}'")
            continue
        spec = protocols.get(campaign.protocol)
        # A record is the item's whole answer: the rules across its questions are checked here too, so that
        # a file is refused before anything is written, naming the line.
        for problem in spec.validate_values(values, assignment.item.gold_label) or spec.answer_problems(values):
            log.add(where, f"{item_id}: {problem}")
    log.raise_if_any()
    created = changed = 0
    phases = protocols.get(campaign.protocol).phases
    with transaction.atomic():
        for phase in phases:
            parts = {
                item_id: {k: v for k, v in values.items() if protocols.get(campaign.protocol).phase_of(k) == phase}
                for item_id, (_, values, _) in raw.items()
            }
            if phase == 2 and any(v for part in parts.values() for v in part.values()):
                enrollment_close_phase1(enrollment=enrollment)
            for item_id, (_, _, meta) in raw.items():
                if not parts[item_id]:
                    continue
                result = answer_save(
                    assignment=assignments[item_id], values=parts[item_id], user=user, source="import", **meta
                )
                changed += result.changed
                created += result.answer.revision == 1 and result.changed
        enrollment.refresh_from_db()
        if not enrollment.phase1_completed_at and raw and not phase1_missing(enrollment):
            # A file that answers every verdict is a finished Phase 1: it ends as the annotator's own
            # "Finish Phase 1" would end it.
            enrollment = phase1_finish(enrollment=enrollment)
        if raw:
            Enrollment.objects.filter(pk=enrollment.pk).update(
                order_source=Enrollment.OrderSource.GIVEN if order_seed is not None else Enrollment.OrderSource.IMPORTED,
                imported_order_seed=order_seed,
            )
        submitted = False
        if submit and not enrollment.submitted_at and raw:
            # An exported answer file is finished work, handed in as it is: missing answers stay missing
            # (the queue's missing_answers reason), they are not left open for someone to fill in later.
            enrollment = enrollment_submit(enrollment=enrollment, as_imported=True)
            submitted = True
        if dry_run:
            # Everything above ran (validation, the phase lock, completion): now undo it.
            transaction.set_rollback(True)
    return {
        "dry_run": dry_run,
        "annotator": enrollment.pseudonym,
        "answers": len(raw),
        "changed": changed,
        "created": created,
        "phase1_complete": enrollment.phase1_completed_at is not None,
        "submitted": submitted or enrollment.submitted_at is not None,
    }


def answers_export_data(*, enrollment: Enrollment, by_position: bool = False) -> dict | list[dict]:
    """One annotator's answers in the released format: an answer document, or JSONL records.

    `by_position`: items named by their 1-based position in the annotator's work instead of their id
    (the annotator's own copy while their answers can still change: an id can name gold)."""
    answers = (
        Answer.objects.filter(assignment__enrollment=enrollment)
        .select_related("assignment__item")
        .order_by("assignment__position" if by_position else "assignment__item__external_id")
    )

    def name(a: Answer) -> str:
        return str(a.assignment.position + 1) if by_position else a.assignment.item.external_id

    fmt = protocols.get(enrollment.campaign.protocol).answer_file
    if fmt.layout == "document":
        document = {
            "annotator": enrollment.pseudonym,
            "exported": _format_ts(timezone.now()),
            "answers": {name(a): dict(a.values) for a in answers if a.values},
        }
        if by_position:
            document["keyed_by"] = "position"
        return document
    key = "position" if by_position else fmt.id_field
    return [
        {
            key: name(a),
            **{field: a.values.get(field, "") for field in fmt.fields},
            "annotator": enrollment.pseudonym,
            "ts": _format_ts(a.answered_at),
            **a.extra,
        }
        for a in answers
        if a.values
    ]


def answers_export_text(*, enrollment: Enrollment, by_position: bool = False) -> tuple[str, str]:
    """(file name, file text) of the export."""
    data = answers_export_data(enrollment=enrollment, by_position=by_position)
    fmt = protocols.get(enrollment.campaign.protocol).answer_file
    slug = f"{enrollment.campaign.slug}_by_position" if by_position else enrollment.campaign.slug
    name = f"{slug}_{fmt.stem}_{enrollment.pseudonym}{fmt.suffix}"
    if isinstance(data, dict):
        return name, json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    return name, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in data)


def answers_export(*, campaign: Campaign, annotator: str, out: Path) -> dict:
    enrollment = _enrollment(campaign, annotator)
    name, text = answers_export_text(enrollment=enrollment)
    out = Path(out)
    if out.is_dir():
        out = out / name
    out.write_text(text, encoding="utf-8")
    data = answers_export_data(enrollment=enrollment)
    count = len(data["answers"]) if isinstance(data, dict) else len(data)
    return {"annotator": enrollment.pseudonym, "answers": count, "path": str(out)}
