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
from adjudication.models import DecisionRevision, QueueItem, QueueState
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
from items.selectors import excerpts_for, excerpts_prefetched
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
    # Reading the queue brings it up to date first (a write only when answers or votes changed).
    state = queue_sync(campaign=campaign)
    counts = _counts(campaign, state)
    bands_open = _bands_open(spec, state, counts)
    where = _allowed_filter(where, bands_open)
    shown = stored_queue.filtered_count(campaign, where) if where else state.n_queued
    pages = max(1, math.ceil(shown / stored_queue.PAGE_SIZE))
    if at is not None and (stored := stored_queue.row(campaign, at)) is not None and stored.queued:
        page = stored_queue.page_of(campaign, stored, where)
    page = min(max(0, page), pages - 1)
    entries = stored_queue.page(campaign, page, where=where)
    # One reverse() for the page, not two per row (a fifth of the page's time at 100 rows); the item
    # page keeps the filter, so that its next and previous stay within it.
    link = item_link(campaign)
    suffix = item_query(where)
    for entry in entries:
        entry.href = f"{link}{entry.item.id}/{suffix}"
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
        "show_gold": not spec.gold_from_answers,
        "band_choices": list(BANDS) if bands_open else [],
        "at": at,
        "decided": counts.decided,
        "undecided": counts.undecided,
        "n_items": state.n_items,
        "panels": _queue_panels(campaign, spec, state, counts),
        "frozen": campaign_is_frozen(campaign),
        "reason_help": q.REASON_HELP,
    }


def _filter_params(where: stored_queue.QueueFilter | None) -> dict[str, str]:
    if not where:
        return {}
    return {k: v for k, v in (("reason", where.reason), ("type", where.gold_type), ("band", where.band)) if v}


def _filter_query(where: stored_queue.QueueFilter) -> str:
    """The filter as query parameters for the page links ('&reason=…&type=…&band=…', or '')."""
    query = urlencode(_filter_params(where))
    return f"&{query}" if query else ""


def item_link(campaign: Campaign) -> str:
    """The item pages' URL without the item id (one reverse() for any number of links)."""
    return reverse("adjudication:item", args=[campaign.slug, 0]).removesuffix("0/")


def item_query(where: stored_queue.QueueFilter | None, *, reveal: bool = False) -> str:
    """The query string an item page link carries: the queue filter the adjudicator came from (its next,
    previous and "save and next" stay within it) and whether identities are shown ('?…', or '')."""
    params = _filter_params(where) | ({"reveal": "1"} if reveal else {})
    return f"?{urlencode(params)}" if params else ""


def queue_query(where: stored_queue.QueueFilter | None, *, at: int | None = None) -> str:
    """The query string of the way back to the queue page: the filter, and the item whose page to show."""
    params = ({"at": str(at)} if at is not None else {}) | _filter_params(where)
    return f"?{urlencode(params)}" if params else ""


def _counts(campaign: Campaign, state: QueueState) -> stored_queue.QueueCounts:
    """The decision counts, cached per state version (a decision through the service keeps them
    current: services.queue_decision_recorded), else counted and cached."""
    if state.counts_version == state.version:
        return stored_queue.QueueCounts(state.n_decided, state.n_undecided)
    counts = stored_queue.counts(campaign, n_queued=state.n_queued)
    queue_page_cache_store(state=state, counts=(counts.decided, counts.undecided))
    return counts


def _bands_open(spec, state: QueueState, counts: stored_queue.QueueCounts) -> bool:
    """The council band is a detector label: no filter by it without a council or while the protocol seals
    detector labels (a filtered count would tell the band of every item it shows)."""
    return bool(state.council_members) and not spec.detectors_sealed(counts.undecided)


def _allowed_filter(where: stored_queue.QueueFilter | None, bands_open: bool) -> stored_queue.QueueFilter:
    where = where or stored_queue.QueueFilter()
    return dataclasses.replace(where, band="") if where.band and not bands_open else where


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


def item_view(campaign: Campaign, item_id: int, *, reveal: bool = False,
              where: stored_queue.QueueFilter | None = None, state: QueueState | None = None,
              stored: QueueItem | None = None, after: int | None = None) -> dict | None:
    """The side-by-side page of one item; its previous and next follow the queue under `where` (the
    filter the adjudicator came from), its position is its place in the whole queue. `state` and
    `stored`: the queue state as this request already synced it and the item's stored entry with its
    item, as this request read them after that (a decision's answer with the next item's page).
    `after`: the item a decision on which leads to this page (the page fetched ahead), which gives the
    page its key (page_key)."""
    state = state or queue_sync(campaign=campaign)
    stored = stored or stored_queue.row(campaign, item_id, with_item=True)
    if stored is None:
        return None
    item = excerpts_prefetched(stored.item)
    spec = protocols.get(campaign.protocol)
    counts = _counts(campaign, state)
    sealed = spec.detectors_sealed(counts.undecided)
    where = _allowed_filter(where, _bands_open(spec, state, counts))
    position = previous_id = next_id = None
    if stored.queued:  # its reasons and suggestion are stored; its council ballots and decision are read
        # (The sync above applied every decision and counted every council member: an undecided entry has
        # no decision to read, a campaign without a counted vote no ballot.)
        entry = QueueEntry(
            item=item, reasons=stored.reasons, suggestion=stored.suggestion, suggestion_why=stored.suggestion_why,
            decision=campaign_decisions(campaign, item_ids={item_id}).get(item_id) if stored.decided else None,
            council=council_ballots(campaign, item_ids={item_id}).get(item_id, []) if state.council_members else [],
        )
        position = stored_queue.position(stored)
        previous_id, next_id = stored_queue.neighbours(campaign, stored, where)
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
    ) if entry.decision is not None else []  # revisions belong to a decision
    link, suffix = item_link(campaign), item_query(where, reveal=reveal)
    return {
        # Where the page's script fetches the page a decision on this item leads to, ahead of time; and,
        # on a page so fetched, what it was rendered from (a page held still current is shown on "save").
        "page_key": page_key(campaign, item_id, after, state, where=where, reveal=reveal) if after is not None else "",
        "ahead_url": f"{link}{item_id}/next/{suffix}",
        "spec": spec,
        "item": item,
        "entry": entry,
        "excerpts": excerpts_for(item) if spec.shows_excerpts else [],
        "sides": sides,
        # Detector labels (council/judge votes) stay off the page while the protocol seals them (Lapse:
        # until every disagreement is decided, since the gold decided here validates those detectors).
        "council": [] if sealed else entry.council,
        "history": history,
        "position": position,
        "queue_length": state.n_queued,
        "previous_url": f"{link}{previous_id}/{suffix}" if previous_id else "",
        "next_url": f"{link}{next_id}/{suffix}" if next_id else "",
        "queue_url": reverse("adjudication:queue", args=[campaign.slug])
        + queue_query(where, at=item_id if stored.queued else None),
        "where": where,
        "reveal_toggle": item_query(where, reveal=not reveal) or "?",
        "frozen": campaign_is_frozen(campaign),
        # Where gold is the agreed label, a queued item has no label to keep: it must be set.
        "keep_allowed": not (spec.gold_from_answers and entry.reasons),
        "relabel_choices": list(spec.gold_values),
        "gold_verdict": spec.verdict_of(item.gold_label),
        "reason_help": q.REASON_HELP,
        "note_max": NOTE_MAX_CHARS,
        # The protocol's own sections of the page (a judged answer's flags on its question's gold answer).
        "panels": [{"template": p.template, "data": import_string(p.data)(campaign, item)} for p in spec.adjudication_panels],
    }


def page_key(campaign: Campaign, item_id: int, after: int, state: QueueState, *,
             where: stored_queue.QueueFilter | None, reveal: bool, version: int | None = None) -> str:
    """The page of `item_id` as the page a decision on `after` leads to, as a token of what it shows
    beyond the item's own fixed content: the stored queue's version (it changes with every change to the
    stored entries and every decision: reasons, suggestion, decision, history, place, neighbours and which
    item is the next undecided one), the newest council vote (a ballot is shown from the votes
    themselves, before a sync counts it into the version), whether detector labels are sealed (which the
    decision counts set), and the filter and reveal the page carries. Answers no longer change once a
    campaign is closed, which deciding needs. `version`: the queue's version to name, when not `state`'s."""
    spec = protocols.get(campaign.protocol)
    counts = _counts(campaign, state)
    suffix = item_query(_allowed_filter(where, _bands_open(spec, state, counts)), reveal=reveal)
    version = state.version if version is None else version
    sealed = spec.detectors_sealed(counts.undecided)
    return f"{item_id}.{after}.{version}.{getattr(state, 'newest_vote', None)}.{int(sealed)}{suffix}"


def held_page_item(campaign: Campaign, held: str, *, after: int, state: QueueState,
                   where: stored_queue.QueueFilter | None, reveal: bool) -> int | None:
    """The item whose page the browser fetched ahead (its page_key `held`) when that page is the one a
    decision on `after` answers with now, else None. `state` is what that decision left: the page is
    current when it was rendered from the state the decision started from (one version back: nothing else
    changed in between, and so the item that was next is next still) with the same newest vote, is
    sealed as the decision left the counts, and has the same filter and reveal."""
    item_id = held.partition(".")[0]
    if not item_id.isdigit() or not item_id.isascii():
        return None
    expected = page_key(campaign, int(item_id), after, state, where=where, reveal=reveal, version=state.version - 1)
    return int(item_id) if held == expected else None


def next_undecided(campaign: Campaign, *, after: int, where: stored_queue.QueueFilter | None = None,
                   state: QueueState | None = None, after_key: int | None = None) -> QueueItem | None:
    """Where the adjudicator goes after deciding `after`: the next undecided queued item's stored entry,
    with its item (passing `where`, the filter they came from), or None. `state`: the queue state as this
    request already synced it; `after_key`: `after`'s sort_key, as the decision read it (DecisionResult)."""
    state = state or queue_sync(campaign=campaign)
    if where and where.band:  # only where the queue page offers the band filter
        where = _allowed_filter(where, _bands_open(protocols.get(campaign.protocol), state, _counts(campaign, state)))
    return stored_queue.next_undecided(campaign, after=after, where=where, after_key=after_key)


def _unqueued_entry(data, item_id: int) -> QueueEntry:
    item = next(i for i in data.items if i.id == item_id)
    answers = data.answer_list(item_id)
    action, why = protocols.get(data.protocol).suggestion(item.gold_label, answers, [])
    return QueueEntry(
        item=item, reasons=[], suggestion=action, suggestion_why=why, decision=data.decisions.get(item_id),
        answers=dict(data.answers.get(item_id, {})), council=data.council.get(item_id, []),
    )
