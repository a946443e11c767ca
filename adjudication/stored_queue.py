"""Reads of the stored queue (`QueueItem`, kept by `services.queue_sync`): a page of entries, the decision
counts, an item's place, its neighbours and the next undecided item. Each is one indexed query, whatever
the campaign size: the queue order (drop suggestions first, then by item id) is the index order
(rank, ordinal)."""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from adjudication.models import Decision, QueueItem
from adjudication.selectors import QueueEntry
from annotation.models import Campaign

PAGE_SIZE = 100


@dataclass(frozen=True)
class QueueCounts:
    decided: int  # queued items with a decision
    undecided: int  # queued for a human reason and without a decision (what finalizing waits for)


def _queued(campaign: Campaign):
    return QueueItem.objects.filter(campaign=campaign, queued=True)


def _decided(campaign: Campaign) -> Exists:
    return Exists(Decision.objects.filter(campaign=campaign, item_id=OuterRef("item_id")))


def counts(campaign: Campaign) -> QueueCounts:
    decided = _decided(campaign)
    found = _queued(campaign).aggregate(
        decided=Count("pk", filter=Q(decided)), undecided=Count("pk", filter=Q(blocking=True) & ~Q(decided))
    )
    return QueueCounts(found["decided"], found["undecided"])


def page(campaign: Campaign, number: int, *, size: int = PAGE_SIZE) -> list[QueueEntry]:
    """Entries `number`·size … in queue order, with their items and current decisions (two queries)."""
    rows = list(
        _queued(campaign).order_by("rank", "ordinal").select_related("item")
        .only("item_id", "reasons", "suggestion", "suggestion_why", "item__id", "item__external_id", "item__gold_type")
        [number * size:(number + 1) * size]
    )
    decisions = {
        d.item_id: d
        for d in Decision.objects.filter(campaign=campaign, item_id__in=[r.item_id for r in rows]).select_related("decided_by")
    }
    return [
        QueueEntry(item=r.item, reasons=r.reasons, suggestion=r.suggestion, suggestion_why=r.suggestion_why,
                   decision=decisions.get(r.item_id))
        for r in rows
    ]


def row(campaign: Campaign, item_id: int) -> QueueItem | None:
    """The item's stored entry (every item of the campaign has one; None: not in the campaign)."""
    return QueueItem.objects.filter(campaign=campaign, item_id=item_id).first()


def _after(entry: QueueItem) -> Q:
    return Q(rank__gt=entry.rank) | Q(rank=entry.rank, ordinal__gt=entry.ordinal)


def _before(entry: QueueItem) -> Q:
    return Q(rank__lt=entry.rank) | Q(rank=entry.rank, ordinal__lt=entry.ordinal)


def position(campaign: Campaign, entry: QueueItem) -> int:
    """The queued entry's index in queue order."""
    return _queued(campaign).filter(_before(entry)).count()


def neighbours(campaign: Campaign, entry: QueueItem) -> tuple[int | None, int | None]:
    """The item ids before and after the queued entry in queue order."""
    before = _queued(campaign).filter(_before(entry)).order_by("-rank", "-ordinal").values_list("item_id", flat=True).first()
    after = _queued(campaign).filter(_after(entry)).order_by("rank", "ordinal").values_list("item_id", flat=True).first()
    return before, after


def next_undecided(campaign: Campaign, *, after: int) -> int | None:
    """The next queued item without a decision, in queue order after item `after` (wrapping round)."""
    undecided = (
        _queued(campaign).exclude(item_id=after).filter(~_decided(campaign))
        .order_by("rank", "ordinal").values_list("item_id", flat=True)
    )
    current = _queued(campaign).filter(item_id=after).first()
    found = undecided.filter(_after(current)).first() if current is not None else None
    return found if found is not None else undecided.first()
