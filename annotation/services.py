"""Writes for campaigns, assignments and answers. Every path (web, API, import, admin) comes through here."""

import random
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

import protocols
from annotation.models import Answer, AnswerRevision, Assignment, Campaign, Enrollment, Protocol
from goldkey.errors import ApplicationError, NotAllowed
from items.models import Item, ItemKind, ItemSet

PROTOCOL_FOR_KIND = {ItemKind.TWIST: Protocol.TWIST_B, ItemKind.LAPSE: Protocol.LAPSE}


def pseudonym_for(index: int) -> str:
    """'A', 'B', … 'Z', 'AA', …: the annotator names of the released answer files."""
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = chr(65 + rem) + name
    return name


def annotator_sets(item_ids: list[int], annotators: int, per_item: int, seed: int) -> list[list[int]]:
    """Which annotators (by index) label each item: exactly `per_item` distinct ones, balanced.

    With per_item == annotators everyone labels everything; otherwise a seeded rotation spreads
    the load evenly."""
    if per_item == annotators:
        return [list(range(annotators)) for _ in item_ids]
    rng = random.Random(f"{seed}:sets")
    start = rng.randrange(annotators)
    return [sorted((start + i * per_item + j) % annotators for j in range(per_item)) for i in range(len(item_ids))]


@transaction.atomic
def campaign_create(
    *,
    slug: str,
    item_set: ItemSet,
    annotators: list,
    per_item: int = 2,
    seed: int | None = None,
    name: str = "",
    crisis_block: bool = False,
    created_by=None,
    pseudonyms: list[str] | None = None,
) -> Campaign:
    """A campaign over every item of `item_set`: each item goes to exactly `per_item` distinct annotators,
    and each annotator's order is a seeded permutation stored as positions."""
    if Campaign.objects.filter(slug=slug).exists():
        raise ApplicationError(f"campaign '{slug}' already exists")
    if len(set(a.pk for a in annotators)) != len(annotators):
        raise ApplicationError("each annotator may be named only once")
    if per_item < 1 or per_item > len(annotators):
        raise ApplicationError(f"--per-item {per_item} needs at least {per_item} annotators (got {len(annotators)})")
    if pseudonyms is not None and len(pseudonyms) != len(annotators):
        raise ApplicationError("give one pseudonym per annotator")
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    protocol = PROTOCOL_FOR_KIND[item_set.kind]
    campaign = Campaign.objects.create(
        slug=slug,
        name=name or slug,
        item_set=item_set,
        protocol=protocol,
        per_item=per_item,
        seed=seed,
        crisis_block=crisis_block,
        created_by=created_by,
    )
    item_ids = list(Item.objects.filter(item_set=item_set).order_by("external_id").values_list("id", flat=True))
    if not item_ids:
        raise ApplicationError(f"item set '{item_set.name}' has no items")
    crisis_ids = set()
    if crisis_block:
        crisis_ids = set(
            Item.objects.filter(item_set=item_set, hidden__crisis=True).values_list("id", flat=True)
        )
    per_annotator: list[list[int]] = [[] for _ in annotators]
    for item_id, chosen in zip(item_ids, annotator_sets(item_ids, len(annotators), per_item, seed), strict=True):
        for index in chosen:
            per_annotator[index].append(item_id)
    enrollments = Enrollment.objects.bulk_create(
        Enrollment(
            campaign=campaign,
            annotator=user,
            pseudonym=(pseudonyms[index] if pseudonyms else pseudonym_for(index)),
            order_seed=random.Random(f"{seed}:{index}").randrange(2**31),
            assigned_count=len(per_annotator[index]),
            crisis_count=sum(item_id in crisis_ids for item_id in per_annotator[index]),
        )
        for index, user in enumerate(annotators)
    )
    assignments = []
    for enrollment, ids in zip(enrollments, per_annotator, strict=True):
        order = list(ids)
        random.Random(enrollment.order_seed).shuffle(order)
        # The crisis block is a separate, declinable block: it comes after the rest.
        order.sort(key=lambda i: i in crisis_ids)
        assignments.extend(
            Assignment(enrollment=enrollment, item_id=item_id, position=position, crisis=item_id in crisis_ids)
            for position, item_id in enumerate(order)
        )
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    return campaign


def campaign_create_from_names(*, slug: str, item_set_name: str, usernames: list[str], **kwargs) -> Campaign:
    try:
        item_set = ItemSet.objects.get(name=item_set_name)
    except ItemSet.DoesNotExist as exc:
        raise ApplicationError(f"no item set named '{item_set_name}'") from exc
    users = {u.username: u for u in get_user_model().objects.filter(username__in=usernames)}
    missing = [name for name in usernames if name not in users]
    if missing:
        raise ApplicationError(f"no such user(s): {', '.join(missing)}")
    return campaign_create(slug=slug, item_set=item_set, annotators=[users[n] for n in usernames], **kwargs)


@dataclass
class SaveResult:
    answer: Answer
    changed: bool
    phase1_completed: bool = False  # this save completed Phase 1 (Phase 2 is now open)


def _required(enrollment: Enrollment) -> int:
    return enrollment.assigned_count - (enrollment.crisis_count if enrollment.crisis_declined_at else 0)


def _open_assignments(enrollment: Enrollment):
    qs = Assignment.objects.filter(enrollment=enrollment)
    if enrollment.crisis_declined_at:
        qs = qs.exclude(crisis=True)
    return qs


def phase1_missing(enrollment: Enrollment) -> bool:
    """Exact check: some assignment (outside a declined crisis block) has no Phase 1 answer yet."""
    return (
        _open_assignments(enrollment)
        .filter(Q(answer__isnull=True) | Q(answer__phase1_done=False))
        .exists()
    )


def phase2_missing(enrollment: Enrollment) -> bool:
    return (
        _open_assignments(enrollment)
        .filter(Q(answer__isnull=True) | Q(answer__phase2_done=False))
        .exists()
    )


def _complete_phase1_if_done(enrollment: Enrollment) -> bool:
    """Record Phase 1 completion once every open assignment has its verdict (counter hint, exact check)."""
    if enrollment.phase1_completed_at or enrollment.phase1_done_count < _required(enrollment):
        return False
    if phase1_missing(enrollment):
        return False
    enrollment.phase1_completed_at = timezone.now()
    Enrollment.objects.filter(pk=enrollment.pk).update(phase1_completed_at=enrollment.phase1_completed_at)
    return True


def answer_save(
    *,
    assignment: Assignment,
    values: dict,
    user=None,
    source: str = "web",
    time_on_item_ms: int = 0,
    replace: bool = False,
    answered_at=None,
    extra: dict | None = None,
) -> SaveResult:
    """Merge `values` into the assignment's answer (autosave sends one field at a time).

    Saving the same values again is a no-op (double submits and retries change nothing); every real
    change appends an AnswerRevision, so nothing is ever overwritten without trace.

    The two-phase lock lives here, once, so that web, API and import all obey it: Phase 2 answers are
    refused until Phase 1 is complete for every assigned item, Phase 1 answers are frozen from then on,
    and nothing changes after the annotator has submitted."""
    campaign = assignment.enrollment.campaign
    protocol = campaign.protocol
    gold_type = assignment.item.gold_type
    # Keys and choices first: these checks do not depend on the item's gold type.
    problems = protocols.get(protocol).validate_values(values)
    if problems:
        raise ApplicationError(f"{assignment.item.external_id}: " + "; ".join(problems), extra={"errors": problems})
    with transaction.atomic():
        # Lock the enrollment: its phase milestones and progress counters change with this save, and
        # a concurrent save by the same annotator (another tab) must see them.
        enrollment = Enrollment.objects.select_for_update().get(pk=assignment.enrollment_id)
        # Lock the answer row: two tabs saving at once must each see the other's merged values.
        answer, _ = Answer.objects.select_for_update().get_or_create(assignment=assignment)
        merged = dict(values) if replace else {**answer.values, **values}
        changed_keys = {k for k in set(merged) | set(answer.values) if merged.get(k, "") != answer.values.get(k, "")}
        changed = merged != answer.values
        if changed_keys:
            _check_phase_lock(protocol, enrollment, changed_keys, assignment.item.external_id)
        # Which Phase 2 questions apply depends on the gold type: checked only after the phase lock,
        # so that a Phase 1 annotator probing with Phase 2 keys learns nothing from the refusal.
        problems = protocols.get(protocol).validate_values(values, gold_type)
        if problems:
            raise ApplicationError(f"{assignment.item.external_id}: " + "; ".join(problems), extra={"errors": problems})
        if changed and enrollment.submitted_at:
            changed = False  # only empty-string keys differ: nothing to record after submission
        if time_on_item_ms:
            answer.time_on_item_ms += max(0, int(time_on_item_ms))
        if extra:
            answer.extra = {**answer.extra, **extra}
        completed = False
        if changed:
            answer.values = merged
            answer.revision += 1
            answer.answered_at = answered_at or timezone.now()
            was1, was2 = answer.phase1_done, answer.phase2_done
            answer.phase1_done = protocols.get(protocol).phase1_done(merged)
            answer.phase2_done = protocols.get(protocol).phase2_done(merged, gold_type)
            AnswerRevision.objects.create(
                answer=answer, revision=answer.revision, values=merged, source=source, saved_by=user
            )
            delta1 = int(answer.phase1_done) - int(was1)
            delta2 = int(answer.phase2_done) - int(was2)
            if delta1 or delta2:
                enrollment.phase1_done_count += delta1
                enrollment.phase2_done_count += delta2
                Enrollment.objects.filter(pk=enrollment.pk).update(
                    phase1_done_count=F("phase1_done_count") + delta1,
                    phase2_done_count=F("phase2_done_count") + delta2,
                )
        if changed or time_on_item_ms or extra:
            answer.save()
        if changed and answer.phase1_done:
            completed = _complete_phase1_if_done(enrollment)
    assignment.enrollment.__dict__.update(
        {k: getattr(enrollment, k) for k in ("phase1_completed_at", "phase1_done_count", "phase2_done_count")}
    )
    return SaveResult(answer=answer, changed=changed, phase1_completed=completed)


def _check_phase_lock(protocol: str, enrollment: Enrollment, keys: set[str], item_id: str) -> None:
    if enrollment.submitted_at:
        raise NotAllowed(f"{item_id}: this annotation was submitted on {enrollment.submitted_at:%Y-%m-%d}; it is final")
    if not protocols.get(protocol).has_phase2:
        return
    phases = {protocols.get(protocol).phase_of(key) for key in keys}
    if 1 in phases and enrollment.phase1_completed_at:
        raise NotAllowed(f"{item_id}: Phase 1 is locked (completed {enrollment.phase1_completed_at:%Y-%m-%d %H:%M})")
    if 2 in phases and not enrollment.phase1_completed_at:
        raise NotAllowed(f"{item_id}: Phase 2 opens once Phase 1 is answered for every assigned item")


def enrollment_mark(*, enrollment: Enrollment, milestone: str) -> Enrollment:
    """Record phase1_completed_at / submitted_at / crisis_declined_at once (the first time counts)."""
    if milestone not in {"phase1_completed_at", "submitted_at", "crisis_declined_at", "crisis_notice_seen_at"}:
        raise ValueError(milestone)
    Enrollment.objects.filter(pk=enrollment.pk, **{f"{milestone}__isnull": True}).update(**{milestone: timezone.now()})
    enrollment.refresh_from_db()
    return enrollment


@transaction.atomic
def enrollment_close_phase1(*, enrollment: Enrollment) -> Enrollment:
    """Close Phase 1 now, answered or not: for loading a finished, exported annotation (whose Phase 2
    answers exist) that left some verdict missing. The annotator's pages never call this: for them
    Phase 1 closes only when every open item has its verdict (`answer_save`)."""
    if not protocols.get(enrollment.campaign.protocol).has_phase2:
        return enrollment
    enrollment = Enrollment.objects.select_for_update().select_related("campaign").get(pk=enrollment.pk)
    return enrollment_mark(enrollment=enrollment, milestone="phase1_completed_at")


@transaction.atomic
def enrollment_submit(*, enrollment: Enrollment) -> Enrollment:
    """Hand in the annotation: every open item answered in every phase. Recorded once, for disclosure;
    from then on this annotator may see the campaign's unblinded material (if an author)."""
    enrollment = Enrollment.objects.select_for_update().select_related("campaign").get(pk=enrollment.pk)
    if enrollment.submitted_at:
        return enrollment
    if phase1_missing(enrollment):
        raise ApplicationError("Phase 1 is not complete: answer every item before submitting")
    _complete_phase1_if_done(enrollment)
    if protocols.get(enrollment.campaign.protocol).has_phase2 and phase2_missing(enrollment):
        raise ApplicationError("Phase 2 is not complete: answer every item before submitting")
    return enrollment_mark(enrollment=enrollment, milestone="submitted_at")


@transaction.atomic
def crisis_block_decline(*, enrollment: Enrollment) -> Enrollment:
    """Decline the whole crisis block (PROTOCOL §8); the rest of the work is unaffected."""
    enrollment = Enrollment.objects.select_for_update().get(pk=enrollment.pk)
    if not enrollment.crisis_count:
        raise ApplicationError("this campaign has no crisis block for you")
    if enrollment.submitted_at:
        raise NotAllowed("this annotation was submitted; it is final")
    enrollment = enrollment_mark(enrollment=enrollment, milestone="crisis_declined_at")
    _complete_phase1_if_done(enrollment)
    return enrollment


def crisis_notice_accept(*, enrollment: Enrollment) -> Enrollment:
    if not enrollment.crisis_count:
        raise ApplicationError("this campaign has no crisis block for you")
    if enrollment.crisis_declined_at:
        raise NotAllowed("you declined the crisis block")
    return enrollment_mark(enrollment=enrollment, milestone="crisis_notice_seen_at")
