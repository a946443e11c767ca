"""Writes for campaigns, assignments and answers. Every path (web, API, import, admin) comes through here."""

import random
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import Answer, AnswerRevision, Assignment, Campaign, Enrollment, Protocol
from annotation.protocols import validate_values
from goldkey.errors import ApplicationError
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
    enrollments = Enrollment.objects.bulk_create(
        Enrollment(
            campaign=campaign,
            annotator=user,
            pseudonym=(pseudonyms[index] if pseudonyms else pseudonym_for(index)),
            order_seed=random.Random(f"{seed}:{index}").randrange(2**31),
        )
        for index, user in enumerate(annotators)
    )
    per_annotator: list[list[int]] = [[] for _ in annotators]
    for item_id, chosen in zip(item_ids, annotator_sets(item_ids, len(annotators), per_item, seed), strict=True):
        for index in chosen:
            per_annotator[index].append(item_id)
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


def answer_save(
    *,
    assignment: Assignment,
    values: dict,
    user=None,
    source: str = "web",
    time_on_item_ms: int = 0,
    replace: bool = False,
) -> SaveResult:
    """Merge `values` into the assignment's answer (autosave sends one field at a time).

    Saving the same values again is a no-op (double submits and retries change nothing); every real
    change appends an AnswerRevision, so nothing is ever overwritten without trace."""
    campaign = assignment.enrollment.campaign
    problems = validate_values(campaign.protocol, values, assignment.item.gold_type)
    if problems:
        raise ApplicationError(f"{assignment.item.external_id}: " + "; ".join(problems), extra={"errors": problems})
    with transaction.atomic():
        # Lock the answer row: two tabs saving at once must each see the other's merged values.
        answer, _ = Answer.objects.select_for_update().get_or_create(assignment=assignment)
        merged = dict(values) if replace else {**answer.values, **values}
        changed = merged != answer.values
        if time_on_item_ms:
            answer.time_on_item_ms += max(0, int(time_on_item_ms))
        if changed:
            answer.values = merged
            answer.revision += 1
            AnswerRevision.objects.create(
                answer=answer, revision=answer.revision, values=merged, source=source, saved_by=user
            )
        if changed or time_on_item_ms:
            answer.save()
    return SaveResult(answer=answer, changed=changed)


def enrollment_mark(*, enrollment: Enrollment, milestone: str) -> Enrollment:
    """Record phase1_completed_at / submitted_at / crisis_declined_at once (the first time counts)."""
    if milestone not in {"phase1_completed_at", "submitted_at", "crisis_declined_at"}:
        raise ValueError(milestone)
    Enrollment.objects.filter(pk=enrollment.pk, **{f"{milestone}__isnull": True}).update(**{milestone: timezone.now()})
    enrollment.refresh_from_db()
    return enrollment
