"""Reads of the stored queue (`QueueItem`, kept by `services.queue_sync`): a page of entries, the decision
counts, an item's place, its neighbours and the next undecided item. Each is one query on an index
whatever the campaign size: the queue order (drop suggestions first, then by item id) is the indexed
column `sort_key`, and a queued entry's index in it the indexed column `place`. Under a filter the
queue is a range of `sort_key` read through the filter (counts and pages over it grow with the
matching rows; neighbours and the next undecided entry are seeks)."""

from dataclasses import dataclass

from django.db.models import Count, Q, Subquery

from adjudication.models import Decision, QueueItem
from adjudication.selectors import QueueEntry
from annotation.models import Campaign

PAGE_SIZE = 50  # rows a page shows: the adjudicator works from the item page, this is the overview


@dataclass(frozen=True)
class QueueCounts:
    decided: int  # queued items with a decision
    undecided: int  # queued for a human reason and without a decision (what finalizing waits for)


def _queued(campaign: Campaign):
    return QueueItem.objects.filter(campaign=campaign, queued=True)


@dataclass(frozen=True)
class QueueFilter:
    """What the queue page narrows to: a queue reason, the item's gold type and/or the council band ('' = any)."""

    reason: str = ""
    gold_type: str = ""
    band: str = ""

    def __bool__(self) -> bool:
        return bool(self.reason or self.gold_type or self.band)

    def apply(self, rows):
        if self.reason:
            # `reasons` is a JSON list of reason names; the quoted name matches one element exactly
            # (JSON containment is PostgreSQL-only, the text match works on both databases).
            rows = rows.filter(reasons__icontains=f'"{self.reason}"')
        if self.gold_type:
            rows = rows.filter(item__gold_label=self.gold_type)
        if self.band:
            rows = rows.filter(band=self.band)
        return rows


def filtered_count(campaign: Campaign, where: QueueFilter) -> int:
    """How many queued entries pass the filter (one query; without a filter use QueueState.n_queued)."""
    return where.apply(_queued(campaign)).count()


def page_of(campaign: Campaign, entry: QueueItem, where: QueueFilter | None = None, *, size: int = PAGE_SIZE) -> int:
    """The page (from 0) on which the queued entry is listed, under the filter (if it passes it)."""
    return where.apply(_queued(campaign)).filter(sort_key__lt=entry.sort_key).count() // size if where \
        else entry.place // size


def counts(campaign: Campaign, *, n_queued: int) -> QueueCounts:
    """Both counts from the index of the undecided entries alone (`n_queued`: QueueState.n_queued)."""
    found = _queued(campaign).filter(decided=False).aggregate(
        n_open=Count("pk"), n_blocking=Count("pk", filter=Q(blocking=True))
    )
    return QueueCounts(n_queued - found["n_open"], found["n_blocking"])


def page(campaign: Campaign, number: int, *, size: int = PAGE_SIZE, where: QueueFilter | None = None) -> list[QueueEntry]:
    """Entries number·size … in queue order (of those passing `where`), with their items and current
    decisions (three queries: the page's keys from the index, then only those rows and their
    decisions; an OFFSET over the joined rows would join every row it skips)."""
    if where:
        keys = where.apply(_queued(campaign)).order_by("sort_key").values("pk")[number * size:(number + 1) * size]
        rows = QueueItem.objects.filter(pk__in=keys)
    else:  # a range of places: an index range whatever the page
        rows = _queued(campaign).filter(place__gte=number * size, place__lt=(number + 1) * size)
    rows = list(
        rows.order_by("sort_key").select_related("item")
        .only("item_id", "reasons", "suggestion", "suggestion_why", "band", "decided", "item__id",
              "item__external_id", "item__gold_label")
    )
    decided = [r.item_id for r in rows if r.decided]
    decisions = {
        d.item_id: d
        for d in Decision.objects.filter(campaign=campaign, item_id__in=decided).select_related("decided_by")
    } if decided else {}
    return [
        QueueEntry(item=r.item, reasons=r.reasons, suggestion=r.suggestion, suggestion_why=r.suggestion_why,
                   decision=decisions.get(r.item_id), band=r.band)
        for r in rows
    ]


def row(campaign: Campaign, item_id: int, *, with_item: bool = False) -> QueueItem | None:
    """The item's stored entry (every item of the campaign has one; None: not in the campaign), with the
    item itself read in the same query when asked."""
    rows = QueueItem.objects.filter(campaign=campaign, item_id=item_id)
    return (rows.select_related("item") if with_item else rows).first()


def position(entry: QueueItem) -> int:
    """The queued entry's index in queue order (stored: no count that grows with the place)."""
    return entry.place


def neighbours(campaign: Campaign, entry: QueueItem, where: QueueFilter | None = None) -> tuple[int | None, int | None]:
    """The item ids before and after the queued entry in queue order (among the entries passing `where`)."""
    if not where:  # the places either side: one index lookup
        found = dict(_queued(campaign).filter(place__in=[entry.place - 1, entry.place + 1]).values_list("place", "item_id"))
        return found.get(entry.place - 1), found.get(entry.place + 1)
    rows = where.apply(_queued(campaign))
    before = rows.filter(sort_key__lt=entry.sort_key).order_by("-sort_key").values_list("item_id", flat=True)
    after = rows.filter(sort_key__gt=entry.sort_key).order_by("sort_key").values_list("item_id", flat=True)
    return before.first(), after.first()


def next_undecided(campaign: Campaign, *, after: int, where: QueueFilter | None = None,
                   after_key: int | None = None) -> QueueItem | None:
    """The stored entry of the next queued item without a decision (passing `where`), in queue order after
    item `after` (wrapping round), with the item read in the same query (its page is what follows a
    decision: one query less than finding it and then reading it, as `row` does). `after_key`: `after`'s
    sort_key when the caller has read its queued entry (a decision has), else it is read in the query."""
    undecided = _queued(campaign).filter(decided=False)
    if where:
        undecided = where.apply(undecided)
    undecided = undecided.exclude(item_id=after).order_by("sort_key").select_related("item")
    # One seek from `after`'s place in the order (no row when it is not queued: the comparison with
    # NULL finds nothing), then from the start when nothing undecided follows it.
    current = after_key if after_key is not None else Subquery(_queued(campaign).filter(item_id=after).values("sort_key"))
    found = undecided.filter(sort_key__gt=current).first()
    return found if found is not None else undecided.first()
