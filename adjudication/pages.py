"""What the adjudication pages show, composed from selectors in a fixed number of queries."""

import random

from django.utils.module_loading import import_string

import protocols
from adjudication import queue as q
from adjudication.models import DecisionRevision
from adjudication.selectors import (
    QueueEntry,
    campaign_data,
    campaign_is_frozen,
    full_answers,
    queue_from_data,
)
from annotation.models import Campaign, Enrollment
from items.models import Item
from items.selectors import excerpts_for, items_with_excerpts


def sides_for(campaign: Campaign, item_id: int, pseudonyms: list[str]) -> list[str]:
    """The order in which the annotators' answers are shown for one item: shuffled per item with a seed
    derived from the campaign seed and the item, so it is random across items but stable on reload."""
    order = sorted(pseudonyms)
    random.Random(f"{campaign.seed}:{item_id}:sides").shuffle(order)
    return order


def queue_page_view(campaign: Campaign) -> dict:
    spec = protocols.get(campaign.protocol)
    data = campaign_data(campaign)
    entries = queue_from_data(data)
    decided = sum(1 for e in entries if e.decision is not None)
    # The protocol's own sections (TWIST: the retained set against the bar), resolved by name.
    panels = [{"template": p.template, "data": import_string(p.data)(data, entries)} for p in spec.queue_panels]
    return {
        "spec": spec,
        "entries": entries,
        "decided": decided,
        "undecided": sum(1 for e in entries if e.needs_decision),
        "n_items": len(data.items),
        "panels": panels,
        "frozen": campaign_is_frozen(campaign),
        "reason_help": q.REASON_HELP,
    }


def queue_export_view(campaign: Campaign) -> dict:
    """What the queue's CSV holds: the queue entries and the annotators' pseudonyms, in a fixed number of queries."""
    data = campaign_data(campaign)
    return {"spec": protocols.get(campaign.protocol), "entries": queue_from_data(data), "pseudonyms": list(data.pseudonyms)}


def item_view(campaign: Campaign, item_id: int, *, reveal: bool = False) -> dict | None:
    data = campaign_data(campaign)
    item_ids = {i.id for i in data.items}
    if item_id not in item_ids:
        return None
    entries = queue_from_data(data)
    position = next((n for n, e in enumerate(entries) if e.item.id == item_id), None)
    if position is None:
        entry = _unqueued_entry(data, item_id)
    else:
        entry = entries[position]
    item = items_with_excerpts(Item.objects.filter(pk=item_id)).get()
    entry.answers = full_answers(campaign, item_id).get(item_id, {})
    order = sides_for(campaign, item_id, list(entry.answers))
    identities = {}
    if reveal:
        identities = {
            e.pseudonym: e.annotator.get_username()
            for e in Enrollment.objects.filter(campaign=campaign).select_related("annotator")
        }
    spec = protocols.get(campaign.protocol)
    sides = []
    for n, pseudonym in enumerate(order, start=1):
        values = entry.answers.get(pseudonym, {})
        # Every answered question, and the primary one even when it is missing.
        rows = [(label, values.get(key, "")) for key, label in spec.answer_columns if values.get(key) or key == spec.primary_key]
        sides.append({"side": n, "pseudonym": pseudonym if reveal else "", "username": identities.get(pseudonym, ""), "rows": rows})
    history = list(
        DecisionRevision.objects.filter(decision__campaign=campaign, decision__item_id=item_id)
        .select_related("decided_by")
        .order_by("-revision")
    )

    def neighbour(offset: int):
        if position is None:
            return None
        index = position + offset
        return entries[index].item.id if 0 <= index < len(entries) else None

    return {
        "spec": spec,
        "item": item,
        "entry": entry,
        "excerpts": excerpts_for(item) if spec.shows_excerpts else [],
        "sides": sides,
        # Detector labels (council/judge votes) stay off the page while the protocol seals them (Lapse:
        # until every disagreement is decided, since the gold decided here validates those detectors).
        "council": [] if spec.detectors_sealed(sum(1 for e in entries if e.needs_decision)) else entry.council,
        "history": history,
        "position": position,
        "queue_length": len(entries),
        "previous_id": neighbour(-1),
        "next_id": neighbour(1),
        "frozen": campaign_is_frozen(campaign),
        # Where gold is the agreed label, a queued item has no label to keep: it must be set.
        "keep_allowed": not (spec.gold_from_answers and entry.reasons),
        "relabel_choices": list(spec.gold_values),
        "gold_verdict": spec.verdict_of(item.gold_type),
        "reason_help": q.REASON_HELP,
    }


def _unqueued_entry(data, item_id: int) -> QueueEntry:
    item = next(i for i in data.items if i.id == item_id)
    answers = data.answer_list(item_id)
    action, why = protocols.get(data.protocol).suggestion(item.gold_type, answers, [])
    return QueueEntry(
        item=item, reasons=[], suggestion=action, suggestion_why=why, decision=data.decisions.get(item_id),
        answers=dict(data.answers.get(item_id, {})), council=data.council.get(item_id, []),
    )
