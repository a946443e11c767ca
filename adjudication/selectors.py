"""Reads for agreement, the adjudication queue, decisions and the retained set.

Every function loads a campaign's answers, council votes and decisions in a fixed number of queries
(whatever the campaign size) and hands plain dicts to the pure modules (`adjudication.queue`,
`annotation.statistics`).
"""

from dataclasses import dataclass, field

from django.db.models import F, Func, TextField

from adjudication import queue as q
from adjudication.models import Action, Decision
from annotation.models import Answer, Assignment, Campaign, Enrollment, Protocol
from annotation.protocols import PRIMARY_KEY
from council.models import CouncilVote
from items.models import Item

# Retained-set provenance (`how` in retained_items).
KEPT_UNANIMOUS = "kept_unanimous"  # never queued, no decision
KEPT_AFTER_ADJUDICATION = "kept_after_adjudication"  # a keep decision
RELABELLED = "relabelled"  # a relabel decision: final gold is the new label

ITEM_FIELDS = ("id", "kind", "external_id", "gold_type", "family", "history_turns", "batch", "text_released")
# The answer keys agreement and the queue read (pages that show notes load one item's full answers).
QUEUE_KEYS = {
    Protocol.TWIST_B: ("q1", "q2", "q2quote", "q3", "q3turn"),
    Protocol.LAPSE: ("label",),
}


class JsonKeyText(Func):
    """One top-level key of a JSON column as text, extracted by the database: `->>` on PostgreSQL,
    json_extract on SQLite. (KT() wraps every key in a type CASE, which doubles the cost, and
    decoding 200,000 answers in Python costs more still.) Keys are code constants, passed as params."""

    output_field = TextField()

    def __init__(self, field: str, key: str):
        self.key = key
        super().__init__(F(field))

    def as_sql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        if connection.vendor == "postgresql":
            return f"({sql} ->> %s)", [*params, self.key]
        return f"json_extract({sql}, %s)", [*params, f'$."{self.key}"']


@dataclass(slots=True)
class ItemRow:
    """The few fields of an item that agreement and the queue need (a full Item costs 20x more)."""

    id: int
    kind: str
    external_id: str
    gold_type: str
    family: str
    history_turns: int | None
    batch: str
    text_released: bool

    @property
    def gold_verdict(self) -> str:
        return q.GOLD_VERDICT.get(self.gold_type, "")


@dataclass
class CouncilBallot:
    member: str
    is_generator: bool
    values: dict


@dataclass
class CampaignData:
    """Everything agreement and the queue need, loaded once."""

    campaign: Campaign
    pseudonyms: list[str]  # enrollment order ("A", "B")
    items: list[ItemRow]  # the campaign's items (assigned to at least one annotator), by external id
    answers: dict[int, dict[str, dict]]  # item id -> pseudonym -> QUEUE_KEYS values ({} = not answered)
    council: dict[int, list[CouncilBallot]]  # item id -> ballots (latest prompt version per member)
    decisions: dict[int, Decision]  # item id -> decision

    @property
    def protocol(self) -> str:
        return self.campaign.protocol

    def answer_list(self, item_id: int) -> list[dict]:
        """One dict per annotator assigned to the item, in enrollment order."""
        per_item = self.answers.get(item_id, {})
        return [per_item[p] for p in self.pseudonyms if p in per_item]

    def primary_labels(self, item_id: int) -> dict[str, str | None]:
        key = PRIMARY_KEY[self.protocol]
        return {p: (v.get(key) or None) for p, v in self.answers.get(item_id, {}).items()}


@dataclass
class QueueEntry:
    item: Item | ItemRow  # a full Item from campaign_queue(); an ItemRow inside agreement and pages
    reasons: list[str]
    suggestion: str  # drop | discuss
    suggestion_why: str
    decision: Decision | None
    answers: dict[str, dict] = field(default_factory=dict)  # pseudonym -> values (full in campaign_queue)
    council: list[CouncilBallot] = field(default_factory=list)


def campaign_is_frozen(campaign: Campaign) -> bool:
    """True once a gold key has been frozen from this campaign: decisions are then read-only.

    The keys branch completes this (GoldKey with a `campaign` FK and a `status`)."""
    return False


def campaign_data(campaign: Campaign, *, with_council: bool = True) -> CampaignData:
    """Load a campaign's items, answers, council ballots and decisions in five queries."""
    pseudonyms = list(Enrollment.objects.filter(campaign=campaign).order_by("pseudonym").values_list("pseudonym", flat=True))
    keys = QUEUE_KEYS[campaign.protocol]
    answers: dict[int, dict[str, dict]] = {}
    assigned = Assignment.objects.filter(enrollment__campaign=campaign).order_by().values_list("item_id", "enrollment__pseudonym")
    for item_id, pseudonym in assigned.iterator(chunk_size=20000):
        answers.setdefault(item_id, {})[pseudonym] = {}
    rows = (
        Answer.objects.filter(assignment__enrollment__campaign=campaign)
        .order_by()
        .annotate(**{f"value_{key}": JsonKeyText("values", key) for key in keys})
        .values_list("assignment__item_id", "assignment__enrollment__pseudonym", *(f"value_{key}" for key in keys))
    )
    for item_id, pseudonym, *values in rows.iterator(chunk_size=20000):
        answers[item_id][pseudonym] = {k: v for k, v in zip(keys, values, strict=True) if v}
    items = sorted(
        (
            ItemRow(*row)
            for row in Item.objects.filter(item_set_id=campaign.item_set_id).values_list(*ITEM_FIELDS)
            if row[0] in answers
        ),
        key=lambda item: item.external_id,
    )
    council: dict[int, list[CouncilBallot]] = {}
    if with_council:
        latest: dict[tuple[int, int], CouncilBallot] = {}
        votes = (
            CouncilVote.objects.filter(campaign=campaign, status=CouncilVote.Status.OK)
            .order_by("created_at", "id")
            .values_list("item_id", "member_id", "member__name", "member__is_generator", "values")
        )
        for item_id, member_id, name, is_generator, values in votes:
            latest[(item_id, member_id)] = CouncilBallot(name, is_generator, values or {})
        for (item_id, _), ballot in sorted(latest.items(), key=lambda kv: kv[1].member):
            council.setdefault(item_id, []).append(ballot)
    decisions = {
        d.item_id: d for d in Decision.objects.filter(campaign=campaign).select_related("decided_by")
    }
    return CampaignData(campaign, pseudonyms, items, answers, council, decisions)


def _reasons(data: CampaignData, item: Item) -> list[str]:
    ballots = data.council.get(item.id)
    return q.queue_reasons(
        item.gold_type,
        data.answer_list(item.id),
        [b.values for b in ballots] if ballots else None,
        protocol=data.protocol,
    )


def queue_from_data(data: CampaignData) -> list[QueueEntry]:
    entries = []
    for item in data.items:
        reasons = _reasons(data, item)
        if not reasons:
            continue
        answers = data.answer_list(item.id)
        action, why = q.suggestion(item.gold_type, answers, reasons, protocol=data.protocol)
        entries.append(
            QueueEntry(
                item=item,
                reasons=reasons,
                suggestion=action,
                suggestion_why=why,
                decision=data.decisions.get(item.id),
                answers=dict(data.answers.get(item.id, {})),
                council=data.council.get(item.id, []),
            )
        )
    entries.sort(key=lambda e: q.sort_key(e.suggestion, e.item.external_id))
    return entries


def _full_items(campaign: Campaign, ids) -> dict[int, Item]:
    wanted = set(ids)
    return {item.id: item for item in Item.objects.filter(item_set_id=campaign.item_set_id) if item.id in wanted}


def campaign_queue(campaign: Campaign, *, data: CampaignData | None = None) -> list[QueueEntry]:
    """Every queued item (a full Item) with its reasons, the suggestion and the current decision (None
    if undecided), drop suggestions first."""
    entries = queue_from_data(data or campaign_data(campaign))
    items = _full_items(campaign, (e.item.id for e in entries))
    answers = full_answers(campaign)
    for entry in entries:
        entry.item = items[entry.item.id]
        entry.answers = answers.get(entry.item.id, {})
    return entries


def full_answers(campaign: Campaign, item_id: int | None = None) -> dict[int, dict[str, dict]]:
    """item id -> pseudonym -> the complete answer values (notes included)."""
    rows = Assignment.objects.filter(enrollment__campaign=campaign).order_by()
    if item_id is not None:
        rows = rows.filter(item_id=item_id)
    answers: dict[int, dict[str, dict]] = {}
    for item, pseudonym, values in rows.values_list("item_id", "enrollment__pseudonym", "answer__values"):
        answers.setdefault(item, {})[pseudonym] = values or {}
    return answers


def undecided_items(campaign: Campaign, *, data: CampaignData | None = None) -> list[Item]:
    """Queued items without a decision: finalizing (freezing a key) needs this to be empty."""
    rows = [e.item for e in queue_from_data(data or campaign_data(campaign)) if e.decision is None]
    items = _full_items(campaign, (row.id for row in rows))
    return [items[row.id] for row in rows]


def _agreed_label(labels: list[str]) -> str:
    present = {label for label in labels if label}
    return present.pop() if len(present) == 1 else ""


def retained_from_data(data: CampaignData, *, queued: set[int] | None = None) -> list[tuple[ItemRow, str, str]]:
    """`queued`: the queued item ids when the caller has already built the queue."""
    lapse = data.protocol == Protocol.LAPSE
    key = PRIMARY_KEY[data.protocol]
    retained = []
    for item in data.items:
        decision = data.decisions.get(item.id)
        if lapse:
            base = _agreed_label([a.get(key, "") for a in data.answer_list(item.id)])
        else:
            base = item.gold_type
        if decision is None:
            if (item.id in queued) if queued is not None else _reasons(data, item):
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
    from django.db.models import Count

    campaigns = Campaign.objects.select_related("item_set").annotate(annotators=Count("enrollments", distinct=True)).order_by("slug")
    return [{"campaign": c, "annotators": c.annotators} for c in campaigns]


def campaign_item(campaign: Campaign, item_id: int) -> Item | None:
    return Item.objects.filter(pk=item_id, item_set_id=campaign.item_set_id).first()


def next_undecided(campaign: Campaign, *, after: int) -> int | None:
    """The next queued item without a decision, in queue order after item `after` (wrapping round)."""
    entries = queue_from_data(campaign_data(campaign))
    ids = [e.item.id for e in entries]
    start = ids.index(after) + 1 if after in ids else 0
    for entry in entries[start:] + entries[:start]:
        if entry.decision is None and entry.item.id != after:
            return entry.item.id
    return None
