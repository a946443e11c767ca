"""LongMemEval's released files read as they are, into plain records (no database).

Two shapes (PROTOCOL.md §13, shared/data/README.md):

- a question file: one JSON array of questions (``question_id, question_type, question, answer,
  question_date``). The official ``longmemeval_oracle.json`` / ``_s`` / ``_m`` add the history:
  ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (a list of sessions, each a list of
  ``{role, content, has_answer?}`` turns) and ``answer_session_ids``; they are kept when present. The
  question-only subset in shared/data has none of them.
- a judged run: JSON lines named ``<hypothesis file>.eval-results-<judge>``, one answer a line:
  ``question_id, hypothesis, autoeval_label: {model, label}`` with ``label`` a JSON boolean (other fields,
  the reader prompt and token counts, are ignored). The run's name is the file name up to ``.jsonl``.

Reading is all or nothing: every problem of every file goes to one ErrorLog as ``FILE:LINE: field …`` and
ImportFailed is raised before anything is returned. A question is returned once, whatever the number of
runs that answered it; an answer carries its own judge model, never assumed from the file name.
"""

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from goldkey.lib.jsonio import ErrorLog, read_json_array, read_jsonl, require_str
from protocols import judged

HISTORY_FIELDS = ("haystack_session_ids", "haystack_dates", "haystack_sessions")
TURN_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    has_answer: bool = False


@dataclass(frozen=True)
class Session:
    """One dated history session of a question (official shape only)."""

    session_id: str
    date: str
    turns: tuple[Turn, ...]
    evidence: bool  # its id is one of the question's answer_session_ids


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    answer: str | int  # LongMemEval's counts are JSON integers: kept exactly, not turned into text
    question_date: str
    where: str  # FILE:LINE of its record
    sessions: tuple[Session, ...] | None = None  # None: the file has no history (not: an empty history)
    answer_session_ids: tuple[str, ...] | None = None

    @property
    def abstention(self) -> bool:
        return is_abstention(self.question_id)


@dataclass(frozen=True)
class JudgedAnswer:
    run: str
    question_id: str
    hypothesis: str
    label: bool  # the judge's: True = the answer is correct
    judge_model: str
    where: str


@dataclass(frozen=True)
class Release:
    questions: dict[str, Question]  # by question id, in the file's order
    answers: list[JudgedAnswer]  # run by run, in each file's order

    @property
    def runs(self) -> list[str]:
        return list(dict.fromkeys(a.run for a in self.answers))


def is_abstention(question_id: str) -> bool:
    return question_id.endswith(judged.ABSTENTION_SUFFIX)


def run_name(path: Path) -> str:
    """The hypothesis file's name: the run file's name up to (without) ``.jsonl``."""
    name = Path(path).name
    return name[: name.index(".jsonl")] if ".jsonl" in name else name


def _answer(record: dict, where: str, log: ErrorLog) -> str | int | None:
    value = record.get("answer")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return require_str(record, "answer", where, log) if not isinstance(value, str) else value


def _strings(record: dict, key: str, where: str, log: ErrorLog) -> tuple[str, ...] | None:
    value = record.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        log.add(where, f"field '{key}' must be a list of strings")
        return None
    return tuple(value)


def _turns(session: object, where: str, key: str, log: ErrorLog) -> tuple[Turn, ...] | None:
    if not isinstance(session, list):
        log.add(where, f"field '{key}' must be a list of turns, got {type(session).__name__}")
        return None
    turns = []
    for n, turn in enumerate(session):
        label = f"{key}[{n}]"
        if not isinstance(turn, dict):
            log.add(where, f"field '{label}' must be an object, got {type(turn).__name__}")
            return None
        role, content = turn.get("role"), turn.get("content")
        if role not in TURN_ROLES:
            log.add(where, f"field '{label}.role' must be one of {', '.join(TURN_ROLES)}")
            return None
        if not isinstance(content, str):
            log.add(where, f"field '{label}.content' must be a string")
            return None
        has_answer = turn.get("has_answer", False)
        if not isinstance(has_answer, bool):
            log.add(where, f"field '{label}.has_answer' must be true or false")
            return None
        turns.append(Turn(role, content, has_answer))
    return tuple(turns)


def _history(record: dict, where: str, log: ErrorLog) -> tuple[tuple[Session, ...] | None, tuple[str, ...] | None]:
    present = [k for k in HISTORY_FIELDS if k in record]
    evidence = _strings(record, "answer_session_ids", where, log) if "answer_session_ids" in record else None
    if not present:
        return None, evidence
    if len(present) < len(HISTORY_FIELDS):
        missing = ", ".join(k for k in HISTORY_FIELDS if k not in record)
        log.add(where, f"missing field(s) {missing} (a history needs ids, dates and sessions together)")
        return None, evidence
    ids = _strings(record, "haystack_session_ids", where, log)
    dates = _strings(record, "haystack_dates", where, log)
    raw = record["haystack_sessions"]
    if not isinstance(raw, list):
        log.add(where, "field 'haystack_sessions' must be a list of sessions")
        return None, evidence
    if ids is None or dates is None:
        return None, evidence
    if not len(ids) == len(dates) == len(raw):
        log.add(where, f"fields 'haystack_session_ids', 'haystack_dates', 'haystack_sessions' must have the "
                            f"same length, got {len(ids)}, {len(dates)}, {len(raw)}")
        return None, evidence
    sessions = []
    for n, (session_id, date, session) in enumerate(zip(ids, dates, raw, strict=True)):
        turns = _turns(session, where, f"haystack_sessions[{n}]", log)
        if turns is None:
            return None, evidence
        sessions.append(Session(session_id, date, turns, evidence is not None and session_id in evidence))
    return tuple(sessions), evidence


def question_type_of(record: dict, where: str, log: ErrorLog) -> str | None:
    """A record's `question_type`: required, and a type name (LongMemEval's or one of its shape)."""
    question_type = require_str(record, "question_type", where, log)
    if question_type is not None and not judged.TYPE_PATTERN.match(question_type):
        log.add(where, f"field 'question_type': '{question_type[:60]}' is not a type name "
                       f"(lower-case letters, digits and '-'; LongMemEval's: {', '.join(judged.TYPES)})")
    return question_type


def _question(record: dict, where: str, log: ErrorLog) -> Question | None:
    before = len(log.errors)
    question_id = require_str(record, "question_id", where, log)
    question_type = question_type_of(record, where, log)
    question = require_str(record, "question", where, log)
    answer = _answer(record, where, log)
    question_date = require_str(record, "question_date", where, log)
    sessions, evidence = _history(record, where, log)
    if len(log.errors) > before or log.full:
        return None
    return Question(question_id, question_type, question, answer, question_date, where, sessions, evidence)


def read_questions(path: Path, log: ErrorLog, refused: set[str] | None = None) -> dict[str, Question]:
    """A LongMemEval question file (official shape or the question-only subset): question id -> Question,
    read a question at a time. Problems go to `log`; the caller raises. The ids of questions refused go
    to `refused`, so that an answer to one is not reported a second time as an unknown question."""
    path = Path(path)
    questions: dict[str, Question] = {}
    read = 0
    for line, record in read_json_array(path, log):
        read += 1
        where = f"{path.name}:{line}"
        if not isinstance(record, dict):
            log.add(where, f"expected a JSON object, got {type(record).__name__}")
            continue
        question = _question(record, where, log)
        if question is None:
            if refused is not None and isinstance(record.get("question_id"), str):
                refused.add(record["question_id"])
            continue
        if question.question_id in questions:
            log.add(where, f"field 'question_id': duplicate '{question.question_id}' "
                           f"(first at {questions[question.question_id].where})")
            continue
        questions[question.question_id] = question
    if not read and not log.errors:
        log.add(f"{path.name}:1", "no questions in file")
    return questions


def _judge(record: dict, where: str, log: ErrorLog) -> tuple[bool, str] | None:
    value = record.get("autoeval_label")
    if not isinstance(value, dict):
        log.add(where, "missing field 'autoeval_label'" if value is None
                else f"field 'autoeval_label' must be an object, got {type(value).__name__}")
        return None
    label = value.get("label")
    if not isinstance(label, bool):
        log.add(where, f"field 'autoeval_label.label' must be true or false, got {label!r:.40}")
        return None
    model = value.get("model")
    if not isinstance(model, str) or not model.strip():
        log.add(where, "field 'autoeval_label.model' must name the judge model")
        return None
    return label, model


def known_question(question_id: str | None, where: str, log: ErrorLog, *, seen: dict[str, str],
                   questions: Mapping[str, object], refused: Set[str] = frozenset()) -> bool:
    """Whether a line of an answer file names a question of the question file for the first time in that
    file (`seen`: question id -> where, updated); an unknown id or a second answer is logged. An answer to a
    question the question file refused is still checked, and says nothing more about it. The one rule for
    every per-question answer file (hypotheses, labels, judged runs)."""
    if question_id is None:
        return False
    if question_id in seen:
        log.add(where, f"field 'question_id': duplicate answer to '{question_id}' (first at {seen[question_id]})")
        return False
    seen[question_id] = where
    if question_id not in questions:
        if question_id not in refused:
            log.add(where, f"field 'question_id': '{question_id}' is not in the question file")
        return False
    return True


def read_run(path: Path, questions: dict[str, Question], log: ErrorLog, refused: Set[str] = frozenset()) -> list[JudgedAnswer]:
    """One ``*.eval-results-*`` file: its answers, each to a question of `questions` (or of `refused`,
    the question file's refused ones, still checked), at most once."""
    path = Path(path)
    run, answers, seen = run_name(path), [], {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        question_id = require_str(record, "question_id", where, log)
        hypothesis = require_str(record, "hypothesis", where, log, allow_empty=True)
        judge = _judge(record, where, log)
        if not known_question(question_id, where, log, seen=seen, questions=questions, refused=refused):
            continue
        if hypothesis is not None and judge is not None:
            answers.append(JudgedAnswer(run, question_id, hypothesis, judge[0], judge[1], where))
    if not seen and not log.full:
        log.add(f"{path.name}:1", "no answers in file")
    return answers


def read_release(*, questions: Path, runs: Iterable[Path]) -> Release:
    """The question file and every run file, checked together: all of it, or ImportFailed naming every
    problem. Two run files with the same run name are refused (their answers would be told apart by
    nothing)."""
    log = ErrorLog()
    refused: set[str] = set()
    by_id = read_questions(Path(questions), log, refused)
    answers: list[JudgedAnswer] = []
    names: dict[str, str] = {}
    for path in map(Path, runs):
        name = run_name(path)
        if name in names:
            log.add(f"{path.name}:1", f"run '{name}' is already read from {names[name]}")
            continue
        names[name] = path.name
        answers.extend(read_run(path, by_id, log, refused))
    if not names:
        log.add(Path(questions).name, "no run files given")
    log.raise_if_any()
    return Release(by_id, answers)
