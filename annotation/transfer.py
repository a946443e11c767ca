"""Answer files in the released formats: TWIST answer JSON and Lapse annotation JSONL. Import is
validated in full before anything is written, and all-or-nothing."""

import json
from pathlib import Path

from django.db import transaction

from annotation.models import Assignment, Campaign, Enrollment, Protocol
from annotation.protocols import validate_values
from annotation.services import answer_save
from goldkey.errors import ApplicationError
from items.parsing import ErrorLog, ImportFailed, read_json, read_jsonl


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


def _parse_twist_answers(path: Path, log: ErrorLog) -> dict[str, dict]:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
        raise ImportFailed([f"{path.name}:1: expected {{\"annotator\", \"exported\", \"answers\": {{item_id: {{...}}}}}}"])
    answers = {}
    for item_id, values in data["answers"].items():
        if not isinstance(values, dict):
            log.add(f"{path.name}: {item_id}", "an answer must be an object of question keys")
            continue
        answers[item_id] = values
    return answers


def _parse_lapse_answers(path: Path, log: ErrorLog) -> dict[str, dict]:
    answers: dict[str, dict] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        gid = record.get("gid")
        if not isinstance(gid, str) or not gid:
            log.add(where, "missing field 'gid'")
            continue
        if gid in answers:
            log.add(where, f"duplicate answer for '{gid}'")
            continue
        label = record.get("label")
        if not isinstance(label, str):
            log.add(where, f"{gid}: missing field 'label'")
            continue
        values = {"label": label}
        notes = record.get("notes", "")
        if notes:
            values["notes"] = notes if isinstance(notes, str) else json.dumps(notes)
        answers[gid] = (line, values)
    return answers


def answers_import(*, campaign: Campaign, path: Path, annotator: str, user=None) -> dict:
    """Load one annotator's released answer file into the campaign, as that annotator's answers."""
    path = Path(path)
    enrollment = _enrollment(campaign, annotator)
    log = ErrorLog()
    if campaign.protocol == Protocol.TWIST_B:
        raw = {item_id: (None, values) for item_id, values in _parse_twist_answers(path, log).items()}
    else:
        raw = _parse_lapse_answers(path, log)
    assignments = {
        a.item.external_id: a
        for a in Assignment.objects.filter(enrollment=enrollment).select_related("item", "enrollment__campaign")
    }
    for item_id, (line, values) in raw.items():
        where = f"{path.name}:{line}" if line else f"{path.name}: {item_id}"
        assignment = assignments.get(item_id)
        if assignment is None:
            log.add(where, f"item '{item_id}' is not assigned to {enrollment.pseudonym} in campaign '{campaign.slug}'")
            continue
        for problem in validate_values(campaign.protocol, values, assignment.item.gold_type):
            log.add(where, f"{item_id}: {problem}")
    log.raise_if_any()
    created = changed = 0
    with transaction.atomic():
        for item_id, (_, values) in raw.items():
            result = answer_save(assignment=assignments[item_id], values=values, user=user, source="import", replace=True)
            changed += result.changed
            created += result.answer.revision == 1 and result.changed
    return {"annotator": enrollment.pseudonym, "answers": len(raw), "changed": changed, "created": created}
