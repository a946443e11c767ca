"""Writes of the judges wing: judged answers in (LongMemEval's shapes), and a judge's decoy calibration.

The import is all-or-nothing: every problem of every file is collected as ``FILE:LINE: field …`` and the
import refused before anything is written; importing the same files again changes nothing.
"""

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.module_loading import import_string

import protocols
from council.client import PermanentCallError, TransientCallError, chat
from council.models import CouncilMember
from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    json_line,
    optional_str,
    read_json_document,
    read_jsonl,
    require_str,
)
from items.models import Item, ItemSet
from items.services import ImportReport, item_content, item_set_get_or_create, license_checked
from judges.models import JudgeCalibration
from protocols import judged

KIND = judged.SPEC.item_kind


@dataclass
class JudgedRecord:
    """One judged answer as the files give it."""

    where: str  # "questions.json:12" of its question
    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: str = ""
    previous_answer: str = ""
    hypothesis: str | None = None
    judge: dict = field(default_factory=dict)  # {"label": "yes"|"no", "judge_model"}

    def hidden(self, run: str) -> dict:
        hidden = {"question_date": self.question_date, "run": run}
        if self.previous_answer:
            hidden["previous_answer"] = self.previous_answer
        if self.judge:
            hidden["judge"] = dict(self.judge)
        return hidden


def _records(path: Path, log: ErrorLog) -> Iterator[tuple[str, dict]]:
    """(FILE:LINE, object) of a JSON-lines file, or of a JSON array (LongMemEval ships its question files
    as one array)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64).lstrip()
    except OSError:
        head = b""  # read_jsonl names the file and why it cannot be read
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    if not head.startswith(b"["):
        for line, record in read_jsonl(path, log):
            yield f"{path.name}:{line}", record
        return
    document, value = read_json_document(path)
    if not isinstance(value, list):
        log.add(f"{path.name}:1", f"expected a JSON array of objects (or JSON lines), got {type(value).__name__}")
        return
    for n, record in enumerate(value):
        where = f"{path.name}:{json_line(document.text, (n,))}"
        if not isinstance(record, dict):
            log.add(where, f"expected a JSON object, got {type(record).__name__}")
            continue
        yield where, record


def _answer_text(record: dict, key: str, where: str, log: ErrorLog) -> str | None:
    """LongMemEval's answers are strings or, for counts, bare numbers."""
    value = record.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return require_str(record, key, where, log)


def _question(record: dict, where: str, log: ErrorLog) -> JudgedRecord | None:
    before = len(log.errors)
    question_id = require_str(record, "question_id", where, log)
    question_type = require_str(record, "question_type", where, log)
    if question_type is not None and not judged.TYPE_PATTERN.match(question_type):
        log.add(where, f"field 'question_type': '{question_type[:60]}' is not a type name "
                       f"(lower-case letters, digits and '-'; LongMemEval's: {', '.join(judged.TYPES)})")
    question = require_str(record, "question", where, log)
    answer = _answer_text(record, "answer", where, log)
    question_date = optional_str(record, "question_date", where, log)
    previous = record.get("previous_answer", "")
    if isinstance(previous, int | float) and not isinstance(previous, bool):
        previous = str(previous)
    elif previous is None:
        previous = ""
    elif not isinstance(previous, str):
        log.add(where, f"field 'previous_answer' must be a string, got {type(previous).__name__}")
    if len(log.errors) > before or log.full:
        return None
    return JudgedRecord(where, question_id, question_type, question, answer, question_date, previous)


def _judge_label(record: dict, where: str, log: ErrorLog) -> dict | None:
    label = require_str(record, "label", where, log)
    if label is not None and label.strip().lower() not in judged.JUDGE_LABELS:
        log.add(where, f"field 'label': '{label[:40]}' is not yes or no")
        return None
    model = require_str(record, "judge_model", where, log)
    if label is None or model is None:
        return None
    return {"label": label.strip().lower(), "judge_model": model}


def _check_unique(records: list[JudgedRecord], log: ErrorLog) -> dict[str, JudgedRecord]:
    by_id: dict[str, JudgedRecord] = {}
    for record in records:
        if record.question_id in by_id:
            log.add(record.where, f"field 'question_id': duplicate '{record.question_id}' "
                                  f"(first at {by_id[record.question_id].where})")
            continue
        by_id[record.question_id] = record
    return by_id


def _attach(path: Path, log: ErrorLog, by_id: dict[str, JudgedRecord], what: str, refused: set[str]) -> None:
    """Read a hypothesis ("hypothesis") or judge-label ("label") file onto the questions it names; a line
    for a question the question file refused is still checked, and says nothing more about that question."""
    seen: dict[str, str] = {}
    for where, record in _records(path, log):
        question_id = require_str(record, "question_id", where, log)
        if question_id is None:
            continue
        if question_id in seen:
            log.add(where, f"field 'question_id': duplicate '{question_id}' (first at {seen[question_id]})")
            continue
        seen[question_id] = where
        target = by_id.get(question_id)
        if target is None and question_id not in refused:
            log.add(where, f"field 'question_id': '{question_id}' is not in the question file")
            continue
        if what == "hypothesis":
            hypothesis = require_str(record, "hypothesis", where, log, allow_empty=True)
            if hypothesis is not None and target is not None:
                target.hypothesis = hypothesis
        else:
            label = _judge_label(record, where, log)
            if label is not None and target is not None:
                target.judge = label


def judged_import(
    *, questions: Path, hypotheses: Path, labels: Path | None = None, item_set_name: str, run: str = "",
    license: str = "", dry_run: bool = False,
) -> ImportReport:
    """LongMemEval's three shapes: the question file (question_id, question_type, question, answer,
    question_date; optional previous_answer, the superseded value of a history-aware item, which decoys
    need), one system's hypothesis file (question_id, hypothesis) and optionally the judge's labels
    (question_id, label yes/no, judge_model). `run` names the system / run that answered (hidden)."""
    questions, hypotheses = Path(questions), Path(hypotheses)
    log = ErrorLog()
    parsed, refused = [], set()
    for where, record in _records(questions, log):
        question = _question(record, where, log)
        if question is not None:
            parsed.append(question)
        elif isinstance(record.get("question_id"), str):
            refused.add(record["question_id"])
    by_id = _check_unique(parsed, log)
    if not parsed and not log.errors:
        log.add(f"{questions.name}:1", "no questions in file")
    _attach(hypotheses, log, by_id, "hypothesis", refused)
    if labels is not None:
        _attach(Path(labels), log, by_id, "label", refused)
    for record in by_id.values():
        if record.hypothesis is None and not log.full:
            log.add(record.where, f"field 'question_id': no hypothesis for '{record.question_id}' in {hypotheses.name}")
    log.raise_if_any()
    return _write(list(by_id.values()), item_set_name=item_set_name, run=run, license=license, dry_run=dry_run,
                  source=questions.name)


def items_import_judged(*, path: Path, item_set_name: str, license: str = "", dry_run: bool = False,
                        run: str = "") -> ImportReport:
    """One JSONL file holding the three shapes' fields per line (question_id, question_type, question, answer,
    question_date, hypothesis, and label + judge_model when judged): the upload page's format."""
    path = Path(path)
    log = ErrorLog()
    parsed = []
    for where, record in _records(path, log):
        question = _question(record, where, log)
        hypothesis = require_str(record, "hypothesis", where, log, allow_empty=True)
        judge = _judge_label(record, where, log) if ("label" in record or "judge_model" in record) else {}
        if question is None or hypothesis is None or judge is None:
            continue
        question.hypothesis, question.judge = hypothesis, judge
        parsed.append(question)
    by_id = _check_unique(parsed, log)
    if not parsed and not log.errors:
        log.add(f"{path.name}:1", "no judged answers in file")
    log.raise_if_any()
    return _write(list(by_id.values()), item_set_name=item_set_name, run=run, license=license, dry_run=dry_run,
                  source=path.name)


def _content(record: JudgedRecord, run: str) -> dict:
    return {"question": record.question, "answer": record.answer, "hypothesis": record.hypothesis,
            "hidden": record.hidden(run)}


def _write(records: list[JudgedRecord], *, item_set_name: str, run: str, license: str, dry_run: bool,
           source: str) -> ImportReport:
    license = license_checked(license)
    if not item_set_name.strip():
        raise ImportFailed(["an item set name is required for judged answers"])
    with transaction.atomic():
        item_set = item_set_get_or_create(name=item_set_name, kind=KIND, license=license)
        # Locked until the import commits: two imports into one set would both see an item as new.
        item_set = ItemSet.objects.select_for_update().get(pk=item_set.pk)
        report = ImportReport(item_set=item_set.name, dry_run=dry_run)
        defaults = judged.SPEC.content_defaults()
        existing = {
            external_id: (family, defaults | content)
            for external_id, family, content in Item.objects.filter(item_set=item_set).values_list(
                "external_id", "family", "content")
        }
        changed = ErrorLog()
        new = []
        for record in records:
            family = judged.family_of(record.question_type, record.question_id)
            content = item_content(spec=judged.SPEC, values=_content(record, run), where=record.where, log=changed)
            old = existing.get(record.question_id)
            if old is not None:
                if old != (family, content):
                    changed.add(record.where, f"field 'question_id': '{record.question_id}' is already in "
                                              f"'{item_set.name}' with different content")
                report.unchanged += 1
                continue
            new.append(Item(item_set=item_set, kind=KIND, external_id=record.question_id, family=family,
                            content=content))
        changed.raise_if_any()
        if not dry_run:
            Item.objects.bulk_create(new)
        report.created = len(new)
        if dry_run:
            transaction.set_rollback(True)
    return report


# ---------------------------------------------------------------------------------------------------
# Decoy calibration


def decoy_sources(item_set: ItemSet) -> list[judged.DecoySource]:
    rows = Item.objects.filter(item_set=item_set).order_by("external_id").values_list("external_id", "family", "content")
    sources = []
    defaults = judged.SPEC.content_defaults()
    for external_id, family, stored in rows:
        content = defaults | stored
        question_type, abstention = judged.split_family(family)
        sources.append(judged.DecoySource(
            question_id=external_id, question_type=question_type, abstention=abstention, question=content["question"],
            answer=content["answer"], previous_answer=str(content["hidden"].get("previous_answer") or ""),
        ))
    return sources


def decoy_set(*, item_set: ItemSet, seed: int) -> tuple[list[dict], dict[str, list[str]]]:
    """The mixed calibration set of an item set (judged.calibration_set); refused when it has no item a
    decoy can be built from."""
    if item_set.kind != KIND:
        raise ApplicationError(f"item set '{item_set.name}' holds {item_set.get_kind_display()} items, not judged answers")
    records, missing = judged.calibration_set(decoy_sources(item_set), seed=seed)
    if not records:
        raise ApplicationError(f"item set '{item_set.name}' has no free-text item to build decoys from")
    return records, missing


def calibration_figures(records: list[dict], verdicts: dict[str, str]) -> dict:
    """Per decoy class: {"n", "rejected", "rate", "wilson": [lo, hi], "clears"}; the gold answers'
    acceptance; "admissible" when every class has decoys and its point rejection rate reaches the bar."""
    classes = {}
    for cls in judged.DECOY_CLASSES:
        ids = [r["id"] for r in records if r["class"] == cls]
        rejected = sum(verdicts.get(i) == "incorrect" for i in ids)
        rate = rejected / len(ids) if ids else None
        classes[cls] = {
            "n": len(ids), "rejected": rejected, "rate": rate, "wilson": list(st.wilson_interval(rejected, len(ids))),
            "clears": rate is not None and rate >= judged.ADMISSIBLE_RATE,
        }
    gold_ids = [r["id"] for r in records if r["class"] == judged.GOLD]
    accepted = sum(verdicts.get(i) == "correct" for i in gold_ids)
    return {
        "classes": classes,
        "gold": {"n": len(gold_ids), "accepted": accepted, "rate": accepted / len(gold_ids) if gold_ids else None,
                 "wilson": list(st.wilson_interval(accepted, len(gold_ids)))},
        "unparsed": sum(1 for r in records if not verdicts.get(r["id"])),
        "bar": judged.ADMISSIBLE_RATE,
        "bar_applies_to": "the point rejection rate of every class (TWIST: every class clears >= 95%)",
        "admissible": all(c["clears"] for c in classes.values()),
    }


@dataclass(frozen=True)
class CalibrationSet:
    """A protocol's mixed decoy set, and how a judge grades it: `records` (gold answers and decoys, ids that
    tell nothing of provenance), `not_built` (what could not be built, and why, for the report), the decoy
    template `version`, the `prompt` of one record, and the `figures` of the judge's verdicts ("correct" /
    "incorrect" by record id: per class, the gold answers' acceptance, "admissible")."""

    records: list[dict]
    not_built: dict
    version: str
    prompt: Callable[[dict], str]
    figures: Callable[[list[dict], dict[str, str]], dict]


def calibration_set_of(*, item_set: ItemSet, seed: int) -> CalibrationSet:
    """The decoy set of an item set, as its protocol builds it (`ProtocolSpec.decoy_set`, a dotted path:
    TWIST Track C builds decoys from its chains), else from judged answers."""
    spec = protocols.for_kind(item_set.kind)
    if spec.decoy_set:
        return import_string(spec.decoy_set)(item_set=item_set, seed=seed)
    records, missing = decoy_set(item_set=item_set, seed=seed)
    return CalibrationSet(records, missing, judged.DECOY_VERSION, judged.calibration_prompt, calibration_figures)


def _grade(member: CouncilMember, prompt: str, record: dict) -> tuple[str, str]:
    """(record id, the judge's reply); one retry on a transient failure."""
    messages = [{"role": "user", "content": prompt}]
    try:
        return record["id"], chat(member, messages)
    except TransientCallError:
        return record["id"], chat(member, messages)


def judge_calibration_run(*, item_set: ItemSet, member: CouncilMember, seed: int, user=None) -> JudgeCalibration:
    """Have `member` grade the mixed decoy set of `item_set` blind to provenance (each prompt is the judge
    prompt with the response alone) and record the per-class rejection. A failed call records nothing: a
    calibration with holes would read as rejections that never happened."""
    calibration = calibration_set_of(item_set=item_set, seed=seed)
    records = calibration.records
    try:
        with ThreadPoolExecutor(max_workers=max(1, member.concurrency)) as pool:
            replies = dict(pool.map(lambda r: _grade(member, calibration.prompt(r), r), records))
    except (TransientCallError, PermanentCallError) as exc:
        raise ApplicationError(f"judge '{member.name}' could not grade the decoy set: {exc}; nothing recorded") from exc
    verdicts = {i: judged.judge_verdict(reply) for i, reply in replies.items()}
    figures = calibration.figures(records, verdicts)
    return JudgeCalibration.objects.create(
        item_set=item_set, member=member, judge=member.name, judge_model=member.model,
        template_version=calibration.version, seed=seed, results=figures, records=records, replies=replies,
        admissible=figures["admissible"], created_by=user,
    )
