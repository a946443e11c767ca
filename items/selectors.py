"""Reads for the corpus and items."""

from django.db.models import Count, Prefetch, prefetch_related_objects

import protocols
from items.models import Conversation, Evidence, Item, ItemSet, Turn, WorkerPing


def corpus_summary() -> dict:
    return {
        "conversations": Conversation.objects.count(),
        "turns": Turn.objects.count(),
        "items": Item.objects.count(),
        "item_sets": ItemSet.objects.count(),
    }


def status_report() -> dict:
    by_kind = dict(Item.objects.values_list("kind").annotate(n=Count("id")).order_by())
    # Items whose gold is their own (TWIST gold types); kinds whose gold comes from annotation carry none.
    by_type = dict(Item.objects.exclude(gold_label="").values_list("gold_label").annotate(n=Count("id")).order_by())
    item_sets = dict(ItemSet.objects.annotate(n=Count("items")).values_list("name", "n").order_by("name"))
    return {
        "conversations": Conversation.objects.count(),
        "turns": Turn.objects.count(),
        "items": {spec.item_kind: by_kind.get(spec.item_kind, 0) for spec in protocols.specs()},
        "items_by_type": {key: by_type[key] for key in sorted(by_type)},
        "item_sets": item_sets,
    }




def cited(item: Item) -> list[Evidence]:
    """The item's citations that are its excerpts: those in its protocol's excerpt role, in cited order or,
    where the protocol says so, in the conversation's order. Reads the prefetched `evidence` (all roles: a
    filter here keeps one query for any number of items of any protocol)."""
    spec = protocols.for_kind(item.kind)
    rows = [ev for ev in item.evidence.all() if ev.role == spec.excerpt_role]
    if spec.excerpts_in_record_order:
        rows.sort(key=lambda ev: ev.turn.order)
    return rows


def excerpts_for(item: Item) -> list[dict]:
    """The item's cited turns as a vetting system would retrieve them: session date, speaker, text.

    Expects `evidence` prefetched with turn__session (EXCERPTS: see excerpts_prefetched, items_with_excerpts)."""
    return [
        {
            "dia_id": ev.turn.dia_id,
            "date": ev.turn.session.date_time_raw,
            "speaker": ev.turn.speaker,
            "text": ev.turn.text,
        }
        for ev in cited(item)
    ]


def _excerpts() -> Prefetch:
    """What excerpts_for reads: the cited turns with their sessions, in one query for any number of items."""
    return Prefetch("evidence", queryset=Evidence.objects.select_related("turn__session"))


def excerpts_prefetched(item: Item) -> Item:
    """One item with its excerpts read (for excerpts_for)."""
    prefetch_related_objects([item], _excerpts())
    return item


def items_with_excerpts(queryset=None):
    """Items with their conversation and excerpts read (for excerpts_for)."""
    qs = queryset if queryset is not None else Item.objects.all()
    return qs.select_related("conversation").prefetch_related(_excerpts())


def recipient_turns(item: Item):
    """Every turn the item's recipient said in that conversation (for the Phase 2 index)."""
    return (
        Turn.objects.filter(conversation_id=item.conversation_id, speaker=item.recipient)
        .select_related("session")
        .order_by("order")
    )


def worker_ping_find(token: str) -> WorkerPing | None:
    return WorkerPing.objects.filter(token=token).first()


def item_sets_with_counts():
    """Every item set with its benchmark, track and item/reject counts (one query)."""
    return (
        ItemSet.objects.select_related("track__benchmark")
        .annotate(n_items=Count("items", distinct=True), n_rejects=Count("rejects", distinct=True))
        .order_by("name")
    )
