"""Writes of the judges wing: judged answers in (LongMemEval's shapes), and a judge's decoy calibration.

The import is all-or-nothing: every problem of every file is collected as ``FILE:LINE: field …`` and the
import refused before anything is written; importing the same files again changes nothing.
"""

import hashlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.module_loading import import_string

import protocols
from annotation.services import campaign_create
from council.client import PermanentCallError, Reply, TransientCallError, chat_reply, reported_joined
from council.models import CouncilMember
from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    column_length,
    json_line,
    optional_str,
    read_json_document,
    read_jsonl,
    require_str,
    text_too_long,
)
from items.models import Context, Item, ItemSet
from items.services import ImportReport, item_content, item_set_get_or_create, license_checked
from judges import longmemeval as lme
from judges import sampling
from judges.models import JudgeCalibration, JudgedSample
from judges.selectors import judged_rows
from keys.selectors import question_entries
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
        hidden = {"run": run}  # the question's date is the question's: its context holds it
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
    question_type = lme.question_type_of(record, where, log)
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
    return _write(list(by_id.values()), item_set_name=item_set_name, run=run, license=license, dry_run=dry_run)


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
    return _write(list(by_id.values()), item_set_name=item_set_name, run=run, license=license, dry_run=dry_run)


@dataclass(frozen=True)
class QuestionRow:
    """A question as a shared context: stored once, whatever the number of answers citing it."""

    question_id: str
    where: str
    content: dict  # the context's values (protocols.judged.JudgedQuestion)


@dataclass(frozen=True)
class AnswerRow:
    """One judged answer: an item citing its question."""

    external_id: str
    question_id: str
    where: str
    family: str
    content: dict  # the item's own values (hypothesis, hidden)


def _question_row(record: JudgedRecord) -> QuestionRow:
    return QuestionRow(record.question_id, record.where, {
        "question_type": record.question_type, "question": record.question, "answer": record.answer,
        "question_date": record.question_date,
    })


def _write(records: list[JudgedRecord], *, item_set_name: str, run: str, license: str, dry_run: bool) -> ImportReport:
    # The one-answer-per-question shapes: the answer is named by its question id, as before contexts.
    answers = [
        AnswerRow(r.question_id, r.question_id, r.where, judged.family_of(r.question_type, r.question_id),
                  {"hypothesis": r.hypothesis, "hidden": r.hidden(run)})
        for r in records
    ]
    return judged_answers_write(questions=[_question_row(r) for r in records], answers=answers,
                                item_set_name=item_set_name, license=license, dry_run=dry_run)



def _no_progress(message: str) -> None:
    pass


def _ids_too_long(questions: list[QuestionRow], answers: list[AnswerRow], log: ErrorLog) -> set[str]:
    """The question ids that do not fit their columns, each logged at its line: a question's id names its
    context, an answer's id (the question id, and in a release the run's digest) its item."""
    context_max, item_max = column_length(Context, "external_id"), column_length(Item, "external_id")
    questions_refused = set()
    for question in questions:
        if problem := text_too_long(question.question_id, context_max):
            log.add(question.where, f"field 'question_id': {problem}")
            questions_refused.add(question.question_id)
    refused = set(questions_refused)
    for answer in answers:
        if answer.question_id in questions_refused:
            continue
        if problem := text_too_long(answer.external_id, item_max):
            log.add(answer.where, f"field 'question_id': its answer's id (the question id and the run's digest) is {problem}")
            refused.add(answer.question_id)
    return refused


def judged_answers_write(*, questions: list[QuestionRow], answers: list[AnswerRow], item_set_name: str,
                         license: str = "", dry_run: bool = False,
                         progress: Callable[[str], None] = _no_progress) -> ImportReport:
    """The one writer of judged answers: each question once as a shared context of the item set, each answer
    an item citing it. All or nothing: a value the schemas refuse, or a question or answer already in the set
    with other values, refuses the whole import naming FILE:LINE; what is already there unchanged is left as
    it is (idempotent)."""
    license = license_checked(license)
    if not item_set_name.strip():
        raise ImportFailed(["an item set name is required for judged answers"])
    spec = judged.SPEC
    log = ErrorLog()
    context_values = {}
    too_long_ids = _ids_too_long(questions, answers, log)
    for question in questions:
        if question.question_id in too_long_ids:
            continue
        problems = spec.context_problems(question.content)
        for problem in problems:
            log.add(question.where, problem)
        if not problems:
            context_values[question.question_id] = {**spec.context_defaults(), **question.content}
    item_values = {}
    shared = set(spec.context.model_fields)
    for answer in answers:
        if answer.question_id in too_long_ids:
            continue
        content = item_content(spec=spec, values=answer.content, where=answer.where, log=log)
        if content is not None:
            # What the context holds is not repeated in the item (it would shadow the context's value).
            item_values[answer.external_id] = {k: v for k, v in content.items() if k not in shared or k in answer.content}
    log.raise_if_any()
    with transaction.atomic():
        item_set = item_set_get_or_create(name=item_set_name, kind=KIND, license=license)
        # Locked until the import commits: two imports into one set would both see an item as new.
        item_set = ItemSet.objects.select_for_update().get(pk=item_set.pk)
        report = ImportReport(item_set=item_set.name, dry_run=dry_run)
        contexts = {
            external_id: (pk, content)
            for pk, external_id, content in Context.objects.filter(item_set=item_set).values_list("pk", "external_id", "content")
        }
        changed = ErrorLog()
        new_contexts = []
        for question in questions:
            old = contexts.get(question.question_id)
            values = context_values[question.question_id]
            if old is None:
                new_contexts.append(Context(item_set=item_set, external_id=question.question_id, content=values))
            elif {**spec.context_defaults(), **old[1]} != values:
                changed.add(question.where, f"field 'question_id': '{question.question_id}' is already in "
                                            f"'{item_set.name}' with different content")
        existing = {
            external_id: (family, context, content)
            for external_id, family, context, content in Item.objects.filter(item_set=item_set).values_list(
                "external_id", "family", "context__external_id", "content")
        }
        new_items = []
        for answer in answers:
            old = existing.get(answer.external_id)
            if old is not None:
                if old != (answer.family, answer.question_id, item_values[answer.external_id]):
                    changed.add(answer.where, f"field 'question_id': '{answer.question_id}' is already in "
                                              f"'{item_set.name}' with different content")
                report.unchanged += 1
                continue
            new_items.append(answer)
        changed.raise_if_any()
        progress(f"{len(new_contexts)} new question(s), {len(new_items)} new answer(s) to write")
        Context.objects.bulk_create(new_contexts, batch_size=1000)
        context_ids = dict(Context.objects.filter(item_set=item_set).values_list("external_id", "pk"))
        Item.objects.bulk_create([
            Item(item_set=item_set, kind=KIND, external_id=a.external_id, family=a.family,
                 context_id=context_ids[a.question_id], content=item_values[a.external_id])
            for a in new_items
        ], batch_size=1000)
        report.created = len(new_items)
        progress(f"written: {report.created} answer(s) citing {len(context_ids)} question(s)")
        if dry_run:
            transaction.set_rollback(True)
    return report


# ---------------------------------------------------------------------------------------------------
# LongMemEval's released files: a question file and several judged runs


def answer_external_id(question_id: str, run: str) -> str:
    """A run's answer to a question, named within its item set: the question id and a digest of the run's
    name (a run's name is its file name, longer than an item id may be); the run itself is in the item."""
    return f"{question_id}:{hashlib.sha256(run.encode()).hexdigest()[:12]}"


def _release_question(question: lme.Question) -> QuestionRow:
    content: dict = {
        "question_type": question.question_type, "question": question.question, "answer": question.answer,
        "question_date": question.question_date,
    }
    if question.sessions is not None:
        content["evidence_sessions"] = [
            {"date": s.date, "turns": [{"role": t.role, "content": t.content, "has_answer": t.has_answer} for t in s.turns]}
            for s in question.sessions
            # The oracle file holds the evidence sessions only; without evidence ids, every session is shown.
            if s.evidence or question.answer_session_ids is None
        ]
        content["haystack_session_ids"] = [s.session_id for s in question.sessions]
        content["haystack_dates"] = [s.date for s in question.sessions]
    if question.answer_session_ids is not None:
        content["answer_session_ids"] = list(question.answer_session_ids)
    return QuestionRow(question.question_id, question.where, content)


def _release_answer(answer: lme.JudgedAnswer, question: lme.Question) -> AnswerRow:
    return AnswerRow(
        answer_external_id(answer.question_id, answer.run), answer.question_id, answer.where,
        judged.family_of(question.question_type, question.question_id),
        {"hypothesis": answer.hypothesis, "hidden": {
            "run": answer.run,
            "judge": {"label": "yes" if answer.label else "no", "judge_model": answer.judge_model},
        }},
    )


def judged_release_import(*, questions: Path, runs: list[Path], item_set_name: str, license: str = "",
                          dry_run: bool = False, progress: Callable[[str], None] = _no_progress) -> ImportReport:
    """LongMemEval's released files as they are (judges/longmemeval.py): a question file (official shape or
    the question-only subset) and one or more ``*.eval-results-*`` runs, read together, all or nothing. Each
    question is stored once (with its dated evidence sessions when the file has them) and each run's answer
    is an item citing it, with the run and the judge's label and model (hidden)."""
    progress(f"reading {Path(questions).name} and {len(runs)} run file(s)")
    release = lme.read_release(questions=Path(questions), runs=[Path(r) for r in runs])
    progress(f"read {len(release.questions)} question(s) and {len(release.answers)} answer(s) "
             f"from {len(release.runs)} run(s)")
    answered = {a.question_id for a in release.answers}
    return judged_answers_write(
        questions=[_release_question(q) for q in release.questions.values() if q.question_id in answered],
        answers=[_release_answer(a, release.questions[a.question_id]) for a in release.answers],
        item_set_name=item_set_name, license=license, dry_run=dry_run, progress=progress,
    )


# ---------------------------------------------------------------------------------------------------
# The designed sample: which answers people read


def judged_sample_draw(*, item_set: ItemSet, half_width: float, seed: int, oversample: float = 2.0,
                       minimum: int = 2) -> tuple[sampling.Sample, dict[tuple[str, str], int]]:
    """The seeded stratified sample of the set's judged answers (judges.sampling.sample_draw) and each
    unit's item id. Only answers with a judge label form the population (disputed means their labels differ
    across runs)."""
    if item_set.kind != KIND:
        raise ApplicationError(f"item set '{item_set.name}' holds {item_set.get_kind_display()} items, not judged answers")
    if not 0 < half_width < 0.5:
        raise ApplicationError(f"field 'half_width': {half_width} is not between 0 and 0.5")
    if oversample < 1:
        raise ApplicationError(f"field 'oversample': {oversample} is below 1 (1: no oversampling)")
    rows = [r for r in judged_rows(item_set) if r.label is not None]
    if not rows:
        raise ApplicationError(f"item set '{item_set.name}' has no judged answer with a judge label to sample")
    ids = {(r.run, r.question_id): r.item_id for r in rows}
    if len(ids) < len(rows):
        raise ApplicationError(f"item set '{item_set.name}' holds two answers of one run to one question")
    units = sampling.population([(r.run, r.question_id, r.label) for r in rows],
                                {r.question_id: r.question_type for r in rows})
    return sampling.sample_draw(units=units, half_width=half_width, seed=seed, oversample=oversample,
                                minimum=minimum), ids


def judged_sample_create(*, item_set: ItemSet, slug: str, annotators: list, half_width: float, seed: int,
                         oversample: float = 2.0, minimum: int = 2, user=None) -> JudgedSample:
    """A campaign over the designed sample of the set's judged answers, and the design it was drawn by
    (for the key's datasheet and for weighting figures back to the population)."""
    sample, ids = judged_sample_draw(item_set=item_set, half_width=half_width, seed=seed, oversample=oversample,
                                     minimum=minimum)
    with transaction.atomic():
        campaign = campaign_create(slug=slug, item_set=item_set, annotators=annotators, seed=seed, created_by=user,
                                   item_ids={ids[u.key] for u in sample.chosen})
        return JudgedSample.objects.create(
            campaign=campaign, seed=seed, half_width=half_width, oversample=oversample, design=sample.design,
            population=[[u.run, u.question_id, u.question_type, u.abstention, u.disputed, ids[u.key]] for u in sample.units],
            created_by=user,
        )


# ---------------------------------------------------------------------------------------------------
# Decoy calibration


def decoy_sources(item_set: ItemSet) -> list[judged.DecoySource]:
    rows = Item.objects.filter(item_set=item_set).order_by("external_id").values_list(
        "external_id", "family", "content", "context__content")
    sources = []
    defaults = judged.SPEC.content_defaults() | judged.SPEC.context_defaults()
    for external_id, family, stored, shared in rows:
        content = defaults | (shared or {}) | stored
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


def _grade(member: CouncilMember, prompt: str, record: dict) -> tuple[str, Reply]:
    """(record id, the judge's reply); one retry on a transient failure."""
    messages = [{"role": "user", "content": prompt}]
    try:
        return record["id"], chat_reply(member, messages)
    except TransientCallError:
        return record["id"], chat_reply(member, messages)


def rejudge_suggestions(*, erratum, member: CouncilMember) -> dict[str, str]:
    """The judge's verdict on every answer a fix-reference erratum re-judges: LongMemEval's prompt for the
    answer's type, with the corrected reference in place of the released one. Shown to the author beside
    each answer; the author's label, not this, is the gold."""
    jobs = []
    for entry in question_entries(erratum.key, erratum.item_external_id):
        content = judged.SPEC.content_of(entry.item)
        question_type, abstention = judged.split_family(entry.item.family)
        prompt = judged.judge_prompt(question_type=question_type, abstention=abstention, question=content["question"],
                                     answer=erratum.value, response=content["hypothesis"])
        jobs.append(({"id": entry.external_id}, prompt))
    try:
        with ThreadPoolExecutor(max_workers=max(1, member.concurrency)) as pool:
            replies = dict(pool.map(lambda job: _grade(member, job[1], job[0]), jobs))
    except (TransientCallError, PermanentCallError) as exc:
        raise ApplicationError(f"judge '{member.name}' could not re-judge the answers: {exc}") from exc
    return {name: judged.judge_verdict(reply.content) for name, reply in replies.items()}


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
    verdicts = {i: judged.judge_verdict(reply.content) for i, reply in replies.items()}
    figures = calibration.figures(records, verdicts)
    return JudgeCalibration.objects.create(
        item_set=item_set, member=member, judge=member.name, judge_model=member.model,
        response_models=reported_joined((reply.model for reply in replies.values()),
                                        column_length(JudgeCalibration, "response_models")),
        template_version=calibration.version, seed=seed,
        results=figures, records=records, replies={i: reply.content for i, reply in replies.items()},
        admissible=figures["admissible"], created_by=user,
    )
