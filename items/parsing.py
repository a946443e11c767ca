"""Parsing the corpus and item files: LoCoMo conversations, TWIST candidates and rejects, Lapse items.
Pure: no database access. The JSON readers and the error log they report into are shared plumbing
(goldkey/lib/jsonio.py): every problem is ``FILE:LINE: what is wrong``. A text longer than the column it
is written to is such a problem too, held to the model field's own max_length (PostgreSQL would refuse it
mid-write; SQLite would store it)."""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.db.backends.base.operations import BaseDatabaseOperations

from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    JsonDocument,
    check_lengths,
    column_length,
    optional_str,
    read_json_document,
    require_str,
    text_too_long,
)
from items.models import Conversation, GenerationReject, Item, Session, Turn

# An item cites a handful of turns (at most 3 in the released data); a list in the thousands would be copied
# onto every annotator page and overflow Evidence.position long before it meant anything.
MAX_EVIDENCE = 100
DIA_ID = re.compile(r"^D(\d+):(\d+)$")
BATCH = re.compile(r":([A-Za-z0-9_]*?)(\d+)$")
SESSION_KEY = re.compile(r"^session_(\d+)$")
LOCOMO_FILE = re.compile(r"^(\d+)\.json$")
LOCOMO_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")

# The columns the files' texts are written to (the model fields' max_length, read once).
CONVERSATION_ID_MAX = column_length(Conversation, "external_id")
SPEAKER_MAX = {"speaker_a": column_length(Conversation, "speaker_a"), "speaker_b": column_length(Conversation, "speaker_b")}
SESSION_DATE_MAX = column_length(Session, "date_time_raw")
DIA_ID_MAX = column_length(Turn, "dia_id")
ITEM_ID_MAX = column_length(Item, "external_id")
FAMILY_MAX = column_length(Item, "family")
BATCH_MAX = column_length(Item, "batch")
TWIST_LIMITS = {"id": ITEM_ID_MAX, "family": FAMILY_MAX}
VERDICT_MAX = column_length(GenerationReject, "verdict")
REJECT_LIMITS = {
    "id": column_length(GenerationReject, "external_id"),
    "conv": column_length(GenerationReject, "conversation_external_id"),
    "_verdict": VERDICT_MAX,
    "_dropped_by": column_length(GenerationReject, "dropped_by"),
}
LAPSE_LIMITS = {"gid": ITEM_ID_MAX, "battery_id": ITEM_ID_MAX}
# A session's number is Session.number's: PostgreSQL's integer stops at 2**31 - 1 (SQLite's does not), as
# Django's own range for the field says, read from the class so that parsing needs no connection.
SESSION_NUMBER_MAX = BaseDatabaseOperations.integer_field_ranges["PositiveIntegerField"][1]


def batch_of(external_id: str) -> str:
    """The generation batch of a TWIST id: 'conv-26:v1b13' → 'v1b', 'conv-26:b0' → 'b'."""
    match = BATCH.search(external_id)
    return match.group(1) if match else ""


def conversation_id_problem(external_id: str) -> str | None:
    """Why a conversation cannot be named `external_id` (a sample id, a file name, `--as`), or None."""
    return text_too_long(external_id, CONVERSATION_ID_MAX)


def batch_problem(external_id: str) -> str | None:
    """Why a Track B id's batch (`batch_of`) does not fit its column, or None."""
    batch = batch_of(external_id)
    if len(batch) <= BATCH_MAX:
        return None
    return f"its batch '{batch[:BATCH_MAX]}…' is {text_too_long(batch, BATCH_MAX)}"


def parse_locomo_date(raw: str) -> datetime | None:
    for fmt in LOCOMO_DATE_FORMATS:
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


# ---------------------------------------------------------------------------------------------
# LoCoMo


@dataclass
class ParsedTurn:
    dia_id: str
    speaker: str
    text: str
    image_caption: str


@dataclass
class ParsedSession:
    number: int
    date_time_raw: str
    date_time: datetime | None
    turns: list[ParsedTurn]


@dataclass
class ParsedConversation:
    external_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[ParsedSession]
    source: str

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def parse_locomo_conversation(
    data: object, external_id: str, doc: JsonDocument, log: ErrorLog
) -> ParsedConversation | None:
    where = doc.at()
    if not isinstance(data, dict):
        log.add(where, "expected a JSON object with speaker_a, speaker_b and session_N keys")
        return None
    speaker_a = require_str(data, "speaker_a", doc.at("speaker_a") if "speaker_a" in data else where, log)
    speaker_b = require_str(data, "speaker_b", doc.at("speaker_b") if "speaker_b" in data else where, log)
    speakers_fit = True
    for key, limit in SPEAKER_MAX.items():
        if text_too_long(data.get(key), limit):  # located (a scan of the text) only when too long
            speakers_fit = check_lengths(data, {key: limit}, doc.at(key), log)
    sessions: list[ParsedSession] = []
    seen_ids: set[str] = set()
    numbers = sorted(int(m.group(1)) for key in data if (m := SESSION_KEY.match(key)))
    if not numbers:
        log.add(where, "no session_N keys: not a LoCoMo conversation")
    for number in numbers:
        if log.full:
            break
        key = f"session_{number}"
        turns_raw = data[key]
        if number > SESSION_NUMBER_MAX:
            log.add(doc.at(key), f"field '{key}': a session number past {SESSION_NUMBER_MAX:,}")
            continue
        if not isinstance(turns_raw, list):
            log.add(doc.at(key), "must be a list of turns")
            continue
        date_raw = data.get(f"{key}_date_time")
        date_time = None
        if not isinstance(date_raw, str) or not date_raw.strip():
            log.add(doc.at(key), f"field '{key}_date_time' is missing or empty (every session is dated)")
            date_raw = ""
        else:
            date_time = parse_locomo_date(date_raw)
            if len(date_raw) > SESSION_DATE_MAX:
                check_lengths(data, {f"{key}_date_time": SESSION_DATE_MAX}, doc.at(f"{key}_date_time"), log)
            elif date_time is None:
                log.add(
                    doc.at(f"{key}_date_time"),
                    f"field '{key}_date_time' is '{date_raw}', expected a date like '9:55 am on 22 October, 2023'",
                )
        turns: list[ParsedTurn] = []
        for index, turn in enumerate(turns_raw):
            if not isinstance(turn, dict):
                log.add(doc.at(key, index), "a turn must be a JSON object")
                continue
            dia_id = turn.get("dia_id")
            speaker = turn.get("speaker")
            text = turn.get("text")
            if not (isinstance(dia_id, str) and isinstance(speaker, str) and speaker and isinstance(text, str)):
                turn_where = doc.at(key, index)  # slow path: locate the turn only when it is wrong
                require_str(turn, "dia_id", turn_where, log)
                require_str(turn, "speaker", turn_where, log)
                require_str(turn, "text", turn_where, log, allow_empty=True)
                continue
            match = DIA_ID.match(dia_id)
            if not match:
                log.add(doc.at(key, index), f"field 'dia_id': '{dia_id}' is not of the form D<session>:<turn>")
                continue
            if len(dia_id) > DIA_ID_MAX:
                check_lengths(turn, {"dia_id": DIA_ID_MAX}, doc.at(key, index), log)
                continue
            if int(match.group(1)) != number:
                log.add(doc.at(key, index), f"field 'dia_id': '{dia_id}' is in {key}, not session {match.group(1)}")
            if dia_id in seen_ids:
                log.add(doc.at(key, index), f"field 'dia_id': duplicate dia_id '{dia_id}'")
                continue
            if speaker_a and speaker_b and speaker not in (speaker_a, speaker_b):
                log.add(doc.at(key, index), f"field 'speaker': '{speaker}' is neither {speaker_a} nor {speaker_b}")
            seen_ids.add(dia_id)
            caption = turn.get("blip_caption") or ""
            turns.append(ParsedTurn(dia_id, speaker, text, caption if isinstance(caption, str) else ""))
        sessions.append(ParsedSession(number, date_raw, date_time, turns))
    if speaker_a is None or speaker_b is None or not speakers_fit:
        return None
    return ParsedConversation(external_id, speaker_a, speaker_b, sessions, where)


def parse_locomo_path(path: Path, log: ErrorLog) -> list[ParsedConversation]:
    """A folder of '26.json' files (conv-26, …), one such file, or one locomo10.json list."""
    conversations: list[ParsedConversation] = []
    if path.is_dir():
        files = sorted((p for p in path.iterdir() if LOCOMO_FILE.match(p.name)), key=lambda p: int(p.stem))
        if not files:
            raise ImportFailed([f"{path}: no conversation files named like 26.json in this folder"])
    else:
        files = [path]
    for file in files:
        try:
            doc, data = read_json_document(file)
        except ImportFailed as exc:
            for error in exc.errors:
                where, message = error.split(": ", 1)
                log.add(where, message)
            continue
        if isinstance(data, list):
            conversations += _parse_locomo_list(data, doc, log)
        elif LOCOMO_FILE.match(file.name):
            if problem := conversation_id_problem(f"conv-{file.stem}"):
                log.add(f"{file.name}:1", f"the file's name makes its conversation id 'conv-{file.stem[:20]}…' {problem}")
                continue
            parsed = parse_locomo_conversation(data, f"conv-{file.stem}", doc, log)
            if parsed:
                conversations.append(parsed)
        else:
            log.add(f"{file.name}:1", "expected a list of conversations (locomo10.json) or a file named like 26.json")
    return conversations


def _parse_locomo_list(data: list, doc: JsonDocument, log: ErrorLog) -> list[ParsedConversation]:
    conversations: list[ParsedConversation] = []
    seen: set[str] = set()
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            log.add(doc.at(index), "expected an object with sample_id and conversation")
            continue
        sample_id = require_str(entry, "sample_id", doc.at(index), log)
        if sample_id is None:
            continue
        if conversation_id_problem(sample_id):
            check_lengths(entry, {"sample_id": CONVERSATION_ID_MAX}, doc.at(index, "sample_id"), log)
            continue
        if sample_id in seen:
            log.add(doc.at(index, "sample_id"), f"field 'sample_id': duplicate conversation '{sample_id}'")
            continue
        seen.add(sample_id)
        parsed = parse_locomo_conversation(entry.get("conversation"), sample_id, doc.inside(index, "conversation"), log)
        if parsed:
            conversations.append(parsed)
    return conversations


# ---------------------------------------------------------------------------------------------
# TWIST Track B

TWIST_TYPES = {"contradicting", "aligned", "hard_negative"}


@dataclass(slots=True)
class ParsedTwistItem:
    line: int
    external_id: str
    conversation: str
    recipient: str
    gold_type: str
    family: str
    draft: str
    evidence: list[str]
    contradicted_quote: str
    rationale: str
    history_turns: int | None


def _valid_twist_fast(record: dict) -> ParsedTwistItem | None:
    """The same checks as parse_twist_record, for a record that passes all of them, without building
    messages; anything doubtful returns None and gets the full treatment. (Half the parse time at 100k.)"""
    get = record.get
    external_id, conv, speaker, gold_type, draft, evidence = (
        get("id"), get("conv"), get("speaker"), get("type"), get("draft"), get("evidence")
    )
    for value in (external_id, conv, speaker, draft):
        if type(value) is not str or not value or value.isspace():  # `not value.strip()`, without a copy
            return None
    if gold_type not in TWIST_TYPES or type(evidence) is not list or not evidence or len(evidence) > MAX_EVIDENCE:
        return None
    for turn_id in evidence:
        if type(turn_id) is not str or not DIA_ID.match(turn_id):
            return None
    if not external_id.startswith(conv + ":") or len(external_id) > ITEM_ID_MAX:
        return None
    # The batch is a part of the id after the conversation's: only an id with room for a long one is searched.
    if len(external_id) - len(conv) - 2 > BATCH_MAX and len(batch_of(external_id)) > BATCH_MAX:
        return None
    optional = []
    for key in ("family", "contradicted_quote", "rationale"):
        value = get(key)
        if value is None:
            value = ""
        elif type(value) is not str:
            return None
        optional.append(value)
    if len(optional[0]) > FAMILY_MAX:
        return None
    history = get("history_turns")
    if history is not None and (type(history) is not int or history < 0):
        return None
    return ParsedTwistItem(0, external_id, conv, speaker, gold_type, optional[0], draft, list(evidence),
                           optional[1], optional[2], history)


def parse_twist_record(record: dict, source: str, line: int, log: ErrorLog) -> ParsedTwistItem | None:
    fast = _valid_twist_fast(record)
    if fast is not None:
        fast.line = line
        return fast
    where = f"{source}:{line}"
    before = len(log.errors)
    external_id = require_str(record, "id", where, log)
    conv = require_str(record, "conv", where, log)
    speaker = require_str(record, "speaker", where, log)
    gold_type = require_str(record, "type", where, log)
    draft = require_str(record, "draft", where, log)
    if gold_type is not None and gold_type not in TWIST_TYPES:
        log.add(where, f"field 'type' is '{gold_type}', expected one of {', '.join(sorted(TWIST_TYPES))}")
    evidence = record.get("evidence")
    if "evidence" not in record:
        log.add(where, "missing field 'evidence'")
    elif not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        log.add(where, "field 'evidence' must be a list of turn ids such as \"D19:1\"")
        evidence = None
    elif not evidence:
        log.add(where, "field 'evidence' is empty: an item must cite at least one turn")
    elif len(evidence) > MAX_EVIDENCE:
        log.add(where, f"field 'evidence' lists {len(evidence):,} turns; an item cites at most {MAX_EVIDENCE}")
        evidence = None
    else:
        for turn_id in evidence:
            if not DIA_ID.match(turn_id):
                log.add(where, f"field 'evidence': '{turn_id}' is not a turn id of the form D<session>:<turn>")
    if external_id and conv and not external_id.startswith(f"{conv}:"):
        log.add(where, f"field 'id': '{external_id[:ITEM_ID_MAX]}' does not belong to conversation '{conv[:CONVERSATION_ID_MAX]}'")
    if check_lengths(record, TWIST_LIMITS, where, log) and external_id and (problem := batch_problem(external_id)):
        log.add(where, f"field 'id': {problem}")
    family = optional_str(record, "family", where, log)
    quote = optional_str(record, "contradicted_quote", where, log)
    rationale = optional_str(record, "rationale", where, log)
    history = record.get("history_turns")
    if history is not None and (not isinstance(history, int) or isinstance(history, bool) or history < 0):
        log.add(where, f"field 'history_turns' must be a non-negative integer, got {history!r}")
        history = None
    if len(log.errors) > before or log.truncated:
        return None
    return ParsedTwistItem(
        line=line,
        external_id=external_id,
        conversation=conv,
        recipient=speaker,
        gold_type=gold_type,
        family=family,
        draft=draft,
        evidence=list(evidence),
        contradicted_quote=quote,
        rationale=rationale,
        history_turns=history,
    )


@dataclass
class ParsedReject:
    source: str
    line: int
    external_id: str
    conversation: str
    record: dict
    evidence_text: list[str]
    verdict: str
    dropped_by: str


def parse_reject_record(record: dict, source: str, line: int, log: ErrorLog) -> ParsedReject | None:
    where = f"{source}:{line}"
    before = len(log.errors)
    external_id = require_str(record, "id", where, log)
    conv = require_str(record, "conv", where, log)
    verdict = require_str(record, "_verdict", where, log)
    dropped_by = require_str(record, "_dropped_by", where, log)
    check_lengths(record, REJECT_LIMITS, where, log)
    evidence_text = record.get("_evidence_text", [])
    if not isinstance(evidence_text, list) or not all(isinstance(e, str) for e in evidence_text):
        log.add(where, "field '_evidence_text' must be a list of strings")
    if len(log.errors) > before or log.truncated:
        return None
    fields = {k: v for k, v in record.items() if not k.startswith("_")}
    return ParsedReject(source, line, external_id, conv, fields, evidence_text, verdict, dropped_by)


# ---------------------------------------------------------------------------------------------
# Lapse


@dataclass
class ParsedLapseItem:
    line: int
    external_id: str
    request: str
    response: str
    key_fact: str
    hidden: dict


LAPSE_VISIBLE = {"gid", "battery_id", "query", "response", "witness"}


def parse_lapse_record(record: dict, source: str, line: int, log: ErrorLog) -> ParsedLapseItem | None:
    where = f"{source}:{line}"
    before = len(log.errors)
    if "gid" in record:
        external_id = require_str(record, "gid", where, log)
    elif "battery_id" in record:
        external_id = require_str(record, "battery_id", where, log)
    else:
        log.add(where, "missing field 'gid' (gold-set items) or 'battery_id' (scorer battery)")
        external_id = None
    request = require_str(record, "query", where, log)
    response = require_str(record, "response", where, log, allow_empty=True)
    witness = require_str(record, "witness", where, log)
    check_lengths(record, LAPSE_LIMITS, where, log)
    if len(log.errors) > before or log.truncated:
        return None
    hidden = {k: v for k, v in record.items() if k not in LAPSE_VISIBLE}
    return ParsedLapseItem(line, external_id, request, response, witness, hidden)
