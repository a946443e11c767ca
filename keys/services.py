"""Writes for gold keys and errata: build, freeze, verify, file, decide, derive.

Every path (command, admin action, web page, API) calls these. Freezing is irreversible: once a key
is frozen the database refuses any change to it or its entries (keys/triggers.py).
"""

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from types import SimpleNamespace

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

import protocols
from adjudication.selectors import CampaignSnapshot, campaign_snapshot, collector_paused
from annotation.models import Assignment, Campaign, Enrollment
from annotation.services import campaign_create, campaign_lock, campaign_mark_frozen
from council.gates import STRUCTURAL, STRUCTURAL_GATES
from goldkey import roles
from goldkey.errors import ApplicationError, NotAllowed, NotFound
from goldkey.lib.batchdb import batch_reads
from goldkey.lib.bulk import bulk_inserting_columns
from goldkey.lib.forked import in_fork, worth_forking
from items.models import EVIDENCE_ROLE, Item, Turn
from keys.bundle import AnswerTrail, answer_trail
from keys.canonical import contents_bytes, entry_content, key_contents, sha256_hex
from keys.leakage import key_leakage_record
from keys.models import (
    VERSION_MAX_LENGTH,
    VERSION_PATTERN,
    Erratum,
    GoldKey,
    KeyEntry,
    KeyPublication,
    Provenance,
    Release,
    ReliabilityPass,
)
from keys.releases import release_drift, release_seal
from keys.selectors import (
    EntryRow,
    Sealing,
    agreement_figures,
    answer_documents,
    answers_exported,
    campaign_manifest,
    item_set_evidence,
    key_canonical_bytes,
    key_counts,
    key_entries,
    key_get,
    key_lineage,
    manifest_sections,
    question_entries,
)

# Other spellings of "how the label was reached" that callers pass, mapped to the recorded provenance.
# Plain strings, as the entries read back hold them: the canonical writer takes its fast path on plain
# values only (keys/canonical.py).
HOW = {p.value: p.value for p in Provenance}
HOW.update({"unanimous": Provenance.KEPT_UNANIMOUS.value, "not_queued": Provenance.KEPT_UNANIMOUS.value,
            "kept": Provenance.KEPT_AFTER_ADJUDICATION.value, "adjudicated": Provenance.KEPT_AFTER_ADJUDICATION.value,
            "relabel": Provenance.RELABELLED.value, "relabeled": Provenance.RELABELLED.value})


# The coarse stages a long build, freeze or derive reports through its `progress` callback (a job's page
# shows them). The default reports nowhere: the callback never changes what is written.
READING, CHECKING, WRITING, SEALING = "reading the campaign", "checking the draft", "writing the entries", "sealing the release"
APPLYING = "applying the errata"


def _no_progress(stage: str) -> None:
    return None


def _valid_gold(kind: str) -> tuple[str, ...]:
    return protocols.for_kind(kind).gold_values


def _entries_from_campaign(
    snapshot: CampaignSnapshot, key: GoldKey, evidence: dict[int, list[str]] | None = None
) -> list[EntryRow]:
    """The key's entries as light rows (EntryRow, written by _entries_inserting with the key's id; no model
    instances), from the snapshot's queue and retained set (light item rows: full Items for a
    100,000-item campaign would cost more than the rest of the freeze). `evidence`: the item set's
    (`item_set_evidence`), if the caller has read it."""
    campaign = snapshot.campaign
    undecided = snapshot.undecided
    if undecided:
        ids = sorted(entry.item.external_id for entry in undecided)
        raise ApplicationError(
            f"campaign '{campaign.slug}' has {len(ids)} undecided item(s) in its adjudication queue: decide them first ("
            + ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "") + ")",
            extra={"undecided": ids},
        )
    retained = snapshot.retained
    item_ids = [item.id for item, _, _ in retained]
    # A key never holds a candidate a blocking gate rejected: campaigns do not take them, but the gates
    # may have run after this campaign was created.
    rejected = dict(Item.objects.filter(item_set_id=campaign.item_set_id, gate_rejected=True).values_list("id", "external_id"))
    kept_rejected = sorted(rejected[i] for i in item_ids if i in rejected)
    if kept_rejected:
        raise ApplicationError(
            f"{len(kept_rejected)} retained item(s) were rejected by a blocking gate after campaign '{campaign.slug}' "
            f"was created: drop them in adjudication first ({', '.join(kept_rejected)})",
            extra={"gate_rejected": kept_rejected},
        )
    if evidence is None:
        evidence = item_set_evidence(campaign.item_set_id, protocols.get(campaign.protocol).excerpt_role)
    # One query for the quotes: the queue's items come with only the fields it needs.
    spec = protocols.for_kind(key.kind)
    quoted_gold = spec.quoted_gold
    quotes = {
        item_id: quote for item_id, quote in Item.objects.filter(
            item_set_id=campaign.item_set_id, gold_label__in=quoted_gold
        ).order_by().values_list("id", f"content__{spec.quote_field}") if quote
    } if quoted_gold else {}
    details = _content_details(spec, campaign.item_set_id)
    valid = _valid_gold(key.kind)
    for item, gold, _ in retained:
        if gold not in valid:
            raise ApplicationError(f"{item.external_id}: its final gold '{gold}' is not a gold label of this protocol ({', '.join(valid)})")
    # Light rows, as key_entries reads them back (a tuple costs a third of a namespace); an item without
    # evidence shares one empty tuple (records and inserts copy the evidence into lists).
    no_evidence = ()
    entries = [
        EntryRow(item.id, item.external_id, gold, evidence.get(item.id, no_evidence),
                 quotes.get(item.id, "") if gold in quoted_gold else "", item.family, item.history_turns, HOW.get(how, how),
                 details.get(item.id))
        for item, gold, how in retained
    ]
    if not entries:
        raise ApplicationError(f"campaign '{campaign.slug}' retains no items: nothing to freeze")
    return entries




def _content_details(spec, item_set_id: int, item_ids=None) -> dict[int, dict]:
    """{item id: its entry's detail}: the content fields the protocol freezes into its key entries
    (ProtocolSpec.key_content_fields), in one query; {} when it freezes none. A field the item leaves to the
    shared context it cites (a LongMemEval question's gold answer) is the context's, as `content_of` reads it."""
    fields = spec.key_content_fields()
    if not fields:
        return {}
    rows = Item.objects.filter(item_set_id=item_set_id, **({"id__in": item_ids} if item_ids is not None else {}))
    shared = set(spec.context.model_fields) if spec.context is not None else set()
    columns = [f"content__{f}" for f in fields] + [f"context__content__{f}" for f in fields if f in shared]
    details = {}
    for item_id, *values in rows.order_by().values_list("id", *columns):
        own, from_context = values[:len(fields)], iter(values[len(fields):])
        context = {f: next(from_context) for f in fields if f in shared}
        details[item_id] = {f: context.get(f) if value is None else value for f, value in zip(fields, own, strict=True)}
    return details


@contextmanager
def _entries_inserting(entries, *, key_id: int | None = None) -> Iterator[None]:
    """Write entries through the one bulk inserter, column by column: bulk_create spends most of a
    100,000-entry freeze preparing 900,000 field values one by one, and a dict per row cost more than
    the values. Same columns, same JSON, same database triggers. `key_id`: the key of every entry, for
    entries that do not carry one (a derive copies its parent's rows as read). The block runs while
    the database finishes the insert, and may not query (bulk_inserting_columns)."""
    entries = list(entries)
    names = ("item_id", "external_id", "gold", "quote", "family", "history_turns", "provenance", "detail")
    columns = {name: list(map(attrgetter(name), entries)) for name in names}
    columns["key_id"] = [key_id] * len(entries) if key_id is not None else list(map(attrgetter("key_id"), entries))
    columns["evidence"] = list(map(list, map(attrgetter("evidence"), entries)))
    with bulk_inserting_columns(KeyEntry, columns):
        yield


# The freezing services keep the collector paused (collector_paused() as a decorator, outside their
# transaction) until they have returned: by then the snapshot, entries and bundle data (a few hundred
# thousand acyclic objects) are freed, so the full pass their allocation earned walks only what is still
# alive, instead of walking them once more at the end of each stage (0.3-0.5 s for a 100,000-item key).


def _require_author(user) -> None:
    roles.require_author(user, message="only authors may build, freeze or derive gold keys and decide errata")


@collector_paused()
@transaction.atomic
def key_build(
    *, campaign: Campaign, version: str, user, notes: str = "", progress: Callable[[str], None] = _no_progress
) -> GoldKey:
    """A draft key from the campaign's decided queue (rebuilt if a draft of that version exists). Only
    from a closed campaign: while annotators work, the queue and the kept set are not settled."""
    return _build(campaign=campaign, version=version, user=user, notes=notes, sealed=False, progress=progress).key


@dataclass
class _Built:
    """A key just written, with what it was written from: the freeze in the same transaction seals its
    release from that instead of reading 100,000 rows back."""

    key: GoldKey
    sealing: Sealing


def key_version_check(*, version: str) -> None:
    """A new key's version is plain (keys.models.VERSION_PATTERN), or it is refused naming what is wrong.
    Checked before any query: PostgreSQL refuses a NUL in a query parameter with a server error."""
    if isinstance(version, str) and len(version) <= VERSION_MAX_LENGTH and VERSION_PATTERN.fullmatch(version):
        return
    shown = str(version).encode("unicode_escape").decode("ascii")[:80]  # a NUL or a newline shown, not sent
    if isinstance(version, str) and len(version) > VERSION_MAX_LENGTH:
        raise ApplicationError(f"key version '{shown}…' is longer than {VERSION_MAX_LENGTH} characters")
    raise ApplicationError(f"'{shown}' is not a key version: a letter or digit, then letters, digits and . _ + - "
                           "(no spaces, slashes or control characters), e.g. TWIST-v1.0")


def _build(
    *, campaign: Campaign, version: str, user, notes: str, sealed: bool = True, progress: Callable[[str], None] = _no_progress
) -> _Built:
    """`sealed`: a release is sealed from what is built (the freeze), so the whole answers are kept for it."""
    _require_author(user)
    key_version_check(version=version)
    existing = GoldKey.objects.select_for_update().filter(version=version).first()
    if existing is not None and existing.is_frozen:
        raise ApplicationError(f"key '{version}' is already frozen (frozen keys never change; file an erratum)")
    campaign_lock(campaign=campaign, status=Campaign.Status.CLOSED, doing="build a key")
    if ReliabilityPass.objects.filter(campaign=campaign).exists():
        raise ApplicationError(f"campaign '{campaign.slug}' is a reliability pass over a frozen key: it measures that key, it makes none")
    # One key line per campaign: its first version is built from it; later versions derive from that.
    other = GoldKey.objects.filter(campaign=campaign, parent__isnull=True).exclude(version=version).first()
    if other is not None:
        raise ApplicationError(
            f"campaign '{campaign.slug}' already has key line '{other.version}': rebuild that draft, or derive from it"
        )
    if existing is not None:
        if existing.campaign_id != campaign.pk:
            raise ApplicationError(f"draft key '{version}' belongs to another campaign")
        existing.entries.all().delete()
        key = existing
    else:
        key = GoldKey.objects.create(
            benchmark=campaign.item_set.track.benchmark,
            kind=campaign.item_set.kind,
            version=version,
            campaign=campaign,
            created_by=user,
            notes=notes,
        )
    # The campaign, the entries and their records: acyclic, 100,000s of objects, read in one batch.
    with batch_reads(), collector_paused():
        progress(READING)
        snapshot = campaign_snapshot(campaign, full_answers=sealed)  # the answers read once, for the release too
        # The agreement figures and the release's answer files (from the whole answers the snapshot kept
        # for it) are pure Python over the snapshot: for a large campaign, computed in a forked process
        # while this one reads the evidence, writes the entries and the key's bytes.
        exported = answers_exported(campaign) if sealed else None
        part = partial(_figures_and_trail, campaign, snapshot, exported, key.kind)
        with in_fork(part, fork=worth_forking(len(snapshot.data.items))) as figures_and_trail:
            evidence = item_set_evidence(campaign.item_set_id, protocols.get(campaign.protocol).excerpt_role)  # for the entries, and the release's candidates
            entries = _entries_from_campaign(snapshot, key, evidence)
            progress(WRITING)
            # The key's records and bytes are pure Python: built while the database writes the entries.
            with _entries_inserting(entries, key_id=key.pk):
                counts = _counts(entries)
                contents = key_contents(key.kind, entries)  # each entry's record built once, for the hash and the release
                content = contents_bytes(version, contents)
                key.sha256 = sha256_hex(content)
            agreement, answer_trail = figures_and_trail.result()
            key.manifest = {
                "key_version": version,
                "entries": len(entries),
                **campaign_manifest(snapshot, {e.item_id for e in entries}, counts, agreement=agreement),
            }
    key.notes = notes or key.notes
    key.save()
    return _Built(key, Sealing(contents, content, evidence, snapshot.data.full_answers, answer_trail))


def _figures_and_trail(campaign: Campaign, snapshot: CampaignSnapshot, exported: dict | None, kind: str) -> tuple[dict, AnswerTrail | None]:
    """The snapshot's agreement figures and, when `exported` is given (answers_exported, read first: this
    runs no query), the release's answer files from the snapshot's whole answers."""
    figures = agreement_figures(campaign, snapshot=snapshot)
    if exported is None:
        return figures, None
    external_ids = {item.id: item.external_id for item in snapshot.data.items}
    return figures, answer_trail(answer_documents(snapshot.data.full_answers, external_ids, exported), kind)


def _counts(entries) -> dict:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.gold] = counts.get(e.gold, 0) + 1
    return dict(sorted(counts.items()))


def _freeze(key: GoldKey, user, *, sha256: str | None = None) -> GoldKey:
    """Freeze a draft. `sha256` may be passed when the entries were written in this same transaction
    from the objects it was computed over; otherwise it is recomputed from the stored entries."""
    digest = sha256 or sha256_hex(key_canonical_bytes(key))
    now = timezone.now()
    manifest = {k: v for k, v in key.manifest.items() if k != "leakage"}  # a derived key's is its own, not its parent's
    # The shortcut-leakage audit on the entries as sealed (PROTOCOL §6), for a protocol that declares one:
    # keys frozen before it was recorded have none, and their sealed releases stay as they were.
    leakage = key_leakage_record(key=key)
    if leakage is not None:
        manifest["leakage"] = leakage
    manifest.update({"sha256": digest, "frozen_at": now.isoformat().replace("+00:00", "Z")})
    # Conditional UPDATE: only a draft turns frozen, and only once (a concurrent freeze updates 0 rows).
    updated = GoldKey.objects.filter(pk=key.pk, status=GoldKey.Status.DRAFT).update(
        status=GoldKey.Status.FROZEN, sha256=digest, frozen_at=now, frozen_by=user, manifest=manifest
    )
    if updated != 1:
        raise ApplicationError(f"key '{key.version}' was frozen meanwhile")
    key.refresh_from_db()
    return key


@collector_paused()
@transaction.atomic
def key_freeze(*, campaign: Campaign, version: str, user, notes: str = "",
               on_sealed_file: Callable[[str, bytes], None] | None = None) -> GoldKey:
    """Freeze `version` from the campaign's fully decided queue, and the campaign with it. Irreversible.
    Only a closed campaign freezes: annotators are done and no decision can land meanwhile (the
    campaign row stays locked until this transaction commits). `on_sealed_file(path, content)`: given
    each file of the sealed release as it is rendered (release_seal's `on_file`); they are the release
    only once this commits."""
    _require_author(user)
    built = _build(campaign=campaign, version=version, user=user, notes=notes)
    key = _freeze(built.key, user, sha256=built.key.sha256)
    campaign_mark_frozen(campaign=campaign)
    release_seal(key=key, sealing=built.sealing, on_file=on_sealed_file)
    return key


@collector_paused()
@transaction.atomic
def key_freeze_draft(*, key: GoldKey, user, progress: Callable[[str], None] = _no_progress) -> GoldKey:
    """Freeze a draft exactly as it was built and reviewed (the admin's action): refused when the
    campaign's decisions changed since, so that what is frozen is what the author looked at."""
    _require_author(user)
    if key.is_frozen:
        raise ApplicationError(f"key '{key.version}' is already frozen")
    if key.campaign_id is None:
        raise ApplicationError(f"draft '{key.version}' has no campaign; build drafts from a campaign")
    campaign = campaign_lock(campaign=key.campaign, status=Campaign.Status.CLOSED, doing="freeze a key")
    progress(READING)
    with batch_reads():
        evidence = item_set_evidence(campaign.item_set_id, protocols.get(campaign.protocol).excerpt_role)
        snapshot = campaign_snapshot(campaign, full_answers=True)
        current = _entries_from_campaign(snapshot, key, evidence)
    progress(CHECKING)
    contents = key_contents(key.kind, current)
    content = contents_bytes(key.version, contents)
    if sha256_hex(content) != key.sha256:
        raise ApplicationError(
            f"the decisions of '{campaign.slug}' changed since draft '{key.version}' was built: rebuild it and review it again"
        )
    key = _freeze(key, user)
    campaign_mark_frozen(campaign=campaign)
    progress(SEALING)
    # The draft's rows were checked against its hash by _freeze; `current` renders the same bytes.
    release_seal(key=key, sealing=Sealing(contents, content, evidence, snapshot.data.full_answers))
    return key


@transaction.atomic
def key_publish(*, key: GoldKey, user) -> KeyPublication:
    """Make a frozen key public. A frozen key is sealed but embargoed until then: its pages, files and API
    are for authors only. Refused while anyone still has open work on one of its items in another campaign
    (a reliability pass over it): signed out, they could read the gold they are measured against."""
    _require_author(user)
    # Locked so that a pass started at the same moment (reliability_pass_create locks it too) is seen.
    locked = GoldKey.objects.select_for_update().filter(pk=key.pk).first()
    if locked is None or not locked.is_frozen:
        raise ApplicationError(f"key '{key.version}' is a draft: freeze it before publishing it")
    if KeyPublication.objects.filter(key=locked).exists():
        raise ApplicationError(f"key '{key.version}' is already published")
    still_open = (
        Assignment.objects.filter(
            item_id__in=KeyEntry.objects.filter(key=locked).values("item_id"),
            enrollment__submitted_at__isnull=True, enrollment__ended_at__isnull=True,
        ).exclude(enrollment__campaign_id=locked.campaign_id)
        .values_list("enrollment__campaign__slug", flat=True).first()
    )
    if still_open is not None:
        raise ApplicationError(
            f"campaign '{still_open}' still has open work on items of this key (a reliability pass, or another "
            "campaign over them): publish the key once its annotators have handed in, or their work has been ended"
        )
    return KeyPublication.objects.create(key=locked, published_by=user)


def key_verify(*, version: str) -> dict:
    """Recompute the key's hash from its entries and compare it with the recorded one; for a frozen key
    also check its sealed release against its manifest, and the live rows it was rendered from (items,
    answers, decisions, council votes) against the sealed copy. `drift` names everything that moved."""
    key = key_get(version)
    computed = sha256_hex(key_canonical_bytes(key))
    hash_ok = bool(key.sha256) and computed == key.sha256
    drift = [] if hash_ok else [f"entries: key.jsonl: the entries hash to {computed}, not the recorded {key.sha256 or '-'}"]
    release = Release.objects.filter(key=key).first()
    if not key.is_frozen and (release is not None or key.frozen_at is not None):
        # Only a write behind Goldkey's back turns a frozen key into a draft: drafts can be rebuilt.
        drift.append("key: its status is draft, but it was frozen"
                     + (f" at {key.frozen_at.isoformat()}" if key.frozen_at else "")
                     + (" and has a sealed release" if release is not None else ""))
    drift += _errata_drift(key)
    gone = _items_gone(key)
    drift += [f"items: {what} no longer exists" for what in gone]
    if key.is_frozen or release is not None:
        if release is None:
            drift.append("release: the key has no sealed release")
        else:
            drift += [str(d) for d in release_drift(key=key, render_live=not gone)
                      if not (d.where == "entries" and not hash_ok)]
    return {
        "version": key.version,
        "status": key.status,
        "recorded": key.sha256,
        "computed": computed,
        "entries": key.entries.count(),
        "release_sha256": release.sha256 if release else None,
        "drift": drift,
        "ok": hash_ok and not drift,
    }


def _has_decision_trail(erratum: Erratum) -> bool:
    """Decided through erratum_decide: by a named author, at a recorded time."""
    return erratum.decided_by_id is not None and erratum.decided_at is not None


def _errata_drift(key: GoldKey) -> list[str]:
    """Errata of the key, or applied in it, that erratum_decide did not decide: an accepted or rejected
    erratum names the author who decided it and when, and only an accepted one is applied."""
    drift = []
    for erratum in Erratum.objects.filter(Q(key=key) | Q(applied_in=key)).order_by("id"):
        if erratum.status != Erratum.Status.FILED and not _has_decision_trail(erratum):
            drift.append(f"errata: erratum {erratum.pk} ({erratum.item_external_id}) is {erratum.status} "
                         "with no decision trail (no deciding author or time)")
        if erratum.applied_in_id is not None and erratum.status != Erratum.Status.ACCEPTED:
            drift.append(f"errata: erratum {erratum.pk} ({erratum.item_external_id}) is applied but {erratum.status}")
    return drift


def _items_gone(key: GoldKey) -> list[str]:
    """The key's entries, and its campaign's assignments, whose item row was deleted (the database refuses
    that; a superuser can lift the refusal)."""
    missing = ~Exists(Item.objects.filter(pk=OuterRef("item_id")))
    gone = [f"entry {external_id}'s item" for external_id in
            KeyEntry.objects.filter(missing, key=key).order_by("external_id").values_list("external_id", flat=True)]
    if key.campaign_id is not None:
        ids = (Assignment.objects.filter(missing, enrollment__campaign_id=key.campaign_id)
               .order_by("item_id").values_list("item_id", flat=True).distinct())
        gone += [f"item {pk}, assigned in campaign {key.campaign.slug}," for pk in ids]
    return gone


# ---------------------------------------------------------------------------------------------
# Errata


def _frozen_key(version: str) -> GoldKey:
    key = key_get(version)
    if not key.is_frozen:
        raise ApplicationError(f"key '{version}' is a draft; errata are filed against frozen keys")
    return key


def _parse_evidence(value: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", value.strip()) if part]


# Errata are public (anyone signed in may report a problem), so one account cannot flood a key's list: it
# may have this many awaiting a decision at once (authors are not limited), and a repeat is refused.
MAX_OPEN_ERRATA_PER_USER = 20


@transaction.atomic
def erratum_file(*, key: GoldKey, item_external_id: str, kind: str, description: str, user, value: str = "") -> Erratum:
    """Any signed-in user may file an erratum against a frozen key."""
    if user is None or not user.is_authenticated:
        raise NotAllowed("sign in to file an erratum")
    if not key.is_frozen:
        raise ApplicationError(f"key '{key.version}' is a draft; errata are filed against frozen keys")
    if kind not in Erratum.Kind.values:
        raise ApplicationError(f"'{kind}' is not a kind of erratum: choose one of {', '.join(Erratum.Kind.values)}")
    description = (description or "").strip()
    if not description:
        raise ApplicationError("describe the problem (description is required)")
    value = (value or "").strip()
    if not roles.is_author(user):
        waiting = Erratum.objects.filter(filed_by=user, status=Erratum.Status.FILED).count()
        if waiting >= MAX_OPEN_ERRATA_PER_USER:
            raise ApplicationError(
                f"you have {waiting} errata awaiting a decision; file more once the authors have decided those",
                status_code=429,
            )
    in_key = KeyEntry.objects.filter(key=key, external_id=item_external_id).select_related("item").first()
    if kind == Erratum.Kind.ADD:
        _added_entry(key, item_external_id, value)  # refuses what cannot be added, naming why
        if in_key is not None:
            raise ApplicationError(f"'{item_external_id}' is already in {key.version}")
    elif kind == Erratum.Kind.RELABEL:
        valid = _valid_gold(key.kind)
        if value not in valid:
            raise ApplicationError(f"a relabel erratum needs the new gold label as its value: one of {', '.join(valid)}")
        if in_key is None and _candidate(key, item_external_id) is None:
            raise ApplicationError(f"'{item_external_id}' is neither in {key.version} nor among its candidates")
        if in_key is not None and in_key.gold == value:
            raise ApplicationError(f"'{item_external_id}' is already '{value}' in {key.version}")
    elif kind == Erratum.Kind.FIX_REFERENCE:
        _reference_field(key)
        if not value:
            raise ApplicationError("a fix-reference erratum needs the corrected reference answer as its value")
        if not question_entries(key, item_external_id):
            raise ApplicationError(f"'{item_external_id}' is not a question that any item of {key.version} cites")
    else:
        if in_key is None:
            raise ApplicationError(f"'{item_external_id}' is not an item of {key.version}")
        if kind == Erratum.Kind.FIX_EVIDENCE:
            ids = _parse_evidence(value)
            if not ids:
                raise ApplicationError("a fix-evidence erratum needs the corrected turn ids as its value, comma-separated (e.g. D1:3,D2:5)")
            known = set(
                Turn.objects.filter(conversation_id=in_key.item.conversation_id, dia_id__in=ids).values_list("dia_id", flat=True)
            )
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise ApplicationError(f"evidence {', '.join(unknown)} is not a turn of the item's conversation")
            value = ",".join(ids)
        elif kind == Erratum.Kind.FIX_QUOTE and not value:
            raise ApplicationError("a fix-quote erratum needs the corrected verbatim quote as its value")
        elif kind == Erratum.Kind.DROP and value:
            raise ApplicationError("a drop erratum takes no value: leave it empty")
    # One open erratum per item and kind (filed, or accepted and not yet applied): two open relabels of
    # one item could only be applied by silently letting the later one win.
    open_one = Erratum.objects.filter(key=key, item_external_id=item_external_id, kind=kind).filter(
        Q(status=Erratum.Status.FILED) | Q(status=Erratum.Status.ACCEPTED, applied_in__isnull=True)
    ).first()
    if open_one is not None:
        if open_one.value == value and open_one.status == Erratum.Status.FILED:
            raise ApplicationError(f"erratum {open_one.pk} already proposes this for '{item_external_id}' and awaits a decision")
        raise ApplicationError(
            f"erratum {open_one.pk} ({open_one.kind}, {open_one.status}) is already open for '{item_external_id}': "
            "one open erratum per item and kind — comment on that one, or file again once it is decided and applied"
        )
    return Erratum.objects.create(
        key=key, item_external_id=item_external_id, kind=kind, value=value, description=description, filed_by=user
    )


def _candidate(key: GoldKey, external_id: str) -> Item | None:
    root = key
    while root.parent_id is not None:
        root = root.parent
    if root.campaign_id is None:
        return None
    return Item.objects.filter(item_set_id=root.campaign.item_set_id, external_id=external_id).first()


def erratum_get(erratum_id: int) -> Erratum:
    erratum = Erratum.objects.select_related("key").filter(pk=erratum_id).first()
    if erratum is None:
        raise NotFound(f"no erratum {erratum_id}")
    return erratum


def _reference_field(key: GoldKey) -> str:
    """The content field a fix-reference erratum corrects in the key's protocol (the shared question's
    reference answer); refused for a protocol whose items share none."""
    spec = protocols.for_kind(key.kind)
    if not spec.reference_field or spec.context is None:
        raise ApplicationError(f"{spec.label} items share no reference answer: a fix-reference erratum does not apply")
    return spec.reference_field


@transaction.atomic
def erratum_decide(*, erratum: Erratum, accept: bool, note: str, user) -> Erratum:
    """An author accepts or rejects a filed erratum, with a note. Decided once. A fix-reference erratum is
    accepted by `erratum_rejudge`, which records each answer's label against the corrected reference."""
    _require_author(user)
    locked = _filed_erratum_locked(erratum)
    if accept and locked.kind == Erratum.Kind.FIX_REFERENCE:
        raise ApplicationError(f"erratum {locked.pk} corrects a reference answer: accept it on its re-judge page, "
                               "where each answer to the question is labelled against the corrected reference")
    return _erratum_decided(locked, accept=accept, note=note, user=user)


def _filed_erratum_locked(erratum: Erratum) -> Erratum:
    """The erratum's row, locked (two authors deciding at once must not both succeed); refused unless it is
    still filed: an erratum is decided once."""
    locked = Erratum.objects.select_for_update().select_related("key").get(pk=erratum.pk)
    if locked.status != Erratum.Status.FILED:
        raise ApplicationError(f"erratum {locked.pk} was already {locked.status}")
    return locked


def _erratum_decided(locked: Erratum, *, accept: bool, note: str, user) -> Erratum:
    """The one transition out of "filed": accepted or rejected, with the deciding author, the time and the note."""
    locked.status = Erratum.Status.ACCEPTED if accept else Erratum.Status.REJECTED
    locked.decision_note = (note or "").strip()
    locked.decided_by = user
    locked.decided_at = timezone.now()
    locked.save()
    return locked


@transaction.atomic
def erratum_rejudge(*, erratum: Erratum, labels: dict[str, str], note: str, user,
                    suggestions: dict[str, str] | None = None, judge: str = "") -> Erratum:
    """An author accepts a fix-reference erratum by confirming, for every entry whose item cites the
    question, its gold label against the corrected reference; an LLM judge's verdicts (`suggestions`, by
    `judge`), if one was asked, are recorded beside them. The derived version takes these labels. All or
    nothing: every answer labelled, each with a gold value of the protocol."""
    _require_author(user)
    locked = _filed_erratum_locked(erratum)
    if locked.kind != Erratum.Kind.FIX_REFERENCE:
        raise ApplicationError(f"erratum {locked.pk} is a {locked.kind} erratum: only a fix-reference erratum is re-judged")
    entries = [e.external_id for e in question_entries(locked.key, locked.item_external_id)]
    valid = _valid_gold(locked.key.kind)
    problems = [f"field 'labels.{name}': '{labels.get(name, '')}' is not one of {', '.join(valid)}"
                for name in entries if labels.get(name) not in valid]
    problems += [f"field 'labels.{name}': not an answer to '{locked.item_external_id}' in {locked.key.version}"
                 for name in sorted(set(labels) - set(entries))]
    if problems:
        raise ApplicationError("; ".join(problems), extra={"errors": problems})
    suggestions = suggestions or {}
    locked.rejudged = {
        name: {"gold": labels[name], "suggested": suggestions.get(name, ""), "judge": judge if suggestions.get(name) else ""}
        for name in entries
    }
    return _erratum_decided(locked, accept=True, note=note, user=user)


def next_version(version: str) -> str:
    """TWIST-v1.0 -> TWIST-v1.1 (the minor number counts errata releases)."""
    match = re.fullmatch(r"(.*?)(\d+)", version)
    if match is None:
        raise ApplicationError(f"cannot tell the next version after '{version}' (it does not end in a number): name the new version")
    return f"{match.group(1)}{int(match.group(2)) + 1}"


@dataclass
class _DerivePlan:
    """What a derive makes, worked out without writing: the errata it applies and, for each item they
    name, the derived entry (absent: dropped). An erratum changes only the entry of the item it names,
    so every other entry of the parent is copied as it is."""

    key: GoldKey  # not saved yet
    errata: list[Erratum]
    named: dict[str, str]  # external id -> its gold in the parent, for the named items the parent holds
    derived: dict[str, KeyEntry]  # external id -> the derived entry, for the named items the new version keeps
    changelog: list[dict]

    def counts(self, parent_counts: dict[str, int]) -> dict[str, int]:
        """The new version's counts by gold, from the parent's (whose entries are not read for this)."""
        counts = dict(parent_counts)
        for gold in self.named.values():
            counts[gold] -= 1
        for entry in self.derived.values():
            counts[entry.gold] = counts.get(entry.gold, 0) + 1
        return dict(sorted((gold, n) for gold, n in counts.items() if n))


def _entry_copy(key: GoldKey, e: KeyEntry) -> KeyEntry:
    return KeyEntry(
        key=key, item_id=e.item_id, external_id=e.external_id, gold=e.gold, evidence=list(e.evidence),
        quote=e.quote, family=e.family, history_turns=e.history_turns, provenance=e.provenance, detail=e.detail,
    )


def _derive_plan(*, parent: GoldKey, version: str, user, notes: str = "", lock: bool) -> _DerivePlan:
    """The derive's every check and the errata applied, reading only the entries they name. `lock`: the
    errata are locked until the caller's transaction ends (the derive; a preview only reads)."""
    _require_author(user)
    key_version_check(version=version)
    if not parent.is_frozen:
        raise ApplicationError(f"key '{parent.version}' is a draft; derive from a frozen key")
    if GoldKey.objects.filter(version=version).exists():
        raise ApplicationError(f"key '{version}' already exists")
    pending = Erratum.objects.filter(key=parent, status=Erratum.Status.ACCEPTED, applied_in__isnull=True).order_by("id")
    errata = list(pending.select_for_update() if lock else pending)
    if not errata:
        raise ApplicationError(f"{parent.version} has no accepted errata waiting to be applied")
    forged = [e.pk for e in errata if not _has_decision_trail(e)]
    if forged:
        raise ApplicationError(f"{parent.version}: accepted errata {', '.join(map(str, forged))} have no decision trail "
                               "(no deciding author or time): they were not accepted through Goldkey (run key_verify)")
    key = GoldKey(
        benchmark=parent.benchmark, kind=parent.kind, version=version, parent=parent,
        campaign=parent.campaign, created_by=user, notes=notes,
    )
    names = sorted({name for e in errata for name in _named_by(e)})
    entries = {e.external_id: _entry_copy(key, e) for e in KeyEntry.objects.filter(key=parent, external_id__in=names)}
    named = {external_id: entry.gold for external_id, entry in entries.items()}
    changelog = []
    for erratum in errata:
        for name in _named_by(erratum):
            before_entry = entries.get(name)
            before = entry_content(key.kind, before_entry) if before_entry else None
            after_entry = _apply(key, erratum, entries, name)
            after = entry_content(key.kind, after_entry) if after_entry else None
            change = {
                "item": name,
                "erratum": erratum.pk,
                "kind": erratum.kind,
                "before": before,
                "after": after,
                "reason": erratum.description,
                "decision_note": erratum.decision_note,
            }
            if erratum.kind == Erratum.Kind.FIX_REFERENCE:
                # The trail of a re-judged answer: the question, its corrected reference, who confirmed the
                # label against it and what the judge suggested.
                change.update({"question": erratum.item_external_id, "reference": erratum.value,
                               "decided_by": erratum.decided_by.get_username(), "rejudged": erratum.rejudged[name]})
            changelog.append(change)
    _check_derived_entries(key, errata, changelog, entries)
    return _DerivePlan(key=key, errata=errata, named=named, derived=entries, changelog=changelog)


@collector_paused()
@transaction.atomic
def key_derive(
    *, parent: GoldKey, version: str, user, notes: str = "", progress: Callable[[str], None] = _no_progress
) -> GoldKey:
    """A new frozen key = parent + its accepted, not yet applied errata, with a per-item changelog."""
    progress(APPLYING)
    plan = _derive_plan(parent=parent, version=version, user=user, notes=notes, lock=True)
    key, errata, changelog = plan.key, plan.errata, plan.changelog
    key.save()
    # The parent's entries in key order, as read (light rows: 100,000 model instances made and copied
    # were a fifth of a derive), each named one replaced by its derived entry (or left out), then the
    # entries the errata added.
    entries = {}
    with batch_reads(), collector_paused():
        for e in key_entries(parent):
            if e.external_id not in plan.named:
                entries[e.external_id] = e
            elif e.external_id in plan.derived:
                entries[e.external_id] = plan.derived[e.external_id]
    for external_id, entry in plan.derived.items():
        entries.setdefault(external_id, entry)
    progress(WRITING)
    with _entries_inserting(entries.values(), key_id=key.pk):
        counts = _counts(entries.values())
        contents = key_contents(key.kind, entries.values())  # built while the database writes the entries
        content = contents_bytes(version, contents)
        key.sha256 = sha256_hex(content)
    key.changelog = changelog
    key.manifest = {
        **{k: v for k, v in parent.manifest.items() if k not in {"sha256", "frozen_at"}},
        "key_version": version,
        "entries": len(entries),
        "counts_by_gold": counts,
        "kept": len(entries),
        "parent": parent.version,
        "parent_sha256": parent.sha256,
        "errata_applied": [e.pk for e in errata],
    }
    if parent.campaign_id is not None:
        key.manifest["agreement"] = agreement_figures(
            parent.campaign, kept_item_ids={e.item_id for e in entries.values()}
        )
        # The protocol's figures against this version's gold (a judge audited against re-judged labels).
        key.manifest.update(manifest_sections(parent.campaign, protocols.for_kind(key.kind),
                                              gold={e.item_id: e.gold for e in entries.values()}))
    key.save()
    key = _freeze(key, user, sha256=key.sha256)
    Erratum.objects.filter(pk__in=[e.pk for e in errata]).update(applied_in=key)
    progress(SEALING)
    # After the errata point at it: the release lists what it applied.
    release_seal(key=key, sealing=Sealing(contents, content))
    return key


class _Cited:
    """An entry's cited turns in the shape the gates read from an item (`item.evidence.all()`)."""

    def __init__(self, turns):
        self._rows = [SimpleNamespace(turn=turn, role=EVIDENCE_ROLE) for turn in turns]

    def all(self):
        return self._rows


def _check_derived_entries(key: GoldKey, errata: list[Erratum], changelog: list[dict], entries: dict) -> None:
    """A derived version's changed and added entries pass the same structural gates as the candidates
    (PROTOCOL §5, §7): evidence that resolves, turns spoken by the recipient, and for a quoted gold a
    quote found verbatim in a cited turn. The gates judge the entry as it will be released, with the
    evidence and quote the errata gave it. Refused whole, naming each erratum and gate."""
    if not protocols.for_kind(key.kind).generation_gates:
        return
    by_item: dict[str, list[str]] = {}
    for erratum in errata:
        for name in _named_by(erratum):
            by_item.setdefault(name, []).append(f"erratum {erratum.pk} ({erratum.kind})")
    problems = []
    for external_id in dict.fromkeys(change["item"] for change in changelog if change["after"] is not None):
        entry = entries.get(external_id)
        if entry is None:
            continue
        item = Item.objects.select_related("conversation", "item_set").get(pk=entry.item_id)
        turns = {
            t.dia_id: t
            for t in Turn.objects.filter(conversation_id=item.conversation_id, dia_id__in=list(entry.evidence)).select_related("session")
        }
        who = f"{external_id} ({', '.join(by_item[external_id])})"
        missing = [d for d in entry.evidence if d not in turns]
        if missing:
            problems.append(f"{who}: evidence_ids: {', '.join(missing)} is not a turn of {item.conversation.external_id}")
            continue
        view = SimpleNamespace(
            recipient=item.recipient, gold_label=entry.gold, item_set=item.item_set, contradicted_quote=entry.quote,
            conversation=item.conversation, conversation_id=item.conversation_id, draft=item.draft,
            evidence=_Cited(turns[d] for d in entry.evidence),
        )
        for gate in STRUCTURAL:
            passed, detail = STRUCTURAL_GATES[gate](view)
            if not passed:
                problems.append(f"{who}: {gate}: {detail}")
    if problems:
        raise ApplicationError(
            f"{key.version} cannot be derived: its entries must pass the structural gates — " + "; ".join(problems),
            extra={"errors": problems},
        )


def key_derive_preview(*, parent: GoldKey, version: str, user) -> dict:
    """What `key_derive` would make, without making it: the changelog, the counts and the problems that
    would refuse it. The derive's own plan (every check, the errata applied, the gates), which reads
    only the entries the errata name: a page view of a 100,000-item key's derive costs what its errata
    cost, and writes nothing."""
    try:
        plan = _derive_plan(parent=parent, version=version, user=user, lock=False)
    except ApplicationError as exc:
        return {"version": version, "changelog": [], "counts": {}, "entries": None,
                "problems": (exc.extra or {}).get("errors") or [exc.message]}
    counts = plan.counts(key_counts(parent))
    return {"version": version, "changelog": plan.changelog, "counts": counts, "entries": sum(counts.values()),
            "problems": []}


def _added_entry(key: GoldKey, external_id: str, source_version: str) -> KeyEntry:
    """The entry an `add` erratum takes: an item kept in another campaign's frozen key of the same
    benchmark and protocol (PROTOCOL §7: a later version may add items annotated in a later campaign)."""
    source = GoldKey.objects.filter(version=source_version).first()
    if source is None or not source.is_frozen:
        raise ApplicationError(
            f"an add erratum needs as its value the frozen key version to take '{external_id}' from"
            + (f" ('{source_version}' is not a frozen key)" if source_version else "")
        )
    if (source.kind, source.benchmark_id) != (key.kind, key.benchmark_id):
        raise ApplicationError(f"{source.version} is a key of another benchmark or protocol than {key.version}")
    if key_lineage(source)[0].campaign_id == key_lineage(key)[0].campaign_id:
        raise ApplicationError(f"{source.version} comes from {key.version}'s own campaign: relabel a candidate instead")
    entry = KeyEntry.objects.filter(key=source, external_id=external_id).first()
    if entry is None:
        raise ApplicationError(f"'{external_id}' is not an item of {source.version}")
    return entry


def _named_by(erratum: Erratum) -> list[str]:
    """The entries an erratum changes: the item it names, or every re-judged answer to the question a
    fix-reference erratum names."""
    if erratum.kind == Erratum.Kind.FIX_REFERENCE:
        return sorted(erratum.rejudged)
    return [erratum.item_external_id]


def _apply(key: GoldKey, erratum: Erratum, entries: dict[str, KeyEntry], name: str) -> KeyEntry | None:
    current = entries.get(name)
    if erratum.kind == Erratum.Kind.FIX_REFERENCE:
        if current is None:
            raise ApplicationError(f"erratum {erratum.pk}: '{name}' is no longer in the key")
        spec = protocols.for_kind(key.kind)
        current.gold = erratum.rejudged[name]["gold"]
        if current.gold not in spec.quoted_gold:
            current.quote = ""
        if spec.reference_field in spec.key_content_fields():
            # The entry carries the reference it was re-judged against (an entry frozen before its protocol
            # froze it takes the rest of its detail from its item).
            detail = current.detail
            if detail is None:
                item_set_id = Item.objects.filter(pk=current.item_id).values_list("item_set_id", flat=True).get()
                detail = _content_details(spec, item_set_id, [current.item_id]).get(current.item_id, {})
            current.detail = {**detail, spec.reference_field: erratum.value}
        current.provenance = Provenance.CHANGED_BY_ERRATUM
        return current
    if erratum.kind == Erratum.Kind.ADD:
        if current is not None:
            raise ApplicationError(f"erratum {erratum.pk}: '{erratum.item_external_id}' is already in the key")
        source = _added_entry(key, erratum.item_external_id, erratum.value)
        added = KeyEntry(
            key=key, item_id=source.item_id, external_id=source.external_id, gold=source.gold,
            evidence=list(source.evidence), quote=source.quote, family=source.family,
            history_turns=source.history_turns, provenance=Provenance.ADDED_BY_ERRATUM, detail=source.detail,
        )
        entries[added.external_id] = added
        return added
    if erratum.kind == Erratum.Kind.DROP:
        entries.pop(erratum.item_external_id, None)
        return None
    if current is None:
        if erratum.kind != Erratum.Kind.RELABEL:
            raise ApplicationError(f"erratum {erratum.pk}: '{erratum.item_external_id}' is no longer in the key")
        item = _candidate(key, erratum.item_external_id)
        if item is None:
            raise ApplicationError(f"erratum {erratum.pk}: unknown item '{erratum.item_external_id}'")
        spec = protocols.for_kind(key.kind)
        evidence = list(item.evidence.filter(role=spec.excerpt_role).order_by("position").values_list("turn__dia_id", flat=True))
        current = KeyEntry(
            key=key, item=item, external_id=item.external_id, gold=erratum.value, evidence=evidence,
            quote=getattr(item, spec.quote_field) if erratum.value in spec.quoted_gold else "",
            family=item.family, history_turns=item.history_turns, provenance=Provenance.ADDED_BY_ERRATUM,
            detail=_content_details(spec, item.item_set_id, [item.id]).get(item.id),
        )
        entries[item.external_id] = current
        return current
    if erratum.kind == Erratum.Kind.RELABEL:
        current.gold = erratum.value
        if erratum.value not in protocols.for_kind(key.kind).quoted_gold:
            current.quote = ""
    elif erratum.kind == Erratum.Kind.FIX_EVIDENCE:
        current.evidence = _parse_evidence(erratum.value)
    elif erratum.kind == Erratum.Kind.FIX_QUOTE:
        current.quote = erratum.value
    if current.provenance != Provenance.ADDED_BY_ERRATUM:
        current.provenance = Provenance.CHANGED_BY_ERRATUM
    return current


@transaction.atomic
def reliability_pass_create(
    *, key: GoldKey, annotators: list, slug: str, user, seed: int | None = None, key_public_acknowledged: bool = False,
) -> ReliabilityPass:
    """A third-annotator pass (PROTOCOL §2, the papers' planned upgrade): a campaign over the frozen key's
    items, each labelled blind by every annotator named, none of whom annotated the key's campaign.

    Blind only while the key is embargoed: on a published key (anyone, signed out, can download its gold)
    it starts only with `key_public_acknowledged`, which the pass records and its report states."""
    _require_author(user)
    if not key.is_frozen:
        raise ApplicationError(f"key '{key.version}' is a draft; a reliability pass measures a frozen key")
    key = GoldKey.objects.select_for_update().get(pk=key.pk)  # against a publication at the same moment
    public = KeyPublication.objects.filter(key=key).exists()
    if public and not key_public_acknowledged:
        raise ApplicationError(
            f"key '{key.version}' is published: its annotators could read the gold they are measured against. "
            "Start the pass on an embargoed key, or acknowledge that the key was public during the pass "
            "(the report records it)"
        )
    root = key_lineage(key)[0]
    if root.campaign_id is None:
        raise ApplicationError(f"key '{key.version}' has no campaign: there are no original annotators to compare with")
    if not annotators:
        raise ApplicationError("name at least one annotator")
    original = set(Enrollment.objects.filter(campaign=root.campaign).values_list("annotator_id", flat=True))
    clash = sorted(a.get_username() for a in annotators if a.pk in original)
    if clash:
        raise ApplicationError(
            f"{', '.join(clash)} annotated '{root.campaign.slug}': an independent estimate needs annotators who did not"
        )
    campaign = campaign_create(
        slug=slug, item_set=root.campaign.item_set, annotators=annotators, per_item=len(annotators), seed=seed,
        name=f"Reliability pass over {key.version}", created_by=user,
        pseudonyms=[f"R{n}" for n in range(1, len(annotators) + 1)],
        item_ids=set(KeyEntry.objects.filter(key=key).values_list("item_id", flat=True)),
    )
    return ReliabilityPass.objects.create(key=key, campaign=campaign, created_by=user, key_public_during_pass=public)
