"""Reads for the annotator's pages, the API and the author's overview. Each owns its joins, so every
page runs a constant number of queries whatever the campaign size."""

import operator
from dataclasses import dataclass
from functools import reduce
from statistics import median

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, prefetch_related_objects
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

import protocols
from annotation.models import Answer, Assignment, Campaign, Enrollment, Skip
from items.models import Evidence, Item
from items.selectors import excerpts_for, recipient_turns

SHORTCUT_KEYS = "123456789"


def _recipient_turns(item) -> list[dict]:
    return [{"dia_id": t.dia_id, "date": t.session.date_time_raw, "text": t.text} for t in recipient_turns(item)]


# What a question may show with it on the annotator's page (Question.shows). A question is asked only
# in its own phase, so a Phase 2 fact (the quote, the turn index) never reaches a Phase 1 page.
PAGE_FACTS = {
    "quote": lambda item: item.contradicted_quote,
    "recipient_turns": _recipient_turns,
}


@dataclass
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * min(self.done, self.total) / self.total) if self.total else 100

    @property
    def complete(self) -> bool:
        return self.done >= self.total


def required_count(enrollment: Enrollment) -> int:
    """The items an annotator must answer: every assignment, less a declined crisis block. The one
    count; progress, the overview and Phase 1 completion all use it."""
    return enrollment.assigned_count - (enrollment.crisis_count if enrollment.crisis_declined_at else 0)


def phase_label(enrollment: Enrollment, phase: int) -> str:
    """"Phase 2" where the protocol has more than one phase; '' for a one-phase protocol (Lapse), whose
    pages must not speak of phases at all."""
    return f"Phase {phase}" if len(protocols.get(enrollment.campaign.protocol).phases) > 1 else ""


def current_phase(enrollment: Enrollment) -> int:
    """1 until Phase 1 is complete; then 2 for protocols that have a second phase."""
    if enrollment.phase1_completed_at and protocols.get(enrollment.campaign.protocol).has_phase2:
        return 2
    return 1


def enrollment_progress(enrollment: Enrollment) -> dict:
    """Progress per phase, the current phase, its label, and where the work stands: "ready_to_submit"
    when every item of the last phase is answered but the work is not handed in, "ready_to_finish_phase1"
    when Phase 1 is complete but not finished (two-phase protocols)."""
    total = required_count(enrollment)
    has_phase2 = protocols.get(enrollment.campaign.protocol).has_phase2
    phase = current_phase(enrollment)
    phase1 = Progress(min(enrollment.phase1_done_count, total), total)
    phase2 = Progress(min(enrollment.phase2_done_count, total), total) if has_phase2 else None
    current = phase2 if phase == 2 else phase1
    open_work = enrollment.submitted_at is None and enrollment.ended_at is None
    final_phase = phase == 2 or not has_phase2
    return {
        "phase1": phase1,
        "phase2": phase2,
        "phase": phase,
        "phase_label": phase_label(enrollment, phase),
        "current": current,
        "ready_to_submit": open_work and final_phase and current.complete,
        "ready_to_finish_phase1": open_work and not final_phase and current.complete,
    }


def my_enrollments(user) -> list[dict]:
    """The campaigns a user annotates, with progress per phase (one query: counters live on Enrollment)."""
    enrollments = Enrollment.objects.filter(annotator=user).select_related("campaign").order_by("-campaign__created_at")
    return [{"enrollment": e, "campaign": e.campaign, **enrollment_progress(e)} for e in enrollments]


def campaigns_for_author(user) -> list[Campaign]:
    """Every campaign, for an author's overview links (one query)."""
    return list(Campaign.objects.select_related("item_set").order_by("-created_at"))


def resume_assignment(enrollment: Enrollment) -> Assignment | None:
    """The first item still to answer in the current phase (None when the phase is done).

    Reads the assignment's own copy of its answer's phase flag (kept by answer_save in the same
    transaction), so the database walks the partial index of open assignments and stops at the first:
    the time does not grow with the number of items already answered."""
    phase = current_phase(enrollment)
    qs = _open_in_phase(enrollment, phase)
    # Items skipped in this phase come back only once every other open item is answered.
    return qs.exclude(skips__phase=phase).order_by("position").first() or qs.order_by("position").first()


def _open_in_phase(enrollment: Enrollment, phase: int):
    """The assignments still to answer in `phase` (a declined crisis block left out): the partial index."""
    done_field = "phase2_done" if phase == 2 else "phase1_done"
    qs = Assignment.objects.filter(enrollment=enrollment, **{done_field: False})
    if enrollment.crisis_declined_at:
        qs = qs.exclude(crisis=True)
    return qs


def next_open_assignment(enrollment: Enrollment, after_position: int) -> Assignment | None:
    """Where an explicit skip leads: the next item after `after_position` (0-based) still to answer in the
    current phase and not skipped, wrapping round to the start; None when only skipped ones are left."""
    phase = current_phase(enrollment)
    qs = _open_in_phase(enrollment, phase).exclude(skips__phase=phase)
    return (
        qs.filter(position__gt=after_position).order_by("position").first()
        or qs.filter(position__lt=after_position).order_by("position").first()
    )


def _questions(questions, values: dict) -> list[dict]:
    """The page's choice questions; keyboard shortcuts run on across them (q2: 1 2, q2quote: 3 4)."""
    shortcuts = iter(SHORTCUT_KEYS)
    return [
        {
            "key": q.key,
            "label": q.label,
            "choices": [{"value": c, "shortcut": next(shortcuts, ""), "selected": values.get(q.key) == c} for c in q.choices],
        }
        for q in questions
    ]


def phase_answered(spec, phase: int, values: dict) -> bool:
    """Whether anything of this phase has been answered on the item (a Phase 2 page holds the Phase 1
    answer already: that is not a save of this page)."""
    return any(values.get(q.key) for q in spec.questions if q.phase == phase)


def item_page(assignment: Assignment) -> dict:
    """Everything the item page shows, as the campaign's protocol declares it. Phase 1 is built from
    the blind whitelist and the excerpts only; the gold-dependent Phase 2 questions (and what they
    show, e.g. the quote) are added only once Phase 2 is open."""
    enrollment = assignment.enrollment
    campaign = enrollment.campaign
    spec = protocols.get(campaign.protocol)
    item = assignment.item
    if spec.shows_excerpts:
        prefetch_related_objects(
            [item], Prefetch("evidence", queryset=Evidence.objects.select_related("turn__session"))
        )
    answer = getattr(assignment, "answer", None)
    values = dict(answer.values) if answer else {}
    phase = current_phase(enrollment)
    # The gold decides which Phase 2 questions apply; it is never consulted before Phase 2 opens.
    gold = item.gold_label if phase == 2 else ""
    asked = [q for q in spec.asked(phase, gold) if q.choices is not None]
    note_key = spec.note_key(phase)
    page = {
        "assignment": assignment,
        "campaign": campaign,
        "enrollment": enrollment,
        "template": spec.item_template,
        "item": protocols.blind_view(item),
        "values": values,
        "phase": phase,
        "phase_label": phase_label(enrollment, phase),
        "phase_answered": phase_answered(spec, phase, values),
        "position": assignment.position + 1,
        "total": enrollment.assigned_count,
        "previous": assignment.position if assignment.position > 0 else None,
        "next": assignment.position + 2 if assignment.position + 1 < enrollment.assigned_count else None,
        "conventions": [*spec.conventions, *(spec.phase2_conventions if phase == 2 else ())],
        "locked": enrollment.submitted_at is not None,
        "progress": enrollment_progress(enrollment),
        "questions": _questions(asked, values),
        "note_key": note_key,
        "note_value": values.get(note_key, ""),
    }
    if spec.shows_excerpts:
        page["excerpts"] = excerpts_for(item)
    for question in asked:
        for fact in question.shows:
            page[fact] = PAGE_FACTS[fact](item)
    if phase == 2:
        page["phase2_keys"] = spec.phase2_keys_for(item.gold_label)
    return page


def campaign_item_counts(campaign: Campaign) -> dict:
    """How many items the campaign holds, of how many candidates in its item set, and how many of those
    a blocking gate rejected (never annotated). Two counts, whatever the size."""
    candidates = dict(
        Item.objects.filter(item_set_id=campaign.item_set_id).values_list("gate_rejected").annotate(n=Count("id")).order_by()
    )
    assigned = Assignment.objects.filter(enrollment__campaign=campaign).count()
    return {
        "items": assigned // campaign.per_item if campaign.per_item else 0,
        "candidates": sum(candidates.values()),
        "gate_rejected": candidates.get(True, 0),
    }


def campaign_overview(campaign: Campaign) -> list[dict]:
    """Per-annotator progress, time per item, time left, skipped and declined items — never answers.

    Two queries: the enrollments, and (enrollment, position, time, done) of every answer."""
    enrollments = list(Enrollment.objects.filter(campaign=campaign).select_related("annotator", "campaign"))
    rows = Answer.objects.filter(assignment__enrollment__campaign=campaign).values_list(
        "assignment__enrollment_id", "assignment__position", "time_on_item_ms", "phase1_done"
    )
    times: dict[int, list[int]] = {e.pk: [] for e in enrollments}
    answered: dict[int, list[int]] = {e.pk: [] for e in enrollments}
    for enrollment_id, position, ms, done in rows:
        if done:
            answered[enrollment_id].append(position)
            if ms:
                times[enrollment_id].append(ms)
    overview = []
    for e in enrollments:
        progress = enrollment_progress(e)
        required = required_count(e)
        positions = answered[e.pk]
        skipped = (max(positions) + 1 - len(positions)) if positions else 0
        med = median(times[e.pk]) if times[e.pk] else None
        left = required - progress["phase1"].done
        if progress["phase2"] is not None:
            left += required - progress["phase2"].done
        overview.append({
            "enrollment": e,
            **progress,
            "median_ms": med,
            "left_items": left,
            "eta_ms": med * left if med is not None else None,
            "skipped": skipped,
            "declined": e.assigned_count - required,
        })
    return overview


def phase_review(enrollment: Enrollment) -> dict:
    """The review screen before finishing Phase 1 or submitting: how many items are answered, how many
    took each choice of the phase's main question (so "cannot-tell" shows), and which are unanswered,
    by position. Built from the annotator's own answers only; two queries."""
    spec = protocols.get(enrollment.campaign.protocol)
    phase = current_phase(enrollment)
    qs = Assignment.objects.filter(enrollment=enrollment)
    if enrollment.crisis_declined_at:
        qs = qs.exclude(crisis=True)
    rows = list(qs.order_by("position").values_list("position", "answer__values", "answer__phase1_done",
                                                     "answer__phase2_done"))
    done_index = 2 if phase == 1 else 3
    unanswered = [row[0] + 1 for row in rows if not row[done_index]]
    counts = {}
    if phase == 1:
        question = spec.question_map()[spec.primary_key]
        counts = {choice: 0 for choice in question.choices or ()}
        for _, values, *_ in rows:
            choice = (values or {}).get(spec.primary_key)
            if choice in counts:
                counts[choice] += 1
    final_phase = 2 if spec.has_phase2 else 1
    return {
        "phase": phase,
        "total": len(rows),
        "answered": len(rows) - len(unanswered),
        "unanswered": unanswered,
        "choice_counts": counts,
        "primary_key": spec.primary_key,
        # What the review leads to: finishing Phase 1 (its answers lock, Phase 2 opens) or submitting.
        "action": "submit" if phase == final_phase else "finish_phase1",
        "answered_any": enrollment.phase1_done_count > 0,
        "phase_label": phase_label(enrollment, phase),
    }


# ----- the annotator's item list -------------------------------------------------------------------------

ITEM_LIST_PAGE = 100
# filter -> its name on the page; "cannot_tell" only where the protocol has an abstention.
ITEM_LIST_FILTERS = {
    "all": "All",
    "unanswered": "Unanswered",
    "answered": "Answered",
    "cannot_tell": "Cannot tell",
    "noted": "With a note",
}


def _item_list_conditions(spec, phase: int) -> dict[str, Q]:
    done = Q(**{"phase2_done" if phase == 2 else "phase1_done": True})
    # A note is there when its key holds a non-empty text (autosave leaves "" behind a deleted note).
    notes = [Q(answer__values__has_key=q.key) & ~Q(**{f"answer__values__{q.key}": ""}) for q in spec.questions if q.note]
    noted = reduce(operator.or_, notes) if notes else Q(pk=None)  # no note question: nothing is noted
    conditions = {"all": Q(), "unanswered": ~done, "answered": done, "noted": noted}
    if spec.abstain:
        conditions["cannot_tell"] = Q(**{f"answer__values__{spec.primary_key}": spec.abstain})
    return conditions


def item_list(enrollment: Enrollment, *, show: str = "all", page: int = 1) -> dict:
    """The annotator's own items in their order, filtered, a page at a time: positions and their own
    answers' state only (answered in this phase, skipped, cannot-tell, noted) — never an item id, a hidden
    field or anyone else's answer. Two queries whatever the campaign size (the counts of every filter in
    one, the page's rows in the other)."""
    spec = protocols.get(enrollment.campaign.protocol)
    phase = current_phase(enrollment)
    conditions = _item_list_conditions(spec, phase)
    if show not in conditions:
        show = "all"
    qs = Assignment.objects.filter(enrollment=enrollment)
    if enrollment.crisis_declined_at:
        qs = qs.exclude(crisis=True)
    counts = qs.aggregate(**{name: Count("pk", filter=condition) for name, condition in conditions.items()})
    total = counts[show]
    pages = max(1, -(-total // ITEM_LIST_PAGE))
    page = min(max(1, page), pages)
    done_field = "phase2_done" if phase == 2 else "phase1_done"
    note_keys = [q.key for q in spec.questions if q.note]
    rows = []
    start = (page - 1) * ITEM_LIST_PAGE
    skipped_here = Exists(Skip.objects.filter(assignment=OuterRef("pk"), phase=phase))
    for position, done, skipped, crisis, values in (
        qs.filter(conditions[show]).annotate(skipped=skipped_here).order_by("position")
        .values_list("position", done_field, "skipped", "crisis", "answer__values")[start:start + ITEM_LIST_PAGE]
    ):
        values = values or {}
        rows.append({
            "position": position + 1,
            "done": done,
            "skipped": not done and skipped,
            "crisis": crisis,
            "answer": values.get(spec.primary_key, ""),
            "cannot_tell": bool(spec.abstain) and values.get(spec.primary_key) == spec.abstain,
            "noted": any(values.get(k) for k in note_keys),
        })
    return {
        "rows": rows,
        "show": show,
        "filters": [
            {"name": name, "label": label, "count": counts[name]}
            for name, label in ITEM_LIST_FILTERS.items() if name in conditions
        ],
        "page": page,
        "pages": pages,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
        "phase": phase,
        "phase_label": phase_label(enrollment, phase),
        "primary_label": spec.question_map()[spec.primary_key].label,
    }


# ----- guidelines --------------------------------------------------------------------------------------

# CommonMark with raw HTML off: a tag in the guidelines is shown as text, never run; links keep
# markdown-it's own refusal of javascript:, vbscript:, file: and data: URLs.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def guidelines_html(campaign: Campaign) -> SafeString:
    """The campaign's guidelines as HTML safe to put on a page ('' when there are none)."""
    if not campaign.guidelines:
        return mark_safe("")
    return mark_safe(_MARKDOWN.render(campaign.guidelines))


def campaign_conventions(enrollment: Enrollment) -> list[str]:
    """The protocol's conventions as the annotator's current phase shows them."""
    spec = protocols.get(enrollment.campaign.protocol)
    return [*spec.conventions, *(spec.phase2_conventions if current_phase(enrollment) == 2 else ())]


def guidelines_due(enrollment: Enrollment) -> bool:
    """The annotator has not read the campaign's guidelines since they were last written (first visit)."""
    campaign = enrollment.campaign
    if not campaign.guidelines:
        return False
    seen = enrollment.guidelines_seen_at
    return seen is None or (campaign.guidelines_updated_at is not None and seen < campaign.guidelines_updated_at)


def export_keyed_by_id(enrollment: Enrollment) -> bool:
    """Whether the annotator's own answer file may name items by id: only once none of their answers
    can change any more (submitted, ended, or the campaign closed). Before that it names them by
    position — an id can name the generation batch (TWIST) or the constructed label (Lapse), so a file
    keyed by id would hand the annotator gold while their labels can still change."""
    return (
        enrollment.submitted_at is not None
        or enrollment.ended_at is not None
        or enrollment.campaign.status != Campaign.Status.ANNOTATING
    )


def order_disclosure(campaign: Campaign) -> dict | None:
    """The secret the annotators' orders were drawn from, for publication with the release — only once
    no annotator of the campaign can answer any more (the campaign is closed or frozen); None before.
    An order given by an explicit seed is disclosed by that seed (order_secret None)."""
    if campaign.status == Campaign.Status.ANNOTATING:
        return None
    return {"seed": campaign.seed, "order_secret": campaign.order_secret}
