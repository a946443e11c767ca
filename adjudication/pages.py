"""What the adjudication pages show, composed from the stored queue and selectors in a fixed number of
queries whatever the campaign size."""

import dataclasses
import math
import random
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.module_loading import import_string

import protocols
from adjudication import queue as q
from adjudication import stored_queue
from adjudication.models import DecisionRevision, QueueState
from adjudication.selectors import (
    QueueEntry,
    campaign_data,
    campaign_decisions,
    campaign_is_frozen,
    council_ballots,
    full_answers,
    queue_from_data,
)
from adjudication.services import NOTE_MAX_CHARS, queue_page_cache_store, queue_sync
from annotation.models import Campaign, Enrollment
from goldkey.lib.statistics import json_safe
from items.models import Item
from items.selectors import excerpts_for, items_with_excerpts
from protocols.base import BANDS


def sides_for(campaign: Campaign, item_id: int, pseudonyms: list[str]) -> list[str]:
    """The order in which the annotators' answers are shown for one item: shuffled per item with a seed
    derived from the campaign seed and the item, so it is random across items but stable on reload."""
    order = sorted(pseudonyms)
    random.Random(f"{campaign.seed}:{item_id}:sides").shuffle(order)
    return order


def queue_filter(spec, *, reason: str = "", gold_type: str = "", band: str = "") -> stored_queue.QueueFilter:
    """The queue page's filter from request values: a value the protocol does not know is no filter
    (a stale bookmark shows the whole queue rather than an error)."""
    return stored_queue.QueueFilter(
        reason=reason if reason in spec.reasons else "",
        gold_type=gold_type if gold_type in spec.gold_values and not spec.gold_from_answers else "",
        band=band if band in BANDS else "",
    )


def queue_page_view(campaign: Campaign, *, page: int = 0, where: stored_queue.QueueFilter | None = None,
                    at: int | None = None) -> dict:
    """The queue page from the stored queue: a page of entries (of those passing `where`), the counts,
    and the protocol's panels, whose figures are cached per campaign state. `at`: an item id whose page
    is shown instead of `page` (the item page's way back to the queue)."""
    spec = protocols.get(campaign.protocol)
    where = where or stored_queue.QueueFilter()
    # Reading the queue brings it up to date first (a write only when answers or votes changed).
    state = queue_sync(campaign=campaign)
    if state.counts_version == state.version:
        counts = stored_queue.QueueCounts(state.n_decided, state.n_undecided)
    else:
        counts = stored_queue.counts(campaign, n_queued=state.n_queued)
        queue_page_cache_store(state=state, counts=(counts.decided, counts.undecided))
    # The council band is a detector label: no filter by it without a council or while the protocol seals
    # detector labels (a filtered count would tell the band of every item it shows).
    bands_open = bool(state.council_members) and not spec.detectors_sealed(counts.undecided)
    if where.band and not bands_open:
        where = dataclasses.replace(where, band="")
    shown = stored_queue.filtered_count(campaign, where) if where else state.n_queued
    pages = max(1, math.ceil(shown / stored_queue.PAGE_SIZE))
    if at is not None and (stored := stored_queue.row(campaign, at)) is not None and stored.queued:
        page = stored_queue.page_of(campaign, stored, where)
    page = min(max(0, page), pages - 1)
    entries = stored_queue.page(campaign, page, where=where)
    # One reverse() for the page, not two per row (a fifth of the page's time at 100 rows).
    link = reverse("adjudication:item", args=[campaign.slug, 0]).removesuffix("0/")
    for entry in entries:
        entry.href = f"{link}{entry.item.id}/"
    return {
        "spec": spec,
        "entries": entries,
        "first_number": page * stored_queue.PAGE_SIZE,
        "page": page,
        "pages": pages,
        "n_queued": state.n_queued,
        "n_shown": shown,
        "where": where,
        "filter_query": _filter_query(where),
        "reason_choices": list(spec.reasons),
        "type_choices": [] if spec.gold_from_answers else list(spec.gold_values),
        "band_choices": list(BANDS) if bands_open else [],
        "at": at,
        "decided": counts.decided,
        "undecided": counts.undecided,
        "n_items": state.n_items,
        "panels": _queue_panels(campaign, spec, state, counts),
        "frozen": campaign_is_frozen(campaign),
        "reason_help": q.REASON_HELP,
    }


def _filter_query(where: stored_queue.QueueFilter) -> str:
    """The filter as query parameters for the page links ('&reason=…&type=…&band=…', or '')."""
    query = urlencode({k: v for k, v in (("reason", where.reason), ("type", where.gold_type), ("band", where.band)) if v})
    return f"&{query}" if query else ""


def queue_export_view(campaign: Campaign) -> dict:
    """What the queue's CSV holds: the queue entries and the annotators' pseudonyms, in a fixed number of queries."""
    data = campaign_data(campaign)
    return {"spec": protocols.get(campaign.protocol), "entries": queue_from_data(data), "pseudonyms": list(data.pseudonyms)}


def _queue_panels(campaign: Campaign, spec, state: QueueState, counts: stored_queue.QueueCounts) -> list[dict]:
    """The protocol's own sections (TWIST: the retained set against the bar), resolved by name, computed
    once per campaign state: `QueueState.version` changes with every change to the stored entries and
    every decision."""
    if not spec.queue_panels:
        return []
    figures = state.figures if state.figures_version == state.version else None
    if figures is None:
        figures = {
            p.data: json_safe(import_string(p.data)(campaign, undecided=counts.undecided)) for p in spec.queue_panels
        }
        queue_page_cache_store(state=state, figures=figures)
    return [{"template": p.template, "data": figures[p.data]} for p in spec.queue_panels]


def item_view(campaign: Campaign, item_id: int, *, reveal: bool = False) -> dict | None:
    state = queue_sync(campaign=campaign)
    stored = stored_queue.row(campaign, item_id)
    if stored is None:
        return None
    item = items_with_excerpts(Item.objects.filter(pk=item_id)).get()
    position = previous_id = next_id = None
    if stored.queued:  # its reasons and suggestion are stored; its council ballots and decision are read
        entry = QueueEntry(
            item=item, reasons=stored.reasons, suggestion=stored.suggestion, suggestion_why=stored.suggestion_why,
            decision=campaign_decisions(campaign, item_ids={item_id}).get(item_id),
            council=council_ballots(campaign, item_ids={item_id}).get(item_id, []),
        )
        position = stored_queue.position(campaign, stored)
        previous_id, next_id = stored_queue.neighbours(campaign, stored)
    else:  # what the queue's rule suggests for an item it does not queue
        entry = _unqueued_entry(campaign_data(campaign, item_ids={item_id}, council_members=state.council_members), item_id)
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
    return {
        "spec": spec,
        "item": item,
        "entry": entry,
        "excerpts": excerpts_for(item) if spec.shows_excerpts else [],
        "sides": sides,
        # Detector labels (council/judge votes) stay off the page while the protocol seals them (Lapse:
        # until every disagreement is decided, since the gold decided here validates those detectors).
        "council": [] if spec.detectors_sealed(stored_queue.counts(campaign, n_queued=state.n_queued).undecided)
        else entry.council,
        "history": history,
        "position": position,
        "queue_length": state.n_queued,
        "previous_id": previous_id,
        "next_id": next_id,
        "frozen": campaign_is_frozen(campaign),
        # Where gold is the agreed label, a queued item has no label to keep: it must be set.
        "keep_allowed": not (spec.gold_from_answers and entry.reasons),
        "relabel_choices": list(spec.gold_values),
        "gold_verdict": spec.verdict_of(item.gold_type),
        "reason_help": q.REASON_HELP,
        "note_max": NOTE_MAX_CHARS,
    }


def next_undecided(campaign: Campaign, *, after: int) -> int | None:
    """Where the adjudicator goes after deciding `after`: the next undecided queued item (or None)."""
    queue_sync(campaign=campaign)
    return stored_queue.next_undecided(campaign, after=after)


def _unqueued_entry(data, item_id: int) -> QueueEntry:
    item = next(i for i in data.items if i.id == item_id)
    answers = data.answer_list(item_id)
    action, why = protocols.get(data.protocol).suggestion(item.gold_type, answers, [])
    return QueueEntry(
        item=item, reasons=[], suggestion=action, suggestion_why=why, decision=data.decisions.get(item_id),
        answers=dict(data.answers.get(item_id, {})), council=data.council.get(item_id, []),
    )
