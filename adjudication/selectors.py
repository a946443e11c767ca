"""Reads for agreement, the adjudication queue, decisions and the retained set.

Every function loads a campaign's answers, council votes and decisions in a fixed number of queries
(whatever the campaign size) and hands plain dicts to the pure modules (`adjudication.queue`,
`goldkey.lib.statistics`).
"""

import json
from dataclasses import dataclass, field, replace

from django.db import connections
from django.db.models import Count, IntegerField, TextField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

import protocols
from adjudication import queue as q
from adjudication.models import Action, Decision
from annotation.models import Answer, Assignment, Campaign, Enrollment
from council.models import CouncilVote
from goldkey.lib.batchdb import collector_paused
from items.models import Item

# Retained-set provenance (`how` in retained_items).
KEPT_UNANIMOUS = "kept_unanimous"  # never queued, no decision
KEPT_AFTER_ADJUDICATION = "kept_after_adjudication"  # a keep decision
RELABELLED = "relabelled"  # a relabel decision: final gold is the new label

ITEM_FIELDS = ("id", "kind", "external_id", "gold_label", "family", "history_turns", "batch")
# The content values agreement reads (strata), as columns of the items' query: a content field is read
# out of the JSON by the database, as text cast to its type (a raw row holds no JSON to decode).
ITEM_CONTENT = {"history_turns": Cast(KT("content__history_turns"), IntegerField())}


class AnswerValues(dict):
    """A loaded answer's values (the agreement keys): a dict that refuses changes, because one is shared
    by every answer with the same values. Reads are plain dict reads (the hot loops do millions)."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError("loaded answer values are read-only")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse


NOT_ANSWERED = AnswerValues()


class AnswerDecoder:
    """The one read of an answer's JSON, for the snapshot (its agreement keys) and a release (the whole
    answer): the stored text (`answer_text`) decoded here, once per distinct text (most answers repeat
    a few texts; the decoded values are read-only data), never by the database: json_extract and
    `->>` give other values for JSON that is not a string (1 or 'true' for true), so one rule for both
    readers needs one decoding.

    `read(text)` is (its agreement values, the decoded answer): the agreement values are each agreement
    key with a truthy value, as decoded (a string as it is; any other JSON value the same on every
    database), one read-only AnswerValues per distinct content; the decoded answer is None for no text."""

    def __init__(self, keys: tuple[str, ...]):
        self.keys = keys
        self._read: dict[str | None, tuple[AnswerValues, object]] = {}
        self._shared: dict[tuple, AnswerValues] = {}

    def read(self, text: str | None) -> tuple[AnswerValues, object]:
        found = self._read.get(text)
        if found is None:
            values = json.loads(text) if text else None
            found = self._read[text] = (self._agreement_of(values), values)
        return found

    def values(self, text: str | None):
        return self.read(text)[1]

    def agreement(self, text: str | None) -> AnswerValues:
        return self.read(text)[0]

    def _agreement_of(self, values) -> AnswerValues:
        if not isinstance(values, dict):  # no answer object: no agreement values (as json_extract gives)
            values = {}
        keys = self.keys
        content = tuple(map(values.get, keys))
        if all(value is None or type(value) is str for value in content):  # what every write path stores
            found = self._shared.get(content)
            if found is None:
                found = self._shared[content] = AnswerValues((k, v) for k, v in zip(keys, content, strict=True) if v)
            return found
        return _shared_values({k: v for k, v in zip(keys, content, strict=True) if v}, self._shared)


def answer_text():
    """An answer's values as stored JSON text (decoded by AnswerDecoder): the JSONField converter costs
    more than the decoding itself."""
    return Cast("values", TextField())


@dataclass(slots=True)
class ItemRow:
    """The few fields of an item that agreement and the queue need (a full Item costs 20x more)."""

    id: int
    kind: str
    external_id: str
    gold_label: str
    family: str
    history_turns: int | None
    batch: str

    @property
    def gold_verdict(self) -> str:
        return protocols.for_kind(self.kind).verdict_of(self.gold_label)


@dataclass
class CouncilBallot:
    member: str
    is_generator: bool
    values: dict


@dataclass(frozen=True)
class CampaignData:
    """Everything agreement and the queue need, loaded once. The answer values are read-only
    (AnswerValues, one per distinct combination of values, shared by the answers that have it): an
    answer seen twice by identity is the same, unchanged values, which the per-combination memos of the
    queue and agreement rely on."""

    campaign: Campaign
    pseudonyms: list[str]  # enrollment order ("A", "B")
    items: list[ItemRow]  # the campaign's items (assigned to at least one annotator), by external id
    # item id -> pseudonym -> the spec's agreement_keys values (NOT_ANSWERED: assigned, not answered)
    answers: dict[int, dict[str, AnswerValues]]
    council: dict[int, list[CouncilBallot]]  # item id -> ballots (latest prompt version per member)
    decisions: dict[int, Decision]  # item id -> decision
    council_members: list[str] = field(default_factory=list)  # every member with a vote in the campaign
    # item id -> pseudonym -> the whole decoded answer (notes included), for the answers that have one:
    # what a release ships (keys.selectors.bundle_answers); only when campaign_data was asked for it.
    full_answers: dict[int, dict[str, dict]] | None = None

    @property
    def protocol(self) -> str:
        return self.campaign.protocol

    @property
    def spec(self) -> protocols.ProtocolSpec:
        return protocols.get(self.campaign.protocol)

    def answer_list(self, item_id: int) -> list[dict]:
        """One dict per annotator assigned to the item, in enrollment order."""
        per_item = self.answers.get(item_id, {})
        return [per_item[p] for p in self.pseudonyms if p in per_item]

    def council_votes(self, item_id: int) -> list[dict] | None:
        """One answer dict per council member, {} where a member has no vote on this item (its call
        failed): the band counts every member (protocols.base.council_band). None without a council."""
        if not self.council_members:
            return None
        by_member = {b.member: b.values for b in self.council.get(item_id, ())}
        return [by_member.get(name, {}) for name in self.council_members]

    def primary_labels(self, item_id: int) -> dict[str, str | None]:
        key = self.spec.primary_key
        return {p: (v.get(key) or None) for p, v in self.answers.get(item_id, {}).items()}


@dataclass(frozen=True)
class CampaignSnapshot:
    """A campaign as batch work reads it, built once by campaign_snapshot: the loaded data, its queue
    and its retained set. Freezing a key, its manifest and agreement figures take a snapshot as an
    argument instead of loading the campaign or building its queue again."""

    data: CampaignData
    queue: tuple["QueueEntry", ...]  # queue order (drop suggestions first)
    retained: tuple[tuple[ItemRow, str, str], ...]  # (item, final gold, how), by external id

    @property
    def campaign(self) -> Campaign:
        return self.data.campaign

    @property
    def spec(self) -> protocols.ProtocolSpec:
        return self.data.spec

    @property
    def undecided(self) -> list["QueueEntry"]:
        return [entry for entry in self.queue if entry.needs_decision]


@dataclass
class QueueEntry:
    item: Item | ItemRow  # a full Item from campaign_queue(); an ItemRow inside agreement and pages
    reasons: list[str]
    suggestion: str  # drop | discuss
    suggestion_why: str
    decision: Decision | None
    answers: dict[str, dict] = field(default_factory=dict)  # pseudonym -> values (full in campaign_queue)
    council: list[CouncilBallot] = field(default_factory=list)
    band: str = ""  # the council's PROTOCOL §4 band against the gold ('' without a council)

    @property
    def blocking(self) -> bool:
        """Queued for a human reason (a council-only flag is triage and does not hold a key back)."""
        return q.blocks_finalizing(self.reasons)

    @property
    def needs_decision(self) -> bool:
        """The one rule for "undecided": finalizing (retained statistics, freezing a key) waits for these."""
        return self.decision is None and self.blocking


def blocking_ids(entries) -> set[int]:
    return {e.item.id for e in entries if e.blocking}




def campaign_is_frozen(campaign: Campaign) -> bool:
    """True once a gold key has been frozen from this campaign: its answers and decisions are sealed."""
    return campaign.status == Campaign.Status.FROZEN


def _raw_rows(queryset):
    """The rows of a values_list() queryset straight from the cursor, without Django's per-row
    machinery: for 200,000 plain rows (ints and text) that machinery costs more than the query."""
    sql, params = queryset.query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(20000):
            yield from chunk


def campaign_data(
    campaign: Campaign, *, with_council: bool = True, item_ids: set[int] | None = None,
    council_members: list[str] | None = None, full_answers: bool = False,
) -> CampaignData:
    """Load a campaign's items, answers, council ballots and decisions in six queries.

    `item_ids`: only these items (at most a few hundred: an IN list), for refreshing their stored queue
    entries; `council_members` is then the campaign's whole council (every member with a counted vote,
    as the stored queue recorded it), because the council band counts every member and the ballots of
    a few items need not name them all. `full_answers`: keep the whole decoded answers too
    (CampaignData.full_answers), for a release sealed from this read."""
    with collector_paused():
        return _campaign_data(campaign, with_council=with_council, item_ids=item_ids, council_members=council_members,
                              full_answers=full_answers)


def campaign_snapshot(campaign: Campaign, *, full_answers: bool = False) -> CampaignSnapshot:
    """The campaign loaded once, its queue and retained set built once (see CampaignSnapshot)."""
    return snapshot_from_data(campaign_data(campaign, full_answers=full_answers))


def snapshot_from_data(data: CampaignData) -> CampaignSnapshot:
    with collector_paused():
        queue = tuple(_build_queue(data))
        retained = tuple(retained_from_data(data, queued=blocking_ids(queue)))
    return CampaignSnapshot(data, queue, retained)


def _campaign_data(
    campaign: Campaign, *, with_council: bool, item_ids=None, council_members=None, full_answers: bool = False
) -> CampaignData:
    pseudonyms = list(Enrollment.objects.filter(campaign=campaign).order_by("pseudonym").values_list("pseudonym", flat=True))
    keys = protocols.get(campaign.protocol).agreement_keys
    answers: dict[int, dict[str, dict]] = {}
    only = {} if item_ids is None else {"item_id__in": item_ids}
    assignments = Assignment.objects.filter(enrollment__campaign=campaign, **only).order_by()
    # Every assignment, answered or not (an unanswered one keeps an empty dict)...
    slot_item: dict[int, dict] = {}  # assignment id -> its item's dict (no per-row tuple: fewer objects)
    slot_pseudonym: dict[int, str] = {}
    slot_items: dict[int, int] = {}  # assignment id -> item id (for the full answers only)
    empty = NOT_ANSWERED
    for assignment_id, item_id, pseudonym in _raw_rows(assignments.values_list("id", "item_id", "enrollment__pseudonym")):
        per_item = answers.get(item_id)
        if per_item is None:
            per_item = answers[item_id] = {}
        per_item[pseudonym] = empty
        slot_item[assignment_id] = per_item
        slot_pseudonym[assignment_id] = pseudonym
        if full_answers:
            slot_items[assignment_id] = item_id
    # ...then the answers, read from the answer table's side: a LEFT JOIN from the assignments visits
    # the answers in item order, a random walk through the table that cost SQLite twice this query.
    answer_rows = (
        Answer.objects.filter(assignment__enrollment__campaign=campaign, **{f"assignment__{k}": v for k, v in only.items()})
        .order_by()
        .annotate(text=answer_text())
        .values_list("assignment_id", "text")
    )
    # Most answers repeat a handful of value combinations: one read-only mapping per combination saves
    # building 200,000 dicts and lets the queue compute each combination's reasons once.
    read = AnswerDecoder(keys).read
    full: dict[int, dict[str, dict]] | None = {} if full_answers else None
    for assignment_id, text in _raw_rows(answer_rows):
        pseudonym = slot_pseudonym[assignment_id]
        agreed, values = read(text)
        slot_item[assignment_id][pseudonym] = agreed
        if full is not None and values:
            item_id = slot_items[assignment_id]
            released = full.get(item_id)
            if released is None:
                released = full[item_id] = {}
            released[pseudonym] = values
    items = sorted(
        (
            ItemRow(*row)
            for row in _raw_rows(
                Item.objects.filter(item_set_id=campaign.item_set_id, **({} if item_ids is None else {"id__in": item_ids}))
                .annotate(**ITEM_CONTENT).order_by().values_list(*ITEM_FIELDS)
            )
            if row[0] in answers
        ),
        key=lambda item: item.external_id,
    )
    council = council_ballots(campaign, item_ids=item_ids) if with_council else {}
    decisions = campaign_decisions(campaign, item_ids=item_ids)
    if council_members is not None:
        members = list(council_members) if with_council else []
    else:
        members = council_member_names(council)
    return CampaignData(campaign, pseudonyms, items, answers, council, decisions, council_members=members, full_answers=full)


def council_ballots(campaign: Campaign, *, item_ids: set[int] | None = None) -> dict[int, list[CouncilBallot]]:
    """item id -> the council's ballots (the latest prompt version per member, by member name), in one
    query; for every item of the campaign, or for `item_ids`."""
    only = {} if item_ids is None else {"item_id__in": item_ids}
    latest: dict[tuple[int, int], CouncilBallot] = {}
    votes = (
        CouncilVote.objects.filter(campaign=campaign, status=CouncilVote.Status.OK, **only)
        .order_by("created_at", "id")
        .values_list("item_id", "member_id", "member__name", "member__is_generator", "values")
    )
    # Votes repeat a few value combinations too: one read-only AnswerValues per combination (values
    # that are not plain hashable scalars get their own), so the queue's memo covers council items.
    shared_votes: dict[tuple, AnswerValues] = {}
    for item_id, member_id, name, is_generator, values in votes:
        latest[(item_id, member_id)] = CouncilBallot(name, is_generator, _shared_values(values or {}, shared_votes))
    council: dict[int, list[CouncilBallot]] = {}
    for (item_id, _), ballot in sorted(latest.items(), key=lambda kv: kv[1].member):
        council.setdefault(item_id, []).append(ballot)
    return council


def campaign_decisions(campaign: Campaign, *, item_ids: set[int] | None = None) -> dict[int, Decision]:
    only = {} if item_ids is None else {"item_id__in": item_ids}
    return {d.item_id: d for d in Decision.objects.filter(campaign=campaign, **only).select_related("decided_by")}


def council_member_names(council: dict[int, list[CouncilBallot]]) -> list[str]:
    """Every member with a counted vote in the campaign, sorted: the council the band counts."""
    return sorted({ballot.member for ballots in council.values() for ballot in ballots})


def _shared_values(values: dict, shared: dict[tuple, AnswerValues]) -> AnswerValues:
    """One AnswerValues per distinct content (the type is part of it: JSON true and 1 differ)."""
    try:
        content = tuple((key, type(value), value) for key, value in sorted(values.items()))
        hash(content)
    except TypeError:  # a nested value (list, dict): not shared
        return AnswerValues(values)
    found = shared.get(content)
    if found is None:
        found = shared[content] = AnswerValues(values)
    return found


def _reasons(data: CampaignData, item: Item) -> list[str]:
    return protocols.get(data.protocol).queue_reasons(item.gold_label, data.answer_list(item.id), data.council_votes(item.id))


def queue_from_data(data: CampaignData) -> list[QueueEntry]:
    """The queue of the loaded campaign (batch work builds it once, in campaign_snapshot)."""
    with collector_paused():
        return _build_queue(data)


def _build_queue(data: CampaignData) -> list[QueueEntry]:
    # The hot loop of a large campaign (100,000 items): look-ups hoisted, and the reasons and suggestion
    # computed once per (gold type, answers, council votes). Answers and votes are the read-only
    # AnswerValues campaign_data shares per value combination and `data` keeps alive, so equal ids are
    # the same unchanged values; a few hundred combinations cover a campaign
    # (tests/adjudication/test_snapshot.py compares the plain path item by item).
    entries = []
    pseudonyms, all_answers, council, decisions = data.pseudonyms, data.answers, data.council, data.decisions
    spec = data.spec
    empty: dict = {}
    memo: dict[tuple, tuple[list[str], str, str, str]] = {}
    # The reasons are symmetric in the annotators, so with two annotators the answers' order is free.
    any_order = len(pseudonyms) <= 2
    for item in data.items:
        per_item = all_answers.get(item.id, empty)
        answers = list(per_item.values()) if any_order else [per_item[p] for p in pseudonyms if p in per_item]
        ballots = council.get(item.id) if council else None
        # One vote per council member ({} where it has none: the band counts every member). The votes and
        # answers are the shared read-only AnswerValues `data` keeps alive, so equal ids are equal values.
        council_votes = data.council_votes(item.id) if data.council_members else None
        votes_key = tuple(id(v) if v else None for v in council_votes) if council_votes else ()
        key = (item.gold_label, votes_key, *map(id, answers))
        found = memo.get(key)
        if found is None:
            found = memo[key] = _queue_verdict(spec, item.gold_label, answers, council_votes)
        reasons, action, why, band = found
        if not reasons:
            continue
        entries.append(
            QueueEntry(
                item=item,
                reasons=list(reasons),
                suggestion=action,
                suggestion_why=why,
                decision=decisions.get(item.id),
                answers=dict(per_item),
                council=ballots or [],
                band=band,
            )
        )
    entries.sort(key=lambda e: q.sort_key(e.suggestion, e.item.external_id))
    return entries


def _queue_verdict(spec, gold_type: str, answers: list, council_votes: list | None) -> tuple[list[str], str, str, str]:
    """(reasons, suggested action, why, council band) for one item: the plain path of the queue."""
    reasons = spec.queue_reasons(gold_type, answers, council_votes)
    action, why = spec.suggestion(gold_type, answers, reasons) if reasons else ("", "")
    band = spec.council_band(gold_type, council_votes) if council_votes else ""
    return reasons, action, why, band


def _full_items(campaign: Campaign, ids) -> dict[int, Item]:
    """Full Items for `ids` in one query: by id when few, else the whole item set (an IN list of
    thousands of ids is refused by SQLite and slow everywhere)."""
    wanted = set(ids)
    items = Item.objects.filter(item_set_id=campaign.item_set_id)
    if len(wanted) <= 500:
        items = items.filter(id__in=wanted)
    return {item.id: item for item in items if item.id in wanted}


def campaign_queue(campaign: Campaign, *, data: CampaignData | None = None) -> list[QueueEntry]:
    """Every queued item (a full Item) with its reasons, the suggestion and the current decision (None
    if undecided), drop suggestions first."""
    entries = [replace(e) for e in queue_from_data(data or campaign_data(campaign))]
    items = _full_items(campaign, (e.item.id for e in entries))
    answers = full_answers(campaign, item_ids=set(items))
    for entry in entries:
        entry.item = items[entry.item.id]
        entry.answers = answers.get(entry.item.id, {})
    return entries


def full_answers(campaign: Campaign, item_id: int | None = None, *, item_ids: set[int] | None = None) -> dict[int, dict[str, dict]]:
    """item id -> pseudonym -> the complete answer values (notes included), for one item, a set of
    items, or the whole campaign. The JSON is decoded only for the items asked for."""
    rows = Assignment.objects.filter(enrollment__campaign=campaign).order_by()
    if item_id is not None:
        rows = rows.filter(item_id=item_id)
    answers: dict[int, dict[str, dict]] = {}
    raw_rows = rows.annotate(raw=Cast("answer__values", TextField())).values_list("item_id", "enrollment__pseudonym", "raw")
    # One item's few rows in one round trip; the whole campaign's in chunks (on PostgreSQL a server-side
    # cursor: declared, fetched from and closed, three round trips an item page would pay for two rows).
    for item, pseudonym, raw in raw_rows if item_id is not None else raw_rows.iterator(chunk_size=20000):
        if item_ids is None or item in item_ids:
            answers.setdefault(item, {})[pseudonym] = json.loads(raw) if raw else {}
    return answers


def undecided_items(campaign: Campaign, *, data: CampaignData | None = None) -> list[Item]:
    """Queued items that still need a decision: finalizing (freezing a key) needs this to be empty."""
    rows = [e.item for e in queue_from_data(data or campaign_data(campaign)) if e.needs_decision]
    items = _full_items(campaign, (row.id for row in rows))
    return [items[row.id] for row in rows]


def _agreed_label(labels: list[str]) -> str:
    present = {label for label in labels if label}
    return present.pop() if len(present) == 1 else ""


def retained_from_data(data: CampaignData, *, queued: set[int] | None = None) -> list[tuple[ItemRow, str, str]]:
    """`queued`: the queued item ids when the caller has already built the queue."""
    spec = data.spec
    key, from_answers = spec.primary_key, spec.gold_from_answers
    retained = []
    for item in data.items:
        decision = data.decisions.get(item.id)
        if from_answers:
            base = _agreed_label([a.get(key, "") for a in data.answer_list(item.id)])
        else:
            base = item.gold_label
        if decision is None:
            if (item.id in queued) if queued is not None else q.blocks_finalizing(_reasons(data, item)):
                continue  # queued and undecided: not (yet) retained
            if base:
                retained.append((item, base, KEPT_UNANIMOUS))
        elif decision.action == Action.KEEP:
            if base:
                retained.append((item, base, KEPT_AFTER_ADJUDICATION))
        elif decision.action == Action.RELABEL:
            retained.append((item, decision.new_gold, RELABELLED))
    return retained


def retained_items(campaign: Campaign, *, data: CampaignData | None = None) -> list[tuple[Item, str, str]]:
    """The items a key built from this campaign would hold: (item, final_gold, how), how one of
    kept_unanimous (not queued), kept_after_adjudication, relabelled. TWIST final gold is the gold type
    (new_gold when relabelled); Lapse final gold is the label both annotators gave, else the adjudicated
    label. Dropped items and queued items still undecided are left out."""
    retained = retained_from_data(data or campaign_data(campaign))
    items = _full_items(campaign, (row.id for row, _, _ in retained))
    return [(items[row.id], gold, how) for row, gold, how in retained]


def campaign_list() -> list[dict]:
    """Every campaign with its item set and size, for the adjudication index."""

    campaigns = Campaign.objects.select_related("item_set").annotate(annotators=Count("enrollments", distinct=True)).order_by("slug")
    return [{"campaign": c, "annotators": c.annotators} for c in campaigns]


def campaign_item(campaign: Campaign, item_id: int) -> Item | None:
    return Item.objects.filter(pk=item_id, item_set_id=campaign.item_set_id).first()
