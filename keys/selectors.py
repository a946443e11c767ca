"""Reads for gold keys: visibility, entries, agreement figures and the plain data of a release bundle."""

import json
from collections import defaultdict, namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from operator import attrgetter
from typing import TYPE_CHECKING

from django.db.models import Count, Exists, F, Max, OuterRef, Q, TextField
from django.db.models.functions import Cast
from django.utils.module_loading import import_string

import protocols
from adjudication.agreement import campaign_agreement, kept_set_kappa
from adjudication.models import Decision
from adjudication.selectors import (
    AnswerDecoder,
    CampaignSnapshot,
    _raw_rows,
    answer_text,
    campaign_snapshot,
    collector_paused,
)
from annotation import access
from annotation.models import Answer, AnswerRevision, Campaign, Enrollment
from council.models import CouncilMember, CouncilVote, GateVerdict
from goldkey import roles
from goldkey.errors import ApplicationError, NotFound
from goldkey.lib import statistics
from goldkey.lib.batchdb import batch_reads
from items.models import (
    EVIDENCE_ROLE,
    LOCOMO_NAME,
    LOCOMO_URL,
    Conversation,
    Evidence,
    GenerationReject,
    Item,
)
from keys.canonical import contents_bytes, key_bytes, key_contents, parent_diff, sha256_hex
from keys.metadata import HfSplit
from keys.models import Erratum, GoldKey, KeyEntry, ReliabilityPass

if TYPE_CHECKING:
    from keys.bundle import AnswerTrail

# ---------------------------------------------------------------------------------------------
# Visibility: published keys are public; drafts and embargoed (frozen, not yet published) keys are for
# authors only; and no key is shown to someone blind to one of its items (annotation.access.blind_items).


def keys_hidden_from(user):
    """The keys `user` may not read, published or not, as a subquery of ids: those with an entry on an
    item they are blind to, or of a campaign holding one (its release carries every answer, dropped items'
    too), and every other version of such a key's line (a derived key's changelog names its parent's gold)."""
    if not user.is_authenticated:
        return GoldKey.objects.none().values("pk")
    showing = KeyEntry.objects.filter(item_id__in=access.blind_items(user)).values("key_id")
    lines = (
        GoldKey.objects.filter(Q(pk__in=showing) | Q(campaign__in=access.blind_campaigns(user)))
        .exclude(campaign=None).values("campaign_id")
    )
    return GoldKey.objects.filter(Q(pk__in=showing) | Q(campaign__in=lines)).values("pk")


def _with_publication(qs):
    """Keys with `published_at` (None: a draft, or frozen and embargoed), read in the same query."""
    return qs.annotate(published_at=F("publication__published_at"))


def keys_for_user(user):
    qs = _with_publication(GoldKey.objects.select_related("benchmark", "parent")).annotate(n_entries=Count("entries"))
    if not roles.is_author(user):
        qs = qs.filter(publication__isnull=False)
    return qs.exclude(pk__in=keys_hidden_from(user)).order_by("benchmark__name", "version")


def get_key_for_user(version: str, user) -> GoldKey:
    """Published keys are public; a draft or an embargoed key is for authors; none for someone blind to
    one of its items. The same 404 for each refusal, in one query."""
    rows = _with_publication(
        GoldKey.objects.select_related("benchmark", "parent", "campaign", "frozen_by").filter(version=version)
    )
    if user.is_authenticated:
        rows = rows.annotate(hidden=Exists(keys_hidden_from(user).filter(pk=OuterRef("pk"))))
    key = rows.first()
    if key is None or getattr(key, "hidden", False) or (key.published_at is None and not roles.is_author(user)):
        raise NotFound(f"no gold key '{version}'")
    return key


def get_erratum_for_user(erratum_id: int, user) -> Erratum:
    """An erratum, if its key is one `user` may read (get_key_for_user): an erratum names its item and the
    gold it would set. The same 404 whether it does not exist or is hidden."""
    erratum = Erratum.objects.select_related("key").filter(pk=erratum_id).first()
    if erratum is None:
        raise NotFound(f"no erratum {erratum_id}")
    try:
        erratum.key = get_key_for_user(erratum.key.version, user)
    except NotFound:
        raise NotFound(f"no erratum {erratum_id}") from None
    return erratum


def campaigns_ready_for_a_key(user) -> list[Campaign]:
    """For an author: closed campaigns with no key line yet, that they are not blind to — where the next
    step is building a draft (the build says which items are still undecided, if any)."""
    if not roles.is_author(user):
        return []
    started = GoldKey.objects.filter(campaign__isnull=False, parent__isnull=True).values("campaign_id")
    return list(
        Campaign.objects.filter(status=Campaign.Status.CLOSED).exclude(pk__in=started)
        .exclude(pk__in=access.blind_campaigns(user)).select_related("item_set").order_by("slug")
    )


def freeze_review(key: GoldKey) -> dict:
    """What an author checks before freezing a draft: the kept-set kappa against the pre-registered bar
    (a key below it may still be frozen, but only knowingly) and the counts."""
    agreement = key.manifest.get("agreement", {}) or {}
    kept = (agreement.get("kappa_kept_set") or {}).get("kappa")
    bar = agreement.get("preregistered_bar")
    return {
        "kept_kappa": kept,
        "bar": bar,
        "below_bar": kept is not None and bar is not None and kept < bar,
        "entries": key.manifest.get("entries"),
        "candidates": key.manifest.get("candidates"),
        "dropped": key.manifest.get("dropped"),
    }


def key_get(version: str) -> GoldKey:
    if "\x00" in version:  # no key has one, and PostgreSQL refuses it in a query with a server error
        raise NotFound(f"no gold key {version!r}")
    key = GoldKey.objects.select_related("benchmark", "parent", "campaign").filter(version=version).first()
    if key is None:
        raise NotFound(f"no gold key '{version}'")
    return key


ENTRY_FIELDS = ("item_id", "external_id", "gold", "evidence", "quote", "family", "history_turns", "provenance", "detail")


EntryRow = namedtuple("EntryRow", ENTRY_FIELDS)


def key_entries(key: GoldKey) -> list[EntryRow]:
    """The entries as light read-only records (no model instances: 100,000 of them are read per export).
    The evidence JSON comes as text and is decoded here: the JSONField converter costs more than the
    decoding itself."""
    rows = (
        KeyEntry.objects.filter(key=key)
        .annotate(evidence_raw=Cast("evidence", TextField()), detail_raw=Cast("detail", TextField()))
        .values_list(*(f"{f}_raw" if f in ("evidence", "detail") else f for f in ENTRY_FIELDS))
    )
    raw = list(_raw_rows(rows))
    # Every entry's evidence (and detail) decoded in one call: a JSON array of the stored texts (each a
    # JSON value, SQL NULL written as null) decodes to the list of their values, at C speed.
    evidence = json.loads("[" + ",".join("null" if row[3] is None else row[3] for row in raw) + "]")
    if any(row[8] is not None for row in raw):
        details = json.loads("[" + ",".join("null" if row[8] is None else row[8] for row in raw) + "]")
    else:
        details = [None] * len(raw)
    entries = [
        EntryRow(item_id, external_id, gold, decoded, quote, family, history, how, detail)
        for (item_id, external_id, gold, _, quote, family, history, how, _), decoded, detail
        in zip(raw, evidence, details, strict=True)
    ]
    entries.sort(key=attrgetter("external_id"))
    return entries


def key_counts(key: GoldKey) -> dict:
    rows = KeyEntry.objects.filter(key=key).values_list("gold").annotate(n=Count("id")).order_by()
    return {gold: n for gold, n in sorted(rows)}


ENTRY_PAGE_SIZE = 50  # rows of a key page's item table


def key_entry_page(key: GoldKey, *, number: int = 0, gold: str = "", size: int = ENTRY_PAGE_SIZE) -> dict:
    """A page of the key's entries in key order (external id), optionally of one gold label: the rows,
    the matching total and the page count, in two queries whatever the key's size."""
    rows = KeyEntry.objects.filter(key=key, **({"gold": gold} if gold else {}))
    total = rows.count()
    pages = max(1, -(-total // size))
    number = min(max(0, number), pages - 1)
    entries = list(
        rows.order_by("external_id").only("external_id", "gold", "provenance", "evidence")[number * size:(number + 1) * size]
    )
    return {"entries": entries, "total": total, "page": number, "pages": pages, "first_number": number * size}


def key_canonical_bytes(key: GoldKey) -> bytes:
    with batch_reads(), collector_paused():  # 100,000 acyclic rows and records
        return key_bytes(key.kind, key.version, key_entries(key))


def key_lineage(key: GoldKey) -> list[GoldKey]:
    """The key and its ancestors, root first."""
    chain = [key]
    while chain[-1].parent_id is not None:
        chain.append(GoldKey.objects.select_related("parent").get(pk=chain[-1].parent_id))
    return list(reversed(chain))


def key_parent_diff(key: GoldKey) -> list[dict]:
    """A derived key's per-item diff from its parent (keys.canonical.parent_diff, read off its changelog:
    no query); [] for the first version of a key line."""
    return parent_diff(key.kind, key.changelog) if key.parent_id else []


def errata_feed(key: GoldKey) -> list[dict]:
    """Every erratum of the key line (all versions from the root down), as the line's public feed."""
    root = key_lineage(key)[0]
    versions, frontier = {root.pk}, [root.pk]
    while frontier:
        frontier = list(GoldKey.objects.filter(parent_id__in=frontier).values_list("pk", flat=True))
        versions.update(frontier)
    return [
        {
            "id": e.pk, "key_version": e.key.version, "item": e.item_external_id, "kind": e.kind, "value": e.value,
            "description": e.description, "status": e.status, "filed_at": _iso(e.filed_at),
            "decided_at": _iso(e.decided_at), "decision_note": e.decision_note,
            "applied_in": e.applied_in.version if e.applied_in_id else None,
        }
        for e in Erratum.objects.filter(key_id__in=versions).select_related("key", "applied_in").order_by("id")
    ]


def errata_for_key(key: GoldKey):
    return Erratum.objects.filter(key=key).select_related("applied_in", "key").order_by("id")


def rejudge_page(erratum: Erratum, *, judge: str = "") -> dict:
    """What an author reads to accept a fix-reference erratum: the question, its released and corrected
    reference, and each answer citing it with its current gold and its own blind fields; with `judge` (a
    council member's name), that judge's verdict on each answer against the corrected reference, asked
    through the protocol's `rejudge_suggestions`."""
    if erratum.kind != Erratum.Kind.FIX_REFERENCE:
        raise ApplicationError(f"erratum {erratum.pk} is a {erratum.kind} erratum: only a fix-reference erratum is re-judged")
    spec = protocols.for_kind(erratum.key.kind)
    entries = question_entries(erratum.key, erratum.item_external_id)
    suggestions, members = {}, []
    if spec.rejudge_suggestions:
        members = list(CouncilMember.objects.order_by("name").values_list("name", flat=True))
        if judge:
            member = CouncilMember.objects.filter(name=judge).first()
            if member is None:
                raise ApplicationError(f"field 'judge': no council member '{judge}'")
            suggestions = import_string(spec.rejudge_suggestions)(erratum=erratum, member=member)
    rows = []
    for entry in entries:
        view = protocols.blind_view(entry.item)
        rows.append({
            "id": entry.external_id, "gold": entry.gold, "suggested": suggestions.get(entry.external_id, ""),
            "fields": [(name, view[name]) for name in spec.blind_fields
                       if name != spec.reference_field and isinstance(view.get(name), str | int) and view.get(name) != ""],
            "rejudged": (erratum.rejudged or {}).get(entry.external_id),
        })
    released = spec.content_of(entries[0].item).get(spec.reference_field, "") if entries else ""
    return {"erratum": erratum, "key": erratum.key, "released": released, "rows": rows, "gold_values": spec.gold_values,
            "members": members, "judge": judge if suggestions else "", "can_suggest": bool(spec.rejudge_suggestions)}


def question_entries(key: GoldKey, question: str) -> list[KeyEntry]:
    """The entries of a key whose items cite the shared question (an `items.Context` external id): what a
    fix-reference erratum of that question re-judges, in id order."""
    return list(
        KeyEntry.objects.filter(key=key, item__context__external_id=question)
        .select_related("item__context").order_by("external_id")
    )


# ---------------------------------------------------------------------------------------------
# Agreement figures (formatting only; every number comes from goldkey.lib.statistics)


def _pick(summary: dict | None, meaning: str = "") -> dict | None:
    if not summary:
        return None
    picked = {k: summary.get(k) for k in ("kappa", "ci95", "ci95_bootstrap", "n", "agree", "observed", "statistic")
              if k in summary}
    if "kappa_n" in summary:
        picked["n"] = summary["kappa_n"]
    picked["meaning"] = summary.get("meaning") or meaning
    return picked


def _gold_verdict_headline(spec, full: dict, snapshot: CampaignSnapshot, kept_item_ids: set[int] | None) -> dict:
    kept = _pick(full.get("retained"))
    if kept_item_ids is not None:
        summary = kept_set_kappa(snapshot.data, kept_item_ids)
        kept = _pick({k: _nan_none(v) for k, v in summary.items()}, (kept or {}).get("meaning", ""))
    return {
        "question": spec.primary_key,
        "kappa_all_candidates": _pick(full.get("q1")),
        "kappa_kept_set": kept,
        "preregistered_bar": (full.get("retained") or {}).get("bar"),
    }


def _label_headline(spec, full: dict, snapshot: CampaignSnapshot, kept_item_ids: set[int] | None) -> dict:
    return {
        "question": spec.primary_key,
        "kappa_all_candidates": _pick(full.get("five_way"), "five-way label agreement, all items"),
        "kappa_binary": _pick(full.get("binary"), spec.binary_label),
    }


# The two headline kappas of each figure set (ProtocolSpec.agreement_figures).
HEADLINES = {"gold_verdict": _gold_verdict_headline, "labels": _label_headline}


def agreement_figures(
    campaign: Campaign, *, snapshot: CampaignSnapshot | None = None, kept_item_ids: set[int] | None = None
) -> dict:
    """The agreement service's figures (adjudication.agreement) with the two headline kappas up front.
    With `kept_item_ids` (a derived key), the kept-set kappa is recomputed over exactly those items."""
    snapshot = snapshot or campaign_snapshot(campaign)
    spec = snapshot.spec
    full = campaign_agreement(campaign, snapshot=snapshot)
    return {**HEADLINES[spec.agreement_figures](spec, full, snapshot, kept_item_ids), "full": full}


def _nan_none(value):
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, list):
        return [_nan_none(v) for v in value]
    return value


def _round(value: float):
    return None if value != value else round(value, 4)  # nan -> null in JSON


def council_pairwise(campaign: Campaign) -> list[dict]:
    key = protocols.get(campaign.protocol).primary_key
    votes: dict[str, dict[int, str]] = defaultdict(dict)
    for member, item_id, values in CouncilVote.objects.filter(campaign=campaign, status=CouncilVote.Status.OK).order_by(
        "created_at", "id"
    ).values_list("member__name", "item_id", "values"):
        votes[member][item_id] = (values or {}).get(key) or None
    out = []
    for m1, m2 in combinations(sorted(votes), 2):
        ids = sorted(set(votes[m1]) | set(votes[m2]))
        a, b = statistics.paired([votes[m1].get(i) for i in ids], [votes[m2].get(i) for i in ids])
        out.append({"members": [m1, m2], "kappa": _round(statistics.cohen_kappa(a, b)), "n": len(a)})
    return out


def gate_summary(item_set) -> dict:
    rows = GateVerdict.objects.filter(item_set=item_set).values_list("gate", "passed").annotate(n=Count("id")).order_by()
    gates: dict[str, dict] = {}
    for gate, passed, n in rows:
        gates.setdefault(gate, {"passed": 0, "failed": 0})["passed" if passed else "failed"] += n
    rejects = dict(
        GenerationReject.objects.filter(item_set=item_set).values_list("dropped_by").annotate(n=Count("id")).order_by()
    )
    return {"gates": dict(sorted(gates.items())), "generation_rejects_by_gate": dict(sorted(rejects.items()))}


def council_members(campaign: Campaign) -> list[dict]:
    """Each member that voted on the campaign, with the models and fingerprints its endpoint reported
    for those votes (a member's configured name is an alias; the reported model is the snapshot)."""
    reported: dict[int, tuple[set, set]] = {}
    for member_id, models, fingerprints in (
        CouncilVote.objects.filter(campaign=campaign).values_list("member_id", "response_model", "system_fingerprint").distinct()
    ):
        seen = reported.setdefault(member_id, (set(), set()))
        seen[0].update(m for m in models.split(", ") if m)
        seen[1].update(f for f in fingerprints.split(", ") if f)
    return [
        {"name": m.name, "model": m.model, "is_generator": m.is_generator,
         "reported_models": sorted(reported[m.pk][0]), "system_fingerprints": sorted(reported[m.pk][1])}
        for m in CouncilMember.objects.filter(id__in=reported).order_by("name")
    ]


def campaign_manifest(snapshot: CampaignSnapshot, kept_item_ids: set[int], counts: dict, *, agreement: dict | None = None) -> dict:
    """What a key made from the snapshot's campaign records about how it was made. `agreement`: the
    snapshot's agreement_figures, if the caller has computed them (beside its own work)."""
    campaign = snapshot.campaign
    item_set = campaign.item_set
    candidates = Item.objects.filter(item_set=item_set).count()
    decisions = dict(Decision.objects.filter(campaign=campaign).values_list("action").annotate(n=Count("id")).order_by())
    adjudicators = set(Decision.objects.filter(campaign=campaign, decided_by__isnull=False).values_list("decided_by", flat=True))
    # Decisions imported with --adjudicator-unknown: nobody can say whether their adjudicator annotated.
    unknown = Decision.objects.filter(campaign=campaign, decided_by__isnull=True).count()
    enrollments = list(
        Enrollment.objects.filter(campaign=campaign).order_by("pseudonym")
        .values_list("pseudonym", "annotator_id", "order_source", "imported_order_seed")
    )
    return {
        "campaign": campaign.slug,
        "campaign_seed": campaign.seed,
        "protocol": campaign.protocol,
        "protocol_version": snapshot.spec.version,
        "item_set": item_set.name,
        "candidates": candidates,
        "kept": len(kept_item_ids),
        "dropped": candidates - len(kept_item_ids),
        "counts_by_gold": counts,
        "decisions": dict(sorted(decisions.items())),
        "annotators": [p for p, *_ in enrollments],
        # Where each annotator's order came from: drawn by Goldkey, or imported (not known, or the seed given).
        "annotation_order": {p: {"source": source, "seed": seed} for p, _, source, seed in enrollments},
        "adjudicator_also_annotator": sorted(p for p, user_id, *_ in enrollments if user_id in adjudicators),
        "decisions_adjudicator_unknown": unknown,
        "council_members": council_members(campaign),
        "gate_summary": gate_summary(item_set),
        "agreement": agreement_figures(campaign, snapshot=snapshot) if agreement is None else agreement,
        "council_pairwise_kappa": council_pairwise(campaign),
        # The queue as it stood at freezing (decisions are final from then on), council flags included;
        # only human reasons held the key back (QueueEntry.needs_decision, PROTOCOL.md §4).
        "queue": queue_records(snapshot),
        # The protocol's own sections (a designed sample, a judge audit), resolved by name: keys never
        # imports a protocol's app.
        **manifest_sections(campaign, snapshot.spec),
    }


def manifest_sections(campaign: Campaign, spec, *, gold: dict[int, str] | None = None) -> dict:
    """The protocol's own sections of a key's manifest (a designed sample, a judge audit), resolved by name:
    keys never imports a protocol's app. `gold` (item id -> gold): a derived version's labels, which its
    figures are computed against instead of the campaign's adjudicated ones (None: the campaign's)."""
    sections = {}
    for name, path in spec.manifest_sections:
        section = import_string(path)(campaign) if gold is None else import_string(path)(campaign, gold=gold)
        if section is not None:
            sections[name] = section
    return sections


def queue_records(snapshot: CampaignSnapshot) -> list[dict]:
    return sorted(
        (
            {
                "id": entry.item.external_id,
                "reasons": entry.reasons,
                "suggestion": entry.suggestion,
                "decision": entry.decision.action if entry.decision else None,
            }
            for entry in snapshot.queue
        ),
        key=lambda r: r["id"],
    )


# ---------------------------------------------------------------------------------------------
# The plain data of a release bundle (keys/bundle.py renders it; it never queries).


EVIDENCE = "evidence"  # a candidate field that is the item's evidence turn ids, not an Item field


CONTENT = "content"
CONTEXT = "context__content"  # the shared context's values, read where the item's content leaves them out


def _shared_fields(spec) -> frozenset[str]:
    return frozenset(spec.context.model_fields) if spec.context is not None else frozenset()


def _candidate_paths(spec) -> list[str]:
    """The Item field paths a candidate record reads (after the id), in the spec's field order; the
    item's content once, where the first content field is (content fields are read out of it), and its
    shared context's right after it when a content field may live there."""
    paths = []
    shared = _shared_fields(spec)
    for _, source in spec.candidate_fields:
        path = CONTENT if source in spec.content_fields else source
        if path != EVIDENCE and path not in paths:
            paths.append(path)
        if path == CONTENT and source in shared and CONTEXT not in paths:
            paths.append(CONTEXT)
    return paths


def _converted(paths: list[str]) -> bool:
    """Whether rows need Django's converters (JSON, and booleans that SQLite hands back as 0/1); rows of
    plain text and integers come straight from the cursor."""
    fields = [Item._meta.get_field(path) for path in paths if "__" not in path]
    return any(field.get_internal_type() in ("JSONField", "BooleanField") for field in fields)


def _candidate_records(spec, rows, evidence: dict[int, list[str]]) -> list[dict]:
    """One record per item row (id, *_candidate_paths), in the spec's field order."""
    build = _candidate_builder(spec.name)
    return [build(row, evidence) for row in rows]


@cache
def _candidate_builder(protocol: str) -> Callable[[tuple, dict], dict]:
    """(row, evidence) -> the row's candidate record: one dict display written out for the protocol's
    candidate fields (as keys.canonical writes its key records), a third of the cost of filling a dict
    field by field, for 100,000 candidates per release. A related path (`a__b`) whose object is missing
    exports as ""; the evidence is looked up by item id (row[0])."""
    spec = protocols.get(protocol)
    position = {path: n + 1 for n, path in enumerate(_candidate_paths(spec))}
    members = []
    for name, source in spec.candidate_fields:
        if source == EVIDENCE:
            value = "evidence[row[0]]"
        elif source in spec.content_fields:
            # The schema's default where the stored content leaves the field out (copied: a record's
            # values are its own); the shared context's value before it, where the item cites one.
            content = f"row[{position[CONTENT]}]"
            fallback = f"defaults()[{source!r}]"
            if CONTEXT in position and source in _shared_fields(spec):
                shared = f"row[{position[CONTEXT]}]"
                fallback = f"({shared}[{source!r}] if {shared} and {source!r} in {shared} else {fallback})"
            value = f"({content}[{source!r}] if {source!r} in {content} else {fallback})"
        else:
            value = f"row[{position[source]}]"
            if "__" in source:
                value = f"({value} or '')"
        members.append(f"{name!r}: {value}")
    source_code = f"def build(row, evidence):\n    return {{{', '.join(members)}}}\n"
    namespace: dict = {"defaults": spec.content_defaults}
    exec(compile(source_code, f"<candidate builder of {protocol}>", "exec"), namespace)  # noqa: S102 (names from the protocol spec)
    return namespace["build"]


def _iso(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


@dataclass(frozen=True)
class Sealing:
    """What the freezing service has just written a key's rows from, in the same transaction, handed to
    the release it seals instead of reading 100,000 rows back: the entries' contents in key order
    (`keys.canonical.key_contents`), the canonical bytes hashed into key.sha256, and (if it read them)
    the evidence turns of the campaign's item set (`item_set_evidence`) and its answers. A sealed release
    from these is the release `bundle_data(key)` gives from the rows (tested)."""

    contents: list[dict]
    key_bytes: bytes
    evidence: dict[int, list[str]] | None = None
    # The campaign's whole answers as the snapshot read them (CampaignData.full_answers), if it kept them.
    answers: dict[int, dict[str, dict]] | None = None
    # The release's answer files rendered from those (keys.bundle.answer_trail), if the freeze has.
    answer_trail: "AnswerTrail | None" = None


def item_set_evidence(item_set_id: int, role: str = EVIDENCE_ROLE) -> dict[int, list[str]]:
    """item id -> its evidence turn ids in order, for every item of the set with evidence (one query;
    by item set, not `item_id__in`: 100,000 ids exceed SQLite's bound-parameter limit). `role`: the
    protocol's excerpt role, whose citations are what a key and a release call evidence."""
    evidence: dict[int, list[str]] = {}
    for item_id, dia_id in _raw_rows(
        Evidence.objects.filter(item__item_set_id=item_set_id, role=role).order_by("item_id", "position")
        .values_list("item_id", "turn__dia_id")
    ):
        turns = evidence.get(item_id)
        if turns is None:
            turns = evidence[item_id] = []
        turns.append(dia_id)
    return evidence


def bundle_data(key: GoldKey, *, snapshot: CampaignSnapshot | None = None, sealing: Sealing | None = None) -> dict:
    """Everything a release bundle holds, as plain Python data in a stable order. It reads what the key
    recorded at freezing; `snapshot` (of the key's campaign) is read only for a key whose manifest
    predates the recorded queue, and built here if not given. `sealing`: given by the service that has
    just written the key's rows from it, in the same transaction; otherwise the rows are read and
    hashed here."""
    with batch_reads():  # a batch read of most of the campaign's rows (goldkey/lib/batchdb.py)
        return _bundle_data(key, snapshot=snapshot, sealing=sealing)


def _bundle_data(key: GoldKey, *, snapshot, sealing: Sealing | None) -> dict:
    lineage = key_lineage(key)
    root = lineage[0]
    campaign = root.campaign
    contents = key_contents(key.kind, key_entries(key)) if sealing is None else sealing.contents
    data: dict = {
        "key": {
            "version": key.version,
            "kind": key.kind,
            "benchmark": key.benchmark.name,
            "status": key.status,
            "sha256": key.sha256,
            "parent": key.parent.version if key.parent_id else None,
            "frozen_at": _iso(key.frozen_at),
            "notes": key.notes,
            "manifest": key.manifest,
        },
        "entries": contents,
        "lineage": [
            {"version": k.version, "sha256": k.sha256, "frozen_at": _iso(k.frozen_at), "changelog": k.changelog, "notes": k.notes}
            for k in lineage
        ],
        "errata": [
            {
                "id": e.pk,
                "key_version": e.key.version,
                "item": e.item_external_id,
                "kind": e.kind,
                "value": e.value,
                "description": e.description,
                "status": e.status,
                "filed_at": _iso(e.filed_at),
                "decided_at": _iso(e.decided_at),
                "decision_note": e.decision_note,
                "applied_in": e.applied_in.version if e.applied_in_id else None,
            }
            # Only the errata this release's lineage applied: errata filed later belong to the key line's
            # feed, not to a release sealed before them.
            for e in Erratum.objects.filter(applied_in__in=lineage).select_related("key", "applied_in").order_by("id")
        ],
        "candidates": [],
        "rejects": [],
        "answers": {},
        "queue": [],
        "decisions": {"exported": None, "decisions": {}},
        "council": {},
    }
    data["key_bytes"] = contents_bytes(key.version, contents) if sealing is None else sealing.key_bytes
    if key.is_frozen and sha256_hex(data["key_bytes"]) != key.sha256:
        raise ApplicationError(f"{key.version}: the stored entries do not match the recorded hash (run key_verify)")
    if campaign is None:
        return data
    spec = protocols.for_kind(root.kind)
    item_set = campaign.item_set
    data["sources"] = {
        "item_set": item_set.name,
        "license": item_set.license,
        # The corpus licences of the conversations these items cite (their turn ids and quotes ship).
        "corpora": [
            {"name": LOCOMO_NAME, "url": LOCOMO_URL, "license": license}
            for license in Conversation.objects.filter(items__item_set=item_set)
            .values_list("license", flat=True).distinct().order_by("license")
        ],
    }
    paths = _candidate_paths(spec)
    item_rows = Item.objects.filter(item_set=campaign.item_set).values_list("id", *paths)
    rows = list(item_rows.iterator(chunk_size=20000) if _converted(paths) else _raw_rows(item_rows))
    evidence: dict[int, list[str]] = defaultdict(list)  # an item without evidence has []
    if any(source == EVIDENCE for _, source in spec.candidate_fields):
        evidence.update(item_set_evidence(campaign.item_set_id, spec.excerpt_role)
                        if sealing is None or sealing.evidence is None else sealing.evidence)
    external_ids = {row[0]: row[paths.index("external_id") + 1] for row in rows}
    candidates = sorted(_candidate_records(spec, rows, evidence), key=lambda r: r["id"])
    by_external = {r["id"]: r for r in candidates}
    # Candidates Goldkey's own blocking gates rejected ship with the rejects, with their verdicts.
    gate_failures: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for external_id, gate, detail in (
        GateVerdict.objects.filter(item__item_set=campaign.item_set, item__gate_rejected=True, blocking=True, passed=False)
        .order_by("item__external_id", "gate").values_list("item__external_id", "gate", "detail")
    ):
        gate_failures[external_id].append((gate, detail))
    data["candidates"] = [r for r in candidates if r["id"] not in gate_failures]
    data["rejects"] = sorted(
        (
            [
                {**r.record, "_evidence_text": r.evidence_text, "_verdict": r.verdict, "_dropped_by": r.dropped_by}
                for r in GenerationReject.objects.filter(item_set=campaign.item_set)
            ] + [
                {**by_external[external_id], "_evidence_text": [], "_verdict": "; ".join(d for _, d in failures),
                 "_dropped_by": ", ".join(g for g, _ in failures)}
                for external_id, failures in gate_failures.items()
            ]
        ),
        key=lambda r: r.get("id", ""),
    )
    if sealing is not None and sealing.answer_trail is not None:
        data["answer_trail"] = sealing.answer_trail  # data["answers"] stays empty: render() takes the files
    else:
        data["answers"] = bundle_answers(campaign, external_ids, answers=None if sealing is None else sealing.answers)
    decisions = list(Decision.objects.filter(campaign=campaign).select_related("item"))
    if "queue" in root.manifest:
        data["queue"] = root.manifest["queue"]
    else:  # a key frozen before the queue was recorded: the campaign's queue now
        data["queue"] = queue_records(snapshot or campaign_snapshot(campaign))
    data["decisions"] = {
        "exported": _iso(max((d.decided_at for d in decisions), default=None)),
        "decisions": {
            d.item.external_id: _decision_record(d) for d in sorted(decisions, key=lambda d: d.item.external_id)
        },
    }
    council: dict[str, dict] = defaultdict(dict)
    council_last: dict[str, object] = {}
    for member, item_id, values, created in CouncilVote.objects.filter(
        campaign=campaign, status=CouncilVote.Status.OK
    ).order_by("created_at", "id").values_list("member__name", "item_id", "values", "created_at"):
        council[member][external_ids[item_id]] = values
        council_last[member] = max(created, council_last.get(member, created))
    data["council"] = {
        m: {"annotator": m, "exported": _iso(council_last[m]), "answers": dict(sorted(a.items()))}
        for m, a in sorted(council.items())
    }
    data["generator_members"] = [m["name"] for m in root.manifest.get("council_members", []) if m.get("is_generator")]
    data["added"] = _added_trails(spec, lineage)
    for trail in data["added"].values():  # the HF split carries the added items' candidate fields too
        by_external.update({r["id"]: r for r in trail["candidates"]})
    gold_fields = tuple(name for name, source in spec.key_fields if source not in ("external_id", "provenance"))
    data["hf_split"] = HfSplit(by_external, gold_fields, key.version)
    return data


def bundle_answers(campaign: Campaign, external_ids: dict[int, str], *, answers: dict[int, dict[str, dict]] | None = None) -> dict:
    """The campaign's answers in the released format, per pseudonym ("exported" = the last recorded
    save): from `answers` (item id -> pseudonym -> the whole answer, as campaign_data(full_answers=True)
    read them for the freeze) or read here, through the snapshot's own decoding (AnswerDecoder)."""
    exported = answers_exported(campaign)
    if answers is not None:
        return answer_documents(answers, external_ids, exported)
    by_pseudonym: dict[str, dict] = defaultdict(dict)
    values = AnswerDecoder(()).values
    for pseudonym, item_id, text in _raw_rows(
        Answer.objects.filter(assignment__enrollment__campaign=campaign)
        .annotate(text=answer_text())
        .values_list("assignment__enrollment__pseudonym", "assignment__item_id", "text")
    ):
        if decoded := values(text):
            by_pseudonym[pseudonym][external_ids[item_id]] = decoded
    return _answer_documents(by_pseudonym, exported)


def answers_exported(campaign: Campaign) -> dict[str, str | None]:
    """pseudonym -> the time of its last recorded save: the "exported" of its released answer file."""
    last_saved = AnswerRevision.objects.filter(answer__assignment__enrollment__campaign=campaign).values_list(
        "answer__assignment__enrollment__pseudonym"
    ).annotate(last=Max("saved_at")).order_by()
    return {pseudonym: _iso(last) for pseudonym, last in last_saved}


def answer_documents(answers: dict[int, dict[str, dict]], external_ids: dict[int, str], exported: dict[str, str | None]) -> dict:
    """bundle_answers from the whole answers the freeze read (item id -> pseudonym -> answer), without a
    query: `exported` is answers_exported's. Pure, so the freeze may run it beside its own work."""
    by_pseudonym: dict[str, dict] = defaultdict(dict)
    for item_id, per_item in answers.items():
        external_id = external_ids[item_id]
        for pseudonym, decoded in per_item.items():
            by_pseudonym[pseudonym][external_id] = decoded
    return _answer_documents(by_pseudonym, exported)


def _answer_documents(by_pseudonym: dict[str, dict], exported: dict[str, str | None]) -> dict:
    return {
        p: {"annotator": p, "exported": exported.get(p), "answers": dict(sorted(a.items()))}
        for p, a in sorted(by_pseudonym.items())
    }


def _added_trails(spec, lineage: list[GoldKey]) -> dict[str, dict]:
    """For items an erratum added from another frozen key: per source campaign, their candidate records,
    the annotators' answers and the decisions on them (released under annotation/added/<campaign>/)."""
    added: dict[str, list[str]] = defaultdict(list)
    for version, external_id in Erratum.objects.filter(applied_in__in=lineage, kind=Erratum.Kind.ADD).values_list(
        "value", "item_external_id"
    ):
        added[version].append(external_id)
    trails: dict[str, dict] = {}
    paths = _candidate_paths(spec)
    for version, external_ids in sorted(added.items()):
        source = key_lineage(GoldKey.objects.get(version=version))[0]
        campaign = source.campaign
        items = Item.objects.filter(item_set_id=campaign.item_set_id, external_id__in=external_ids)
        rows = list(items.values_list("id", *paths))
        evidence: dict[int, list[str]] = defaultdict(list)
        for item_id, dia_id in Evidence.objects.filter(item__in=items, role=spec.excerpt_role).order_by("item_id", "position").values_list(
            "item_id", "turn__dia_id"
        ):
            evidence[item_id].append(dia_id)
        names = {row[0]: row[paths.index("external_id") + 1] for row in rows}
        answers: dict[str, dict] = defaultdict(dict)
        for pseudonym, item_id, values in Answer.objects.filter(
            assignment__enrollment__campaign=campaign, assignment__item_id__in=list(names)
        ).values_list("assignment__enrollment__pseudonym", "assignment__item_id", "values"):
            if values:
                answers[pseudonym][names[item_id]] = values
        decisions = Decision.objects.filter(campaign=campaign, item_id__in=list(names)).select_related("item")
        trails[campaign.slug] = {
            "source_key": version,
            "candidates": sorted(_candidate_records(spec, rows, evidence), key=lambda r: r["id"]),
            "answers": {p: {"annotator": p, "answers": dict(sorted(a.items()))} for p, a in sorted(answers.items())},
            "decisions": {"decisions": {d.item.external_id: _decision_record(d)
                                        for d in sorted(decisions, key=lambda d: d.item.external_id)}},
        }
    return trails


def _decision_record(decision: Decision) -> dict:
    record = {"action": decision.action}
    if decision.new_gold:
        record["new_gold"] = decision.new_gold
    if decision.note:
        record["note"] = decision.note
    return record


def open_errata_count() -> int:
    return Erratum.objects.filter(Q(status=Erratum.Status.FILED)).count()


def _primary_answers(campaign: Campaign, key: str, item_ids) -> dict[str, dict[int, str | None]]:
    """{pseudonym: {item id: the primary answer}} of a campaign over the given items (one query)."""
    found: dict[str, dict[int, str | None]] = defaultdict(dict)
    for pseudonym, item_id, values in Answer.objects.filter(
        assignment__enrollment__campaign=campaign, assignment__item_id__in=list(item_ids)
    ).values_list("assignment__enrollment__pseudonym", "assignment__item_id", "values"):
        found[pseudonym][item_id] = (values or {}).get(key) or None
    return found


def reliability_report(key: GoldKey) -> list[dict]:
    """Each reliability pass over `key`: every new annotator's kappa on the primary question against the
    key's gold verdicts and against each original annotator, over the key's items — labelled as the
    independent reliability estimate for this key version. Figures from goldkey.lib.statistics."""
    passes = list(ReliabilityPass.objects.filter(key=key).select_related("campaign").order_by("campaign__slug"))
    if not passes:
        return []
    spec = protocols.for_kind(key.kind)
    gold = {item_id: spec.verdict_of(g) for item_id, g in KeyEntry.objects.filter(key=key).values_list("item_id", "gold")}
    ids = sorted(gold)
    root = key_lineage(key)[0]
    original = _primary_answers(root.campaign, spec.primary_key, ids) if root.campaign_id else {}
    report = []
    for reliability in passes:
        answers = _primary_answers(reliability.campaign, spec.primary_key, ids)
        for pseudonym in sorted(answers):
            mine = [answers[pseudonym].get(i) for i in ids]

            def summary(other, mine=mine):
                figures = statistics.kappa_summary(mine, other, categories=spec.primary_choices, seed=root.campaign.seed if root.campaign_id else 0)
                return _pick({k: _nan_none(v) for k, v in figures.items()})

            report.append({
                "label": f"independent reliability estimate for {key.version}",
                "campaign": reliability.campaign.slug,
                # The author acknowledged starting it on a published key: not a blind estimate.
                "key_public_during_pass": reliability.key_public_during_pass,
                "annotator": pseudonym,
                "items": len(ids),
                "answered": sum(1 for a in mine if a),
                "question": spec.primary_key,
                "vs_key": summary([gold[i] for i in ids]),
                "vs_annotators": {p: summary([original[p].get(i) for i in ids]) for p in sorted(original)},
            })
    return report
