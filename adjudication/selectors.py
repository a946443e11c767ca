"""Reads for agreement, the adjudication queue, decisions and the retained set.

Every function loads a campaign's answers, council votes and decisions in a fixed number of queries
(whatever the campaign size) and hands plain dicts to the pure modules (`adjudication.queue`,
`annotation.statistics`).
"""

from dataclasses import dataclass, field

from adjudication import queue as q
from adjudication.models import Action, Decision
from annotation.models import Assignment, Campaign, Enrollment, Protocol
from annotation.protocols import PRIMARY_KEY
from council.models import CouncilVote
from items.models import Item

# Retained-set provenance (`how` in retained_items).
KEPT_UNANIMOUS = "kept_unanimous"  # never queued, no decision
KEPT_AFTER_ADJUDICATION = "kept_after_adjudication"  # a keep decision
RELABELLED = "relabelled"  # a relabel decision: final gold is the new label

ITEM_FIELDS = ("id", "item_set_id", "kind", "external_id", "gold_type", "family", "history_turns", "batch", "text_released")


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
    items: list[Item]  # the campaign's items (assigned to at least one annotator), by external id
    answers: dict[int, dict[str, dict]]  # item id -> pseudonym -> values ({} = not answered)
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
    item: Item
    reasons: list[str]
    suggestion: str  # drop | discuss
    suggestion_why: str
    decision: Decision | None
    answers: dict[str, dict] = field(default_factory=dict)  # pseudonym -> values
    council: list[CouncilBallot] = field(default_factory=list)


def campaign_is_frozen(campaign: Campaign) -> bool:
    """True once a gold key has been frozen from this campaign: decisions are then read-only.

    The keys branch completes this (GoldKey with a `campaign` FK and a `status`)."""
    return False


def campaign_data(campaign: Campaign, *, with_council: bool = True) -> CampaignData:
    """Load a campaign's items, answers, council ballots and decisions in five queries."""
    pseudonyms = list(Enrollment.objects.filter(campaign=campaign).order_by("pseudonym").values_list("pseudonym", flat=True))
    answers: dict[int, dict[str, dict]] = {}
    rows = Assignment.objects.filter(enrollment__campaign=campaign).values_list(
        "item_id", "enrollment__pseudonym", "answer__values"
    )
    for item_id, pseudonym, values in rows.iterator(chunk_size=20000):
        answers.setdefault(item_id, {})[pseudonym] = values or {}
    items = sorted(
        (item for item in Item.objects.filter(item_set_id=campaign.item_set_id).only(*ITEM_FIELDS) if item.id in answers),
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


def campaign_queue(campaign: Campaign, *, data: CampaignData | None = None) -> list[QueueEntry]:
    """Every queued item with its reasons, the suggestion and the current decision (None if undecided),
    drop suggestions first."""
    return queue_from_data(data or campaign_data(campaign))


def undecided_items(campaign: Campaign, *, data: CampaignData | None = None) -> list[Item]:
    """Queued items without a decision: finalizing (freezing a key) needs this to be empty."""
    return [e.item for e in campaign_queue(campaign, data=data) if e.decision is None]


def _agreed_label(labels: list[str]) -> str:
    present = {label for label in labels if label}
    return present.pop() if len(present) == 1 else ""


def retained_from_data(data: CampaignData) -> list[tuple[Item, str, str]]:
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
            if _reasons(data, item):
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
    return retained_from_data(data or campaign_data(campaign))
