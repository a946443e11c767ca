"""The TWIST Track C importer: one query over one update chain a line (docs/twist_c.md, "Import shape").

All or nothing for a malformed file: every problem of every line is collected as `FILE:LINE: field: why`
and the import refused before anything is written. A well-formed line whose chain fails a deterministic gate
(`protocols.twist_c.chain.structural_reasons`: steps that do not resolve to their conversation version,
update steps out of record order, the wrong step count, a gold that does not fit its query kind, a step
whose own text does not state its value) is a defective candidate, not a defective file: it is kept as a
generation reject with its reasons, and ships in the release's rejects. Re-importing the same file changes
nothing.
"""

from pathlib import Path

from goldkey.lib.bulk import bulk_insert
from goldkey.lib.jsonio import ErrorLog, clipped, column_length, read_jsonl, text_too_long
from items.models import Conversation, Evidence, GenerationReject, Item, Turn
from items.parsing import VERDICT_MAX
from items.services import (
    ImportReport,
    _atomic_import,
    _item_ids,
    _item_row,
    _item_set_locked,
    _now,
    item_content,
    license_checked,
)
from protocols.twist_c import SPEC
from protocols.twist_c import chain as tc

KIND = SPEC.item_kind
STRUCTURAL_GATE = "chain_structure"  # the verdict's gate name: every deterministic gate of one chain
# The chain schema (protocols/, which knows no app) bounds an id loosely; the item's column is the limit.
ID_MAX = column_length(Item, "external_id")


def chain_turns(conversation_ids) -> dict[int, dict[str, tc.Turn]]:
    """conversation id -> its turns as the chain gates read them (turn id -> session, position, session date,
    speaker, text): one query for every conversation version a file names."""
    turns: dict[int, dict[str, tc.Turn]] = {conversation_id: {} for conversation_id in conversation_ids}
    rows = Turn.objects.filter(conversation_id__in=list(conversation_ids)).order_by("conversation_id", "order").values_list(
        "conversation_id", "dia_id", "session__number", "order", "session__date_time_raw", "speaker", "text"
    )
    for conversation_id, dia_id, session, order, date, speaker, text in rows:
        # The position in the whole conversation orders turns within a session as the position in it does.
        turns[conversation_id][dia_id] = tc.Turn(dia_id, session, order, date, speaker, text)
    return turns


def _fingerprint(conversation_id: int, family: str, gold_label: str, content: dict, cited: list[str]) -> tuple:
    return (conversation_id, family, gold_label, tuple(sorted((k, repr(v)) for k, v in content.items())), tuple(cited))


def items_import_twist_c(
    *, path: Path, item_set_name: str, license: str = "", dry_run: bool = False
) -> ImportReport:
    """Track C chain queries (JSON Lines) into an item set recorded under `license` (default: TWIST's)."""
    license = license_checked(license)
    path = Path(path)
    source = path.name
    log = ErrorLog()
    parsed: list[tuple[int, tc.ChainItem, dict]] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path, log):
        item, problems = tc.validate_record(record)
        for problem in problems:
            log.add(f"{source}:{line}", problem)
        if item is None:
            continue
        if problem := text_too_long(item.id, ID_MAX):
            log.add(f"{source}:{line}", f"id: {problem}")
            continue
        if item.id in seen:
            log.add(f"{source}:{line}", f"id: duplicate id '{item.id}' (first on line {seen[item.id]})")
            continue
        seen[item.id] = line
        parsed.append((line, item, record))
    if not parsed and not log.errors:
        log.add(f"{source}:1", "no items in file")
    log.raise_if_any()
    versions = {
        c.external_id: c
        for c in Conversation.objects.filter(external_id__in={i.conversation_version for _, i, _ in parsed}).select_related("version_of")
    }
    for line, item, _ in parsed:
        version = versions.get(item.conversation_version)
        if version is None:
            log.add(f"{source}:{line}", f"conversation_version: unknown conversation '{item.conversation_version}' (import it "
                    f"with import_locomo --version-of {item.conversation})")
        elif version.external_id != item.conversation and (version.version_of is None or version.version_of.external_id != item.conversation):
            log.add(f"{source}:{line}", f"conversation_version: '{item.conversation_version}' is not a version of '{item.conversation}'")
    log.raise_if_any()
    turns = chain_turns({c.id for c in versions.values()})
    kept: list[tuple[int, tc.ChainItem]] = []
    rejected: list[tuple[int, tc.ChainItem, dict, list[str]]] = []
    for line, item, record in parsed:
        version = versions[item.conversation_version]
        reasons = tc.structural_reasons(item, turns[version.id])
        if reasons:
            rejected.append((line, item, record, reasons))
        else:
            kept.append((line, item))

    def write() -> ImportReport:
        item_set = _item_set_locked(item_set_name, KIND, license)
        report = ImportReport(item_set=item_set.name)
        existing = {
            row[0]: row[1:] for row in Item.objects.filter(item_set=item_set).values_list(
                "external_id", "id", "conversation_id", "family", "gold_label", "content")
        }
        cited: dict[int, list[str]] = {}
        for item_id, dia_id in Evidence.objects.filter(item__item_set=item_set, role=tc.STEP_ROLE).order_by(
            "item_id", "position"
        ).values_list("item_id", "turn__dia_id"):
            cited.setdefault(item_id, []).append(dia_id)
        changed = ErrorLog()
        new_rows, new_items = [], []
        now = _now()
        for line, item in kept:
            where = f"{source}:{line}"
            version = versions[item.conversation_version]
            values = tc.content_of_line(item)
            gold_label = tc.relation_of(item.family)
            old = existing.get(item.id)
            if old is not None:
                old_id, old_conversation, old_family, old_gold, old_content = old
                if _fingerprint(old_conversation, old_family, old_gold, SPEC.content_defaults() | old_content, cited.get(old_id, [])) != \
                        _fingerprint(version.id, item.family, gold_label, SPEC.content_defaults() | values, [s.turn_id for s in item.steps]):
                    changed.add(where, f"id: item '{item.id}' is already in '{item_set.name}' with different content "
                                "(corrections to imported items go through errata)")
                report.unchanged += 1
                continue
            content = item_content(spec=SPEC, values=values, where=where, log=changed)
            new_items.append(item)
            new_rows.append(_item_row(
                item_set_id=item_set.id, kind=KIND, external_id=item.id, conversation_id=version.id,
                gold_label=gold_label, family=item.family, content=content, created_at=now,
            ))
        known = dict(GenerationReject.objects.filter(item_set=item_set).values_list("external_id", "verdict"))
        fresh_rejects = []
        for line, item, record, reasons in rejected:
            verdict = clipped("; ".join(reasons), VERDICT_MAX)
            if item.id in existing:
                changed.add(f"{source}:{line}", f"id: '{item.id}' is already an item of '{item_set.name}'")
            elif item.id not in known:
                fresh_rejects.append((item, record, verdict))
            elif known[item.id] != verdict:
                changed.add(f"{source}:{line}", f"id: reject '{item.id}' is already kept with '{item_set.name}' with another verdict")
        changed.raise_if_any()
        if new_rows:
            bulk_insert(Item, new_rows)
            ids = _item_ids(item_set)
            turn_ids = _turn_ids({versions[item.conversation_version].id for item in new_items})
            bulk_insert(Evidence, (
                {"item_id": ids[item.id], "turn_id": turn_ids[(versions[item.conversation_version].id, step.turn_id)],
                 "role": tc.STEP_ROLE, "position": position}
                for item in new_items for position, step in enumerate(item.steps)
            ))
        GenerationReject.objects.bulk_create(
            GenerationReject(
                item_set=item_set, external_id=item.id, conversation_external_id=item.conversation_version,
                record=record, evidence_text=[f"[{s.date}] {s.speaker}: {s.text}" for s in item.steps],
                verdict=verdict, dropped_by=STRUCTURAL_GATE,
            )
            for item, record, verdict in fresh_rejects
        )
        report.created = len(new_rows)
        report.rejects_created = len(fresh_rejects)
        report.rejects_unchanged = len(rejected) - len(fresh_rejects)
        report.gate_rejects = [
            {"line": line, "id": item.id, "gate": STRUCTURAL_GATE, "verdict": "; ".join(reasons)}
            for line, item, _, reasons in rejected
        ]
        return report

    return _atomic_import(dry_run, write)


def _turn_ids(conversation_ids: set[int]) -> dict[tuple[int, str], int]:
    return {
        (conversation_id, dia_id): turn_id
        for turn_id, conversation_id, dia_id in Turn.objects.filter(conversation_id__in=list(conversation_ids)).values_list(
            "id", "conversation_id", "dia_id")
    }
