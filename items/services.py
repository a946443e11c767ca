"""Writes for the corpus and items: every import is validated in full, then written in one transaction."""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

import protocols
from goldkey.lib.batchdb import collector_paused
from goldkey.lib.bulk import bulk_insert, bulk_inserting_columns
from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    clipped,
    column_length,
    read_json_document,
    read_jsonl,
    text_too_long,
)
from items.models import (
    EVIDENCE_ROLE,
    LICENSE_MAX,
    LOCOMO_LICENSE,
    Benchmark,
    Conversation,
    Evidence,
    GenerationReject,
    Item,
    ItemSet,
    Session,
    Track,
    Turn,
    WorkerPing,
)
from items.parsing import (
    VERDICT_MAX,
    ParsedConversation,
    ParsedLapseItem,
    ParsedReject,
    ParsedTwistItem,
    batch_of,
    conversation_id_problem,
    parse_lapse_record,
    parse_locomo_conversation,
    parse_locomo_path,
    parse_reject_record,
    parse_twist_record,
)
from protocols import lapse, twist_b

# The item kinds these importers write: each importer reads one protocol's released item format.
TWIST_KIND = twist_b.SPEC.item_kind
LAPSE_KIND = lapse.SPEC.item_kind


@dataclass
class ImportReport:
    created: int = 0
    unchanged: int = 0
    rejects_created: int = 0
    rejects_unchanged: int = 0
    # Well-formed candidates the import itself rejected (a gate that needs the corpus, e.g. evidence ids
    # that name no turn): [{"line", "id", "gate", "verdict"}], kept as generation rejects with that verdict.
    gate_rejects: list = field(default_factory=list)
    item_set: str = ""
    dry_run: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def gate_rejects_sentence(gate_rejects: list[dict], source: str = "") -> str:
    """The import report's rejected candidates, one clause each (for the command and the admin)."""
    if not gate_rejects:
        return ""
    where = f"{source}:" if source else "line "
    return f" Rejected by the gates (kept as rejects, with their verdict): {len(gate_rejects)} — " + "; ".join(
        f"{where}{r['line']}: {r['id']}: {r['gate']}: {r['verdict']}" for r in gate_rejects
    ) + "."


TWIST_V1_SCHEMA = "twist-v1"
TWIST_V0_SCHEMA = "twist-v0"


# A Hugging Face licence id ("cc-by-4.0", "cc-by-nc-sa-4.0", "apache-2.0", "other", "unknown").
LICENSE_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def license_checked(value: str) -> str:
    """The licence id an import was given ('' when none), or ImportFailed naming the field."""
    value = value.strip()
    if value and (len(value) > LICENSE_MAX or not LICENSE_ID.match(value)):
        raise ImportFailed([f"field 'license': '{value[:LICENSE_MAX]}' is not a licence id such as cc-by-4.0 "
                            "(lower-case letters, digits, '.', '+', '-')"])
    return value


def item_set_get_or_create(*, name: str, kind: str, license: str = "") -> ItemSet:
    """The item set, created under its protocol's benchmark and track on first use, with the licence the
    import names or else the one its protocol's benchmark declares. An existing set keeps its licence: an
    import naming another one is refused (relicensing is not an import)."""
    license = license_checked(license)
    if problem := text_too_long(name, column_length(ItemSet, "name")):
        raise ImportFailed([f"field 'item_set': {problem}"])
    try:
        filed_under = protocols.for_kind(kind).benchmark
    except protocols.UnknownProtocol as exc:
        raise ImportFailed([str(exc)]) from exc
    benchmark, _ = Benchmark.objects.get_or_create(slug=filed_under.slug, defaults={"name": filed_under.name})
    track, _ = Track.objects.get_or_create(
        benchmark=benchmark, slug=filed_under.track_slug, defaults={"name": filed_under.track_name}
    )
    item_set, created = ItemSet.objects.get_or_create(
        name=name, defaults={"track": track, "kind": kind, "license": license or filed_under.license}
    )
    if not created and item_set.kind != kind:
        raise ImportFailed([f"item set '{name}' holds {item_set.get_kind_display()} items, not {kind}"])
    if not created and license and item_set.license != license:
        if item_set.license:
            raise ImportFailed([f"field 'license': item set '{name}' is recorded under {item_set.license}, "
                                f"not {license}"])
        ItemSet.objects.filter(pk=item_set.pk).update(license=license)
        item_set.license = license
    return item_set


def _item_set_locked(name: str, kind: str, license: str = "") -> ItemSet:
    """The item set, row-locked until the import commits: two imports into one set would otherwise both
    see an item as new and the second would fail on the unique constraint instead of finding it unchanged."""
    item_set = item_set_get_or_create(name=name, kind=kind, license=license)
    return ItemSet.objects.select_for_update().get(pk=item_set.pk)


def _now():
    return timezone.now()


# An item row with every column the bulk insert writes (the database knows no Django defaults): the
# columns a kind does not use are blank, as the model's defaults would make them.
_ITEM_BLANK = {"conversation_id": None, "context_id": None, "gold_label": "", "family": "", "batch": "", "content": {}, "gate_rejected": False}


def _item_row(**values) -> dict:
    return {**_ITEM_BLANK, **values}


def item_content(*, spec: protocols.ProtocolSpec, values: dict, where: str, log: ErrorLog) -> dict | None:
    """An item's content as it is stored: every field of the protocol's schema (its default where `values`
    leaves one out), once the schema has accepted `values`; None after logging, at `where` ("FILE:LINE"),
    each field that does not fit."""
    problems = spec.content_problems(values)
    for problem in problems:
        log.add(where, problem)
    if problems:
        return None
    fields = spec.content_fields
    if len(values) == len(fields):
        # Every field given (the schema forbids others): no default is needed, and building them is pydantic
        # work per item, a fifth of a 100,000-item import's Python time. The same dict, in the same order.
        return {name: values[name] for name in fields}
    return {**spec.content_defaults(), **values}


def _item_ids(item_set: ItemSet) -> dict[str, int]:
    # Unordered: a dict needs no order, and sorting an import's 100,000 ids (the items' default ordering)
    # was half of reading them back.
    return dict(Item.objects.filter(item_set=item_set).order_by().values_list("external_id", "id"))


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""


def _atomic_import(dry_run: bool, write):
    try:
        with transaction.atomic():
            report = write()
            if dry_run:
                report.dry_run = True
                raise _DryRun(report)
    except _DryRun as done:
        return done.args[0]
    return report


# ---------------------------------------------------------------------------------------------
# LoCoMo


def _conversation_content(conv: ParsedConversation) -> tuple:
    """What makes two imports of a conversation the same: speakers, dated sessions, turns in order."""
    return (
        conv.speaker_a,
        conv.speaker_b,
        tuple((s.number, s.date_time_raw) for s in conv.sessions),
        tuple((s.number, t.dia_id, t.speaker, t.text, t.image_caption) for s in conv.sessions for t in s.turns),
    )


def _stored_conversation_content(conversations: list[Conversation]) -> dict[int, tuple]:
    sessions: dict[int, list] = {c.id: [] for c in conversations}
    for conv_id, number, raw in Session.objects.filter(conversation__in=conversations).order_by(
        "conversation_id", "number"
    ).values_list("conversation_id", "number", "date_time_raw"):
        sessions[conv_id].append((number, raw))
    turns: dict[int, list] = {c.id: [] for c in conversations}
    for row in Turn.objects.filter(conversation__in=conversations).order_by("conversation_id", "order").values_list(
        "conversation_id", "session__number", "dia_id", "speaker", "text", "image_caption"
    ):
        turns[row[0]].append(row[1:])
    return {c.id: (c.speaker_a, c.speaker_b, tuple(sessions[c.id]), tuple(turns[c.id])) for c in conversations}


def _conversations_create(
    fresh: list[ParsedConversation], *, license: str, version_of: Conversation | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Write parsed conversations with their sessions and turns (turns through the bulk inserter);
    `meanwhile` (work that does not use the database) runs while the database finishes the turns."""
    if not fresh:
        if meanwhile is not None:
            meanwhile()
        return
    conversations = Conversation.objects.bulk_create(
        Conversation(
            external_id=conv.external_id, speaker_a=conv.speaker_a, speaker_b=conv.speaker_b, license=license,
            version_of=version_of,
        )
        for conv in fresh
    )
    sessions = Session.objects.bulk_create(
        (
            Session(conversation=conversation, number=s.number, date_time_raw=s.date_time_raw, date_time=s.date_time)
            for conversation, conv in zip(conversations, fresh, strict=True)
            for s in conv.sessions
        ),
        batch_size=500,
    )
    session_ids = iter(session.id for session in sessions)
    names = ("conversation_id", "session_id", "dia_id", "speaker", "text", "order", "image_caption")
    rows = []
    for conversation, conv in zip(conversations, fresh, strict=True):
        order = 0
        for s in conv.sessions:
            session_id = next(session_ids)
            for t in s.turns:
                rows.append((conversation.id, session_id, t.dia_id, t.speaker, t.text, order, t.image_caption))
                order += 1
    columns = dict(zip(names, zip(*rows, strict=True), strict=True)) if rows else {name: () for name in names}
    with bulk_inserting_columns(Turn, columns):
        if meanwhile is not None:
            meanwhile()


@collector_paused()  # 60,000 parsed turns and their rows: see collector_paused
def corpus_import_locomo(
    *, path: Path, license: str = "", external_id: str = "", dry_run: bool = False,
    meanwhile: Callable[[], None] | None = None,
) -> ImportReport:
    """LoCoMo conversations: a folder of 26.json-style files, one such file, or a locomo10.json list,
    recorded under `license` (default: LoCoMo's own). `meanwhile`: the caller's work that does not use
    the database (reading another file), run while the database writes the turns; not run if the files
    are refused.

    A conversation already imported with the same content is left alone; with different content, or
    under another licence than the import names, the whole import is refused (turn ids are what items
    cite, so they never change under them). `external_id`: one conversation file of any name, imported under
    that id (an invented conversation, e.g. the demo's)."""
    license = license_checked(license)
    log = ErrorLog()
    parsed = [_parse_one(Path(path), external_id, log)] if external_id else parse_locomo_path(Path(path), log)
    log.raise_if_any()
    existing = {c.external_id: c for c in Conversation.objects.filter(external_id__in=[p.external_id for p in parsed])}
    stored = _stored_conversation_content(list(existing.values())) if existing else {}
    for conv in parsed:
        old = existing.get(conv.external_id)
        if old is not None and stored[old.id] != _conversation_content(conv):
            log.add(conv.source, f"conversation {conv.external_id} is already imported with different content")
        elif old is not None and license and old.license != license:
            log.add(conv.source, f"field 'license': conversation {conv.external_id} is recorded under {old.license}, not {license}")
    log.raise_if_any()

    def write() -> ImportReport:
        report = ImportReport(unchanged=sum(1 for conv in parsed if conv.external_id in existing))
        fresh = [conv for conv in parsed if conv.external_id not in existing]
        _conversations_create(fresh, license=license or LOCOMO_LICENSE, meanwhile=meanwhile)
        report.created = len(fresh)
        return report

    return _atomic_import(dry_run, write)


def _parse_one(path: Path, external_id: str, log: ErrorLog) -> ParsedConversation | None:
    """One LoCoMo-shaped conversation file, whatever its name, as the conversation `external_id`."""
    doc, data = read_json_document(path)
    if problem := conversation_id_problem(external_id):
        log.add(f"{path.name}:1", f"field 'external_id': {problem}")
        return None
    return parse_locomo_conversation(data, external_id, doc, log)


def _version_problems(original: tuple, version: tuple) -> list[str]:
    """Why `version` (a conversation's content, as _conversation_content gives it) is not the original with
    turns added: the speakers, every session's date and every original turn (speaker, text, session) are
    kept, in the same relative order."""
    problems = []
    if original[:2] != version[:2]:
        problems.append("field 'speaker_a'/'speaker_b': a version keeps the original's speakers")
    dates = dict(version[2])
    for number, raw in original[2]:
        if dates.get(number) != raw:
            problems.append(f"field 'session_{number}_date_time': a version keeps the original's session dates")
    kept = {turn[1]: turn for turn in version[3]}
    for turn in original[3]:
        if turn[1] not in kept:
            problems.append(f"turn {turn[1]}: a version keeps every original turn")
        elif kept[turn[1]] != turn:
            problems.append(f"turn {turn[1]}: a version keeps every original turn unchanged")
    original_ids = {turn[1] for turn in original[3]}
    if [turn[1] for turn in version[3] if turn[1] in original_ids] != [turn[1] for turn in original[3] if turn[1] in kept]:
        problems.append("a version keeps the original turns in their order")
    return problems


def corpus_import_version(
    *, path: Path, version_of: str, external_id: str = "", license: str = "", dry_run: bool = False
) -> ImportReport:
    """One LoCoMo-shaped conversation file as a version of the conversation `version_of`: the original with
    turns injected (e.g. the steps of an update chain). It is stored as a conversation of its own, named
    `external_id` (default: the file's name without .json) and pointing at its original, which is never
    edited. Refused unless it only adds turns. Re-importing the same content changes nothing."""
    license = license_checked(license)
    path = Path(path)
    external_id = external_id or path.name.removesuffix(".json")
    original = Conversation.objects.filter(external_id=version_of).first()
    if original is None:
        raise ImportFailed([f"field 'version_of': unknown conversation '{version_of}' (import it with import_locomo first)"])
    if external_id == version_of:
        raise ImportFailed([f"field 'external_id': a version needs a name of its own, not '{version_of}'"])
    log = ErrorLog()
    parsed = _parse_one(path, external_id, log)
    log.raise_if_any()
    content = _conversation_content(parsed)
    for problem in _version_problems(_stored_conversation_content([original])[original.id], content):
        log.add(f"{path.name}:1", problem)
    existing = Conversation.objects.filter(external_id=external_id).first()
    if existing is not None:
        if existing.version_of_id != original.id:
            log.add(f"{path.name}:1", f"conversation {external_id} is already imported, not as a version of {version_of}")
        elif _stored_conversation_content([existing])[existing.id] != content:
            log.add(f"{path.name}:1", f"conversation {external_id} is already imported with different content")
    log.raise_if_any()

    def write() -> ImportReport:
        if existing is not None:
            return ImportReport(unchanged=1)
        _conversations_create([parsed], license=license or original.license, version_of=original)
        return ImportReport(created=1)

    return _atomic_import(dry_run, write)


# ---------------------------------------------------------------------------------------------
# TWIST


def _turn_index(conversation_ids: set[str]) -> tuple[dict[str, Conversation], dict[int, dict[str, int]]]:
    """The named conversations that exist, by external id, and each one's turns: dia_id -> turn id (read
    unordered: a map needs no order, and sorting tens of thousands of turns is most of reading them)."""
    conversations = {c.external_id: c for c in Conversation.objects.filter(external_id__in=conversation_ids)}
    turns: dict[int, dict[str, int]] = {c.id: {} for c in conversations.values()}
    for turn_id, conv_id, dia_id in Turn.objects.filter(conversation__in=conversations.values()).order_by().values_list(
        "id", "conversation_id", "dia_id"
    ):
        turns[conv_id][dia_id] = turn_id
    return conversations, turns


def _twist_fingerprint(item: ParsedTwistItem, history: int | None) -> tuple:
    return (
        item.conversation,
        item.recipient,
        item.draft,
        item.gold_type,
        item.family,
        item.contradicted_quote,
        item.rationale,
        history,
        tuple(item.evidence),
    )


def _history(item: ParsedTwistItem, conversations: dict, turns: dict) -> int:
    """The turns before the draft: as the file gives it, else the whole conversation."""
    if item.history_turns is not None:
        return item.history_turns
    return len(turns[conversations[item.conversation].id])


def _item_rows(parsed: list[ParsedTwistItem], item_set: ItemSet, conversations: dict, turns: dict,
               log: ErrorLog, source: str):
    """The new items' rows, one at a time; an item whose content the schema refuses is logged and left out."""
    now = _now()
    for item in parsed:
        content = item_content(spec=twist_b.SPEC, where=f"{source}:{item.line}", log=log, values={
            "recipient": item.recipient, "draft": item.draft, "contradicted_quote": item.contradicted_quote,
            "rationale": item.rationale, "history_turns": _history(item, conversations, turns),
        })
        if content is None:
            continue
        yield _item_row(
            item_set_id=item_set.id, kind=TWIST_KIND, external_id=item.external_id,
            conversation_id=conversations[item.conversation].id, gold_label=item.gold_type, family=item.family,
            content=content, batch=batch_of(item.external_id), created_at=now,
        )


def _evidence_rows(parsed: list[ParsedTwistItem], item_ids: dict, conversations: dict, turns: dict):
    for source in parsed:
        item_id = item_ids[source.external_id]
        turns_of = turns[conversations[source.conversation].id]
        for position, dia_id in enumerate(source.evidence):
            yield {"item_id": item_id, "turn_id": turns_of[dia_id], "role": EVIDENCE_ROLE,
                   "position": position}


@dataclass
class _TwistFile:
    """A Track B file (and its rejects file) read and checked on its own, before the database is asked
    anything: the candidates, each line's record, and the problems found so far."""

    path: Path
    parsed: list[ParsedTwistItem]
    records: dict[int, dict]
    carries_quotes: bool
    rejects: list[ParsedReject]
    log: ErrorLog


def _read_twist_file(path: Path, rejects_path: Path | None) -> _TwistFile:
    log = ErrorLog()
    parsed: list[ParsedTwistItem] = []
    seen: dict[str, int] = {}
    source = path.name
    carries_quotes = False
    records: dict[int, dict] = {}
    for line, record in read_jsonl(path, log):
        carries_quotes = carries_quotes or "contradicted_quote" in record
        records[line] = record
        item = parse_twist_record(record, source, line, log)
        if item is None:
            continue
        if item.external_id in seen:
            log.add(f"{source}:{line}", f"field 'id': duplicate id '{item.external_id}' (first on line {seen[item.external_id]})")
            continue
        seen[item.external_id] = line
        parsed.append(item)
    if not parsed and not log.errors:
        log.add(f"{path.name}:1", "no items in file")
    rejects = []
    if rejects_path is not None:
        rejects_path = Path(rejects_path)
        reject_seen: set[str] = set()
        for line, record in read_jsonl(rejects_path, log):
            where = f"{rejects_path.name}:{line}"
            reject = parse_reject_record(record, rejects_path.name, line, log)
            if reject is None:
                continue
            if reject.external_id in reject_seen:
                log.add(where, f"field 'id': duplicate id '{reject.external_id}'")
                continue
            reject_seen.add(reject.external_id)
            rejects.append(reject)
    return _TwistFile(path, parsed, records, carries_quotes, rejects, log)


@collector_paused()  # 100,000 records, parsed items and rows: see collector_paused
def items_import_twist(
    *, path: Path, item_set_name: str, rejects_path: Path | None = None, license: str = "", dry_run: bool = False
) -> ImportReport:
    """Track B JSONL, v1 schema or v0 pilot schema (no family, quote or history length), into an item set
    recorded under `license` (default: the TWIST benchmark's)."""
    license = license_checked(license)
    return _import_twist_file(_read_twist_file(Path(path), rejects_path), item_set_name, license, dry_run)


def _import_twist_file(read: _TwistFile, item_set_name: str, license: str, dry_run: bool) -> ImportReport:
    """A Track B file read by _read_twist_file, checked against the conversations and written."""
    path, parsed, records, carries_quotes, rejects, log = (
        read.path, read.parsed, read.records, read.carries_quotes, read.rejects, read.log
    )
    conversations, turns = _turn_index({p.conversation for p in parsed})
    gate_rejected: list[ParsedReject] = []
    kept: list[ParsedTwistItem] = []
    for item in parsed:
        where = f"{path.name}:{item.line}"
        conversation = conversations.get(item.conversation)
        if conversation is None:
            log.add(where, f"field 'conv': unknown conversation '{item.conversation}' (import it with import_locomo first)")
            continue
        if item.recipient not in (conversation.speaker_a, conversation.speaker_b):
            log.add(where, f"field 'speaker': '{item.recipient}' is not a participant of {item.conversation}")
            continue
        turns_of = turns[conversation.id]
        unresolved = [turn_id for turn_id in item.evidence if turn_id not in turns_of]
        if unresolved:
            # Gate (iii), PROTOCOL §5: a well-formed candidate citing a turn the conversation lacks is a
            # defective candidate, not a defective file — rejected and kept with its verdict for audit.
            gate_rejected.append(ParsedReject(
                source=path.name, line=item.line, external_id=item.external_id, conversation=item.conversation,
                record=records[item.line], evidence_text=[], dropped_by="evidence_ids",
                verdict=clipped(f"evidence {', '.join(repr(t) for t in unresolved)} is not a turn of {item.conversation}", VERDICT_MAX),
            ))
            continue
        kept.append(item)
    log.raise_if_any()
    parsed = kept
    if not parsed and not gate_rejected:
        log.add(f"{path.name}:1", "no items in file")
        log.raise_if_any()
    taken = {r.external_id for r in rejects}
    for r in gate_rejected:
        if r.external_id in taken:
            log.add(f"{path.name}:{r.line}", f"field 'id': '{r.external_id}' is also in the rejects file")
    log.raise_if_any()
    rejects = rejects + gate_rejected

    def write() -> ImportReport:
        item_set = _item_set_locked(item_set_name, TWIST_KIND, license)
        schema = TWIST_V1_SCHEMA if carries_quotes else TWIST_V0_SCHEMA
        if item_set.schema and item_set.schema != schema:
            raise ImportFailed([f"{path.name}:1: item set '{item_set.name}' holds {item_set.schema} items; this file is {schema}"])
        if not item_set.schema:
            ItemSet.objects.filter(pk=item_set.pk).update(schema=schema)
        report = ImportReport(item_set=item_set.name)
        existing = {
            row["external_id"]: row
            for row in Item.objects.filter(item_set=item_set).order_by().values(
                "id", "external_id", "conversation__external_id", "gold_label", "family", "content",
            )
        }
        existing_evidence: dict[int, list[str]] = {}
        if existing:
            for item_id, dia_id in Evidence.objects.filter(item__item_set=item_set, role=EVIDENCE_ROLE).order_by("item_id", "position").values_list(
                "item_id", "turn__dia_id"
            ):
                existing_evidence.setdefault(item_id, []).append(dia_id)
        new_parsed: list[ParsedTwistItem] = []
        changed = ErrorLog()
        defaults = twist_b.SPEC.content_defaults()
        for item in parsed:
            old = existing.get(item.external_id)
            if old is None:
                new_parsed.append(item)
                continue
            content = defaults | old["content"]
            old_print = (
                old["conversation__external_id"], content["recipient"], content["draft"], old["gold_label"],
                old["family"], content["contradicted_quote"], content["rationale"], content["history_turns"],
                tuple(existing_evidence.get(old["id"], [])),
            )
            if old_print != _twist_fingerprint(item, _history(item, conversations, turns)):
                changed.add(
                    f"{path.name}:{item.line}",
                    f"item '{item.external_id}' is already in '{item_set.name}' with different content "
                    "(corrections to imported items go through errata)",
                )
            report.unchanged += 1
        fresh_rejects: list[ParsedReject] = []
        if rejects:
            known = {
                row[0]: row[1:]
                for row in GenerationReject.objects.filter(item_set=item_set).values_list(
                    "external_id", "conversation_external_id", "record", "evidence_text", "verdict", "dropped_by"
                )
            }
            for r in rejects:
                old = known.get(r.external_id)
                if old is None:
                    fresh_rejects.append(r)
                elif old != (r.conversation, r.record, r.evidence_text, r.verdict, r.dropped_by):
                    changed.add(
                        f"{r.source}:{r.line}",
                        f"reject '{r.external_id}' is already kept with '{item_set.name}' with different content",
                    )
        changed.raise_if_any()
        if new_parsed:
            # The rows are made while they are written (bulk_insert streams them on PostgreSQL); a content
            # problem is logged as it is met and raised once every row was seen, which rolls the import back.
            bulk_insert(Item, _item_rows(new_parsed, item_set, conversations, turns, changed, path.name))
            changed.raise_if_any()
            ids = _item_ids(item_set)
            bulk_insert(Evidence, _evidence_rows(new_parsed, ids, conversations, turns))
        report.created = len(new_parsed)
        if fresh_rejects:
            GenerationReject.objects.bulk_create(
                GenerationReject(
                    item_set=item_set,
                    external_id=r.external_id,
                    conversation_external_id=r.conversation,
                    record=r.record,
                    evidence_text=r.evidence_text,
                    verdict=r.verdict,
                    dropped_by=r.dropped_by,
                )
                for r in fresh_rejects
            )
        report.rejects_created = len(fresh_rejects)
        report.rejects_unchanged = len(rejects) - len(fresh_rejects)
        report.gate_rejects = [
            {"line": r.line, "id": r.external_id, "gate": r.dropped_by, "verdict": r.verdict} for r in gate_rejected
        ]
        return report

    return _atomic_import(dry_run, write)


@dataclass
class ReleaseImportReport:
    conversations: ImportReport
    items: ImportReport
    dry_run: bool = False

    def as_dict(self) -> dict:
        return self.items.as_dict() | {
            "dry_run": self.dry_run,
            "conversations": {"created": self.conversations.created, "unchanged": self.conversations.unchanged},
        }


@collector_paused()  # the conversations' and the items' records, parsed items and rows: see collector_paused
def release_import_twist(
    *, path: Path, conversations_path: Path, item_set_name: str, rejects_path: Path | None = None,
    license: str = "", conversations_license: str = "", dry_run: bool = False,
) -> ReleaseImportReport:
    """The LoCoMo conversations (`conversations_path`, as `corpus_import_locomo` reads it, under
    `conversations_license`, by default LoCoMo's own)
    and the Track B items citing them (as `items_import_twist`), in one transaction: both written, or neither
    (an item file refused leaves the conversations unwritten too). One process instead of two saves a
    command's start-up, most of a second of a 100,000-item import."""

    license = license_checked(license)

    def write() -> ReleaseImportReport:
        # The item file is read while the database writes the conversations' turns: its Python work then
        # runs beside the database's on the other core instead of after it (about a quarter of a second of
        # a 100,000-item import).
        read: list[_TwistFile] = []
        conversations = corpus_import_locomo(
            path=conversations_path, license=conversations_license,
            meanwhile=lambda: read.append(_read_twist_file(Path(path), rejects_path)),
        )
        items = _import_twist_file(read[0], item_set_name, license, dry_run=False)
        return ReleaseImportReport(conversations=conversations, items=items)

    return _atomic_import(dry_run, write)


# ---------------------------------------------------------------------------------------------
# Lapse


def _lapse_fingerprint(item: ParsedLapseItem) -> tuple:
    return (item.request, item.response, item.key_fact, item.hidden)


def items_import_lapse(*, path: Path, item_set_name: str, license: str = "", dry_run: bool = False) -> ImportReport:
    """Lapse JSONL: gold-set items (gid, query, response, witness, …) or the scorer battery (battery_id, …),
    into an item set recorded under `license` (default: the Lapse benchmark's)."""
    license = license_checked(license)
    path = Path(path)
    log = ErrorLog()
    parsed: list[ParsedLapseItem] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        item = parse_lapse_record(record, path.name, line, log)
        if item is None:
            continue
        if item.external_id in seen:
            log.add(where, f"field 'id': duplicate id '{item.external_id}' (first on line {seen[item.external_id]})")
            continue
        seen[item.external_id] = line
        parsed.append(item)
    if not parsed and not log.errors:
        log.add(f"{path.name}:1", "no items in file")
    log.raise_if_any()
    return _atomic_import(dry_run, lambda: _write_lapse_items(parsed, item_set_name, path.name, license=license))


def lapse_items_create(*, item_set_name: str, items: list[ParsedLapseItem], source: str, text_released: bool = True) -> ImportReport:
    """Create Lapse items built elsewhere (placeholders, stimuli, model outputs); same rules as an import."""
    with transaction.atomic():
        return _write_lapse_items(items, item_set_name, source, text_released=text_released)


def _write_lapse_items(
    parsed: list[ParsedLapseItem], item_set_name: str, source: str, text_released: bool = True, license: str = ""
) -> ImportReport:
    item_set = _item_set_locked(item_set_name, LAPSE_KIND, license)
    report = ImportReport(item_set=item_set.name)
    defaults = lapse.SPEC.content_defaults()
    existing = {
        external_id: defaults | content
        for external_id, content in Item.objects.filter(item_set=item_set).values_list("external_id", "content")
    }
    changed = ErrorLog()
    new_rows = []
    now = _now()
    for item in parsed:
        old = existing.get(item.external_id)
        if old is not None:
            if (old["request"], old["response"], old["key_fact"], old["hidden"]) != _lapse_fingerprint(item):
                changed.add(
                    f"{source}:{item.line}",
                    f"item '{item.external_id}' is already in '{item_set.name}' with different content",
                )
            report.unchanged += 1
            continue
        content = item_content(spec=lapse.SPEC, where=f"{source}:{item.line}", log=changed, values={
            "request": item.request, "response": item.response, "key_fact": item.key_fact,
            "text_released": text_released, "hidden": item.hidden,
        })
        new_rows.append(_item_row(
            item_set_id=item_set.id, kind=LAPSE_KIND, external_id=item.external_id, content=content, created_at=now,
        ))
    changed.raise_if_any()
    if new_rows:
        bulk_insert(Item, new_rows)
    report.created = len(new_rows)
    return report


# ---------------------------------------------------------------------------------------------
# Worker round trip


def worker_ping_record(*, token: str, hostname: str = "") -> WorkerPing:
    """Record that a worker answered ping `token`, with the corpus counts it sees. Idempotent."""
    ping, _ = WorkerPing.objects.get_or_create(
        token=token,
        defaults={
            "hostname": hostname,
            "conversations": Conversation.objects.count(),
            "items": Item.objects.count(),
        },
    )
    return ping
