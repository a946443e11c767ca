"""Reads for the annotator's pages, the API and the author's overview. Each owns its joins, so every
page runs a constant number of queries whatever the campaign size."""

from dataclasses import dataclass
from statistics import median

from django.db.models import Count, Prefetch, prefetch_related_objects

import protocols
from annotation.models import Answer, Assignment, Campaign, Enrollment
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


def current_phase(enrollment: Enrollment) -> int:
    """1 until Phase 1 is complete; then 2 for protocols that have a second phase."""
    if enrollment.phase1_completed_at and protocols.get(enrollment.campaign.protocol).has_phase2:
        return 2
    return 1


def enrollment_progress(enrollment: Enrollment) -> dict:
    total = required_count(enrollment)
    return {
        "phase1": Progress(min(enrollment.phase1_done_count, total), total),
        "phase2": Progress(min(enrollment.phase2_done_count, total), total)
        if protocols.get(enrollment.campaign.protocol).has_phase2
        else None,
        "phase": current_phase(enrollment),
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
    done_field = "phase2_done" if current_phase(enrollment) == 2 else "phase1_done"
    qs = Assignment.objects.filter(enrollment=enrollment, **{done_field: False})
    if enrollment.crisis_declined_at:
        qs = qs.exclude(crisis=True)
    return qs.order_by("position").first()


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
    gold = item.gold_type if phase == 2 else ""
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
        page["phase2_keys"] = spec.phase2_keys_for(item.gold_type)
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
    }


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
