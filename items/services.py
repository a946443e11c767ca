"""Writes for the corpus and items: every import is validated in full, then written in one transaction."""

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from items.models import (
    Benchmark,
    Conversation,
    Evidence,
    GenerationReject,
    Item,
    ItemKind,
    ItemSet,
    Session,
    Track,
    Turn,
    WorkerPing,
)
from items.parsing import (
    ErrorLog,
    ImportFailed,
    ParsedLapseItem,
    ParsedTwistItem,
    batch_of,
    parse_lapse_record,
    parse_locomo_path,
    parse_reject_record,
    parse_twist_record,
    read_jsonl,
)

BENCHMARKS = {
    ItemKind.TWIST: ("twist", "TWIST", "track-b", "Track B (draft vetting)"),
    ItemKind.LAPSE: ("lapse", "Lapse", "behaviour", "Behaviour outputs"),
}


@dataclass
class ImportReport:
    created: int = 0
    unchanged: int = 0
    rejects_created: int = 0
    rejects_unchanged: int = 0
    item_set: str = ""
    dry_run: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def item_set_get_or_create(*, name: str, kind: str) -> ItemSet:
    bench_slug, bench_name, track_slug, track_name = BENCHMARKS[kind]
    benchmark, _ = Benchmark.objects.get_or_create(slug=bench_slug, defaults={"name": bench_name})
    track, _ = Track.objects.get_or_create(benchmark=benchmark, slug=track_slug, defaults={"name": track_name})
    item_set, created = ItemSet.objects.get_or_create(name=name, defaults={"track": track, "kind": kind})
    if not created and item_set.kind != kind:
        raise ImportFailed([f"item set '{name}' holds {item_set.get_kind_display()} items, not {kind}"])
    return item_set


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


def corpus_import_locomo(*, path: Path, dry_run: bool = False) -> ImportReport:
    log = ErrorLog()
    parsed = parse_locomo_path(Path(path), log)
    log.raise_if_any()
    existing = {c.external_id: c for c in Conversation.objects.filter(external_id__in=[p.external_id for p in parsed])}
    existing_turns: dict[int, list[tuple[str, str, str]]] = {}
    for conv_id, dia_id, speaker, text in (
        Turn.objects.filter(conversation__in=existing.values())
        .order_by("conversation_id", "order")
        .values_list("conversation_id", "dia_id", "speaker", "text")
    ):
        existing_turns.setdefault(conv_id, []).append((dia_id, speaker, text))
    for conv in parsed:
        old = existing.get(conv.external_id)
        if old is None:
            continue
        new_turns = [(t.dia_id, t.speaker, t.text) for s in conv.sessions for t in s.turns]
        if (old.speaker_a, old.speaker_b) != (conv.speaker_a, conv.speaker_b) or existing_turns.get(old.id) != new_turns:
            log.add(conv.source, f"conversation {conv.external_id} is already imported with different content")
    log.raise_if_any()

    def write() -> ImportReport:
        report = ImportReport()
        for conv in parsed:
            if conv.external_id in existing:
                report.unchanged += 1
                continue
            conversation = Conversation.objects.create(
                external_id=conv.external_id, speaker_a=conv.speaker_a, speaker_b=conv.speaker_b
            )
            sessions = Session.objects.bulk_create(
                Session(conversation=conversation, number=s.number, date_time_raw=s.date_time_raw, date_time=s.date_time)
                for s in conv.sessions
            )
            turns = []
            order = 0
            for session, parsed_session in zip(sessions, conv.sessions, strict=True):
                for t in parsed_session.turns:
                    turns.append(
                        Turn(
                            conversation=conversation,
                            session=session,
                            dia_id=t.dia_id,
                            speaker=t.speaker,
                            text=t.text,
                            order=order,
                            image_caption=t.image_caption,
                        )
                    )
                    order += 1
            Turn.objects.bulk_create(turns, batch_size=2000)
            report.created += 1
        return report

    return _atomic_import(dry_run, write)


# ---------------------------------------------------------------------------------------------
# TWIST


def _turn_index(conversation_ids: set[str]) -> tuple[dict[str, Conversation], dict[tuple[int, str], tuple[int, str]]]:
    conversations = {c.external_id: c for c in Conversation.objects.filter(external_id__in=conversation_ids)}
    turns = {
        (conv_id, dia_id): (turn_id, speaker)
        for turn_id, conv_id, dia_id, speaker in Turn.objects.filter(conversation__in=conversations.values()).values_list(
            "id", "conversation_id", "dia_id", "speaker"
        )
    }
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


def items_import_twist(
    *, path: Path, item_set_name: str, rejects_path: Path | None = None, dry_run: bool = False
) -> ImportReport:
    """Track B JSONL, v1 schema or v0 pilot schema (no family, quote or history length)."""
    path = Path(path)
    log = ErrorLog()
    parsed: list[ParsedTwistItem] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        item = parse_twist_record(record, where, log)
        if item is None:
            continue
        if item.external_id in seen:
            log.add(where, f"duplicate id '{item.external_id}' (first on line {seen[item.external_id]})")
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
            reject = parse_reject_record(record, where, log)
            if reject is None:
                continue
            if reject.external_id in reject_seen:
                log.add(where, f"duplicate id '{reject.external_id}'")
                continue
            reject_seen.add(reject.external_id)
            rejects.append(reject)
    conversations, turns = _turn_index({p.conversation for p in parsed})
    conv_turn_counts: dict[int, int] = {}
    for conv_id, _ in turns:
        conv_turn_counts[conv_id] = conv_turn_counts.get(conv_id, 0) + 1
    for item in parsed:
        where = f"{path.name}:{item.line}"
        conversation = conversations.get(item.conversation)
        if conversation is None:
            log.add(where, f"field 'conv': unknown conversation '{item.conversation}' (import it with import_locomo first)")
            continue
        if item.recipient not in (conversation.speaker_a, conversation.speaker_b):
            log.add(where, f"field 'speaker': '{item.recipient}' is not a participant of {item.conversation}")
        for turn_id in item.evidence:
            if (conversation.id, turn_id) not in turns:
                log.add(where, f"field 'evidence': '{turn_id}' is not a turn of {item.conversation}")
    log.raise_if_any()

    def write() -> ImportReport:
        item_set = item_set_get_or_create(name=item_set_name, kind=ItemKind.TWIST)
        report = ImportReport(item_set=item_set.name)
        existing = {
            row["external_id"]: row
            for row in Item.objects.filter(item_set=item_set).values(
                "id", "external_id", "conversation__external_id", "recipient", "draft", "gold_type", "family",
                "contradicted_quote", "rationale", "history_turns",
            )
        }
        existing_evidence: dict[int, list[str]] = {}
        if existing:
            for item_id, dia_id in Evidence.objects.filter(item__item_set=item_set).order_by("item_id", "position").values_list(
                "item_id", "turn__dia_id"
            ):
                existing_evidence.setdefault(item_id, []).append(dia_id)
        new_items: list[Item] = []
        new_parsed: list[ParsedTwistItem] = []
        changed = ErrorLog()
        for item in parsed:
            conversation = conversations[item.conversation]
            history = item.history_turns if item.history_turns is not None else conv_turn_counts[conversation.id]
            old = existing.get(item.external_id)
            if old is not None:
                old_print = (
                    old["conversation__external_id"], old["recipient"], old["draft"], old["gold_type"], old["family"],
                    old["contradicted_quote"], old["rationale"], old["history_turns"],
                    tuple(existing_evidence.get(old["id"], [])),
                )
                if old_print != _twist_fingerprint(item, history):
                    changed.add(
                        f"{path.name}:{item.line}",
                        f"item '{item.external_id}' is already in '{item_set.name}' with different content "
                        "(corrections to imported items go through errata)",
                    )
                report.unchanged += 1
                continue
            new_parsed.append(item)
            new_items.append(
                Item(
                    item_set=item_set,
                    kind=ItemKind.TWIST,
                    external_id=item.external_id,
                    conversation=conversation,
                    recipient=item.recipient,
                    draft=item.draft,
                    gold_type=item.gold_type,
                    family=item.family,
                    contradicted_quote=item.contradicted_quote,
                    rationale=item.rationale,
                    history_turns=history,
                    batch=batch_of(item.external_id),
                )
            )
        changed.raise_if_any()
        created = Item.objects.bulk_create(new_items, batch_size=2000)
        Evidence.objects.bulk_create(
            (
                Evidence(item_id=db_item.pk, turn_id=turns[(db_item.conversation_id, dia_id)][0], position=position)
                for db_item, source in zip(created, new_parsed, strict=True)
                for position, dia_id in enumerate(source.evidence)
            ),
            batch_size=5000,
        )
        report.created = len(created)
        if rejects:
            known = set(GenerationReject.objects.filter(item_set=item_set).values_list("external_id", flat=True))
            fresh = [r for r in rejects if r.external_id not in known]
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
                for r in fresh
            )
            report.rejects_created = len(fresh)
            report.rejects_unchanged = len(rejects) - len(fresh)
        return report

    return _atomic_import(dry_run, write)


# ---------------------------------------------------------------------------------------------
# Lapse


def _lapse_fingerprint(item: ParsedLapseItem) -> tuple:
    return (item.request, item.response, item.key_fact, item.hidden)


def items_import_lapse(*, path: Path, item_set_name: str, dry_run: bool = False) -> ImportReport:
    """Lapse JSONL: gold-set items (gid, query, response, witness, …) or the scorer battery (battery_id, …)."""
    path = Path(path)
    log = ErrorLog()
    parsed: list[ParsedLapseItem] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        item = parse_lapse_record(record, where, log)
        if item is None:
            continue
        if item.external_id in seen:
            log.add(where, f"duplicate id '{item.external_id}' (first on line {seen[item.external_id]})")
            continue
        seen[item.external_id] = line
        parsed.append(item)
    if not parsed and not log.errors:
        log.add(f"{path.name}:1", "no items in file")
    log.raise_if_any()
    return _atomic_import(dry_run, lambda: _write_lapse_items(parsed, item_set_name, path.name))


def lapse_items_create(*, item_set_name: str, items: list[ParsedLapseItem], source: str, text_released: bool = True) -> ImportReport:
    """Create Lapse items built elsewhere (placeholders, stimuli, model outputs); same rules as an import."""
    with transaction.atomic():
        return _write_lapse_items(items, item_set_name, source, text_released=text_released)


def _write_lapse_items(parsed: list[ParsedLapseItem], item_set_name: str, source: str, text_released: bool = True) -> ImportReport:
    item_set = item_set_get_or_create(name=item_set_name, kind=ItemKind.LAPSE)
    report = ImportReport(item_set=item_set.name)
    existing = {
        row[0]: row[1:]
        for row in Item.objects.filter(item_set=item_set).values_list("external_id", "request", "response", "key_fact", "hidden")
    }
    changed = ErrorLog()
    new_items = []
    for item in parsed:
        old = existing.get(item.external_id)
        if old is not None:
            if tuple(old) != _lapse_fingerprint(item):
                changed.add(
                    f"{source}:{item.line}",
                    f"item '{item.external_id}' is already in '{item_set.name}' with different content",
                )
            report.unchanged += 1
            continue
        new_items.append(
            Item(
                item_set=item_set,
                kind=ItemKind.LAPSE,
                external_id=item.external_id,
                request=item.request,
                response=item.response,
                key_fact=item.key_fact,
                hidden=item.hidden,
                text_released=text_released,
            )
        )
    changed.raise_if_any()
    report.created = len(Item.objects.bulk_create(new_items, batch_size=2000))
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
