"""Writes for campaigns, assignments and answers. Every path (web, API, import, admin) comes through here."""

import random
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

import protocols
from annotation.models import Answer, AnswerRevision, Assignment, Campaign, Enrollment, Preferences, Skip
from annotation.selectors import current_phase, required_count
from goldkey import roles
from goldkey.errors import ANNOTATOR_ERRORS, AnnotatorError, AnnotatorNotAllowed, ApplicationError, NotAllowed
from goldkey.lib.bulk import bulk_insert_columns
from goldkey.lib.jsonio import column_length, text_too_long
from items.models import Item, ItemSet

# Time on item counts while the page is visible; a tab left open over lunch is not work, and one such save
# would dominate the pace figures. Each save adds at most this much.
MAX_TIME_PER_SAVE_MS = 30 * 60 * 1000


def pseudonym_for(index: int) -> str:
    """'A', 'B', … 'Z', 'AA', …: the annotator names of the released answer files."""
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = chr(65 + rem) + name
    return name


def annotator_sets(item_ids: list[int], annotators: int, per_item: int, seed: int | str) -> list[list[int]]:
    """Which annotators (by index) label each item: exactly `per_item` distinct ones, balanced.

    With per_item == annotators everyone labels everything; otherwise a seeded rotation spreads
    the load evenly. `seed` is the campaign's order secret, or its explicit seed."""
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
    item_ids: set[int] | None = None,
) -> Campaign:
    """A campaign over every item of `item_set` (or only `item_ids` of it: a reliability pass over a
    frozen key's items): each item goes to exactly `per_item` distinct annotators, and each annotator's
    order is a seeded permutation stored as positions."""
    if Campaign.objects.filter(slug=slug).exists():
        raise ApplicationError(f"campaign '{slug}' already exists")
    if len(set(a.pk for a in annotators)) != len(annotators):
        raise ApplicationError("each annotator may be named only once")
    if per_item < 1 or per_item > len(annotators):
        raise ApplicationError(f"--per-item {per_item} needs at least {per_item} annotators (got {len(annotators)})")
    if pseudonyms is not None and len(pseudonyms) != len(annotators):
        raise ApplicationError("give one pseudonym per annotator")
    texts = [("slug", Campaign, "slug", slug), ("name", Campaign, "name", name)]
    texts += [("pseudonyms", Enrollment, "pseudonym", pseudonym) for pseudonym in pseudonyms or ()]
    for field, model, column, value in texts:
        if problem := text_too_long(value, column_length(model, column)):
            raise ApplicationError(f"field '{field}': {problem}")
    # Without an explicit seed the orders come from a secret of 256 random bits: a small integer seed
    # can be recovered from what an annotator sees (each position's conversation) by trying them all,
    # and with it every item's id. An explicit seed is for a campaign whose order is given (the
    # released trails), so that it reproduces exactly.
    order_secret = None
    if seed is None:
        order_secret = secrets.token_hex(32)
        seed = secrets.randbelow(2**31)
    try:
        protocol = protocols.for_kind(item_set.kind).name  # the protocol that annotates this kind of item
    except protocols.UnknownProtocol as exc:
        raise ApplicationError(str(exc)) from exc
    campaign = Campaign.objects.create(
        slug=slug,
        name=name or slug,
        item_set=item_set,
        protocol=protocol,
        per_item=per_item,
        seed=seed,
        order_secret=order_secret,
        crisis_block=crisis_block,
        created_by=created_by,
    )
    # Candidates a blocking gate rejected are never annotated (PROTOCOL §5); an item set whose gates have
    # not run is taken whole (the campaign overview says so).
    only = item_ids
    item_ids = list(
        Item.objects.filter(item_set=item_set, gate_rejected=False).order_by("external_id").values_list("id", flat=True)
    )
    if only is not None:
        item_ids = [i for i in item_ids if i in only]
    if not item_ids:
        rejected = Item.objects.filter(item_set=item_set, gate_rejected=True).count()
        raise ApplicationError(
            f"item set '{item_set.name}' has no items that passed the gates ({rejected} rejected)"
            if rejected else f"item set '{item_set.name}' has no items"
        )
    crisis_ids = set()
    if crisis_block:
        crisis_ids = set(
            Item.objects.filter(item_set=item_set, content__hidden__crisis=True).values_list("id", flat=True)
        )
    per_annotator: list[list[int]] = [[] for _ in annotators]
    for item_id, chosen in zip(item_ids, annotator_sets(item_ids, len(annotators), per_item, order_secret or seed), strict=True):
        for index in chosen:
            per_annotator[index].append(item_id)
    enrollments = Enrollment.objects.bulk_create(
        Enrollment(
            campaign=campaign,
            annotator=user,
            pseudonym=(pseudonyms[index] if pseudonyms else pseudonym_for(index)),
            order_seed=None if order_secret else random.Random(f"{seed}:{index}").randrange(2**31),
            assigned_count=len(per_annotator[index]),
            crisis_count=sum(item_id in crisis_ids for item_id in per_annotator[index]),
        )
        for index, user in enumerate(annotators)
    )
    columns = {name: [] for name in ("enrollment_id", "item_id", "position", "crisis", "phase1_done", "phase2_done")}
    for index, (enrollment, ids) in enumerate(zip(enrollments, per_annotator, strict=True)):
        order = list(ids)
        rng = random.Random(f"{order_secret}:{index}") if order_secret else random.Random(enrollment.order_seed)
        rng.shuffle(order)
        # The crisis block is a separate, declinable block: it comes after the rest (a stable sort, so
        # without crisis items the order is the shuffle's).
        if crisis_ids:
            order.sort(key=lambda i: i in crisis_ids)
        n = len(order)
        columns["enrollment_id"] += [enrollment.pk] * n
        columns["item_id"] += order
        columns["position"] += range(n)
        columns["crisis"] += [i in crisis_ids for i in order] if crisis_ids else [False] * n
        columns["phase1_done"] += [False] * n
        columns["phase2_done"] += [False] * n
    # The rows go in grouped by enrollment, in position order: the primary key, the (enrollment,
    # position) pair and both partial indexes then only grow at their end (four of the five B-trees),
    # and an assignment's id, which its annotator sees in the API, follows their own order and says
    # nothing of the items' (in item order it would rank the hidden external ids).
    # One stream for every assignment (COPY on PostgreSQL), given column by column: a model instance,
    # or even a dict, per assignment was most of the Python time at 100,000 items. The values are
    # built here from validated ids, and the database's constraints still check every row.
    bulk_insert_columns(Assignment, columns)
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


# ---------------------------------------------------------------------------------------------
# The campaign lifecycle: annotating -> closed -> frozen. Every transition is here, once, under a row
# lock on the campaign; database triggers (keys app migrations) refuse answer and decision writes to a
# frozen campaign whatever path they take.

STATUS_WORDS = {
    Campaign.Status.ANNOTATING: "still being annotated",
    Campaign.Status.CLOSED: "closed to annotation",
    Campaign.Status.FROZEN: "frozen (its gold key is sealed)",
}


def campaign_lock(*, campaign: Campaign, status: str, doing: str) -> Campaign:
    """The campaign row, locked until the caller's transaction ends, refused unless it is in `status`.
    Callers that change what the state permits (a decision, a freeze) hold this lock so that a state
    change and the write it forbids cannot interleave."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if locked.status != status:
        raise NotAllowed(f"campaign '{locked.slug}' is {STATUS_WORDS[locked.status]}: cannot {doing}")
    campaign.__dict__.update(status=locked.status, closed_at=locked.closed_at, frozen_at=locked.frozen_at)
    return locked


def open_enrollments(campaign: Campaign):
    """Enrollments neither handed in nor ended: what keeps a campaign from closing."""
    return Enrollment.objects.filter(campaign=campaign, submitted_at__isnull=True, ended_at__isnull=True)


@transaction.atomic
def campaign_close(*, campaign: Campaign, user, end_open: bool = False) -> Campaign:
    """Close a campaign to annotation. Every enrollment must be submitted, unless `end_open`: then the
    open ones are ended now, by `user`, and the release discloses it. `user` None is the import of a
    released trail, closed by no one in Goldkey (and recorded so)."""
    if user is not None and not roles.is_author(user):
        raise NotAllowed("only authors may close a campaign")
    locked = campaign_lock(campaign=campaign, status=Campaign.Status.ANNOTATING, doing="close it")
    # Lock the enrollments too: a save in flight finishes first, and none starts after (answer_save
    # locks the enrollment and then sees it ended or the campaign closed).
    still_open = list(open_enrollments(locked).select_for_update().order_by("pseudonym"))
    if still_open and not end_open:
        names = ", ".join(e.pseudonym for e in still_open)
        raise ApplicationError(
            f"campaign '{locked.slug}' has {len(still_open)} enrollment(s) not submitted ({names}): wait for them, "
            "or end them explicitly (the release will say so)"
        )
    now = timezone.now()
    if still_open:
        Enrollment.objects.filter(pk__in=[e.pk for e in still_open]).update(ended_at=now, ended_by=user)
    Campaign.objects.filter(pk=locked.pk).update(status=Campaign.Status.CLOSED, closed_at=now, closed_by=user)
    locked.refresh_from_db()
    campaign.__dict__.update(status=locked.status, closed_at=locked.closed_at, closed_by_id=locked.closed_by_id)
    return locked


def campaign_mark_frozen(*, campaign: Campaign) -> Campaign:
    """Closed -> frozen; called by the keys app inside the transaction that freezes the campaign's key,
    which already holds `campaign_lock(status=CLOSED)`."""
    now = timezone.now()
    updated = Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.CLOSED).update(
        status=Campaign.Status.FROZEN, frozen_at=now
    )
    if updated != 1:
        raise NotAllowed(f"campaign '{campaign.slug}' is not closed: it cannot be frozen")
    campaign.__dict__.update(status=Campaign.Status.FROZEN, frozen_at=now)
    return campaign


@dataclass
class SaveResult:
    answer: Answer
    changed: bool
    # Every open item now has its Phase 1 answer: the review screen may finish Phase 1 (a hint from the
    # counters; finishing is confirmed by an exact query in `phase1_finish`). Nothing locks by itself.
    phase1_ready: bool = False


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


def _closed_to_work(enrollment: Enrollment) -> bool:
    """No answer, skip, undo or submission any more: the enrollment was ended, or the campaign is no
    longer annotating (closed or frozen)."""
    return bool(enrollment.ended_at) or enrollment.campaign.status != Campaign.Status.ANNOTATING


def _refusal(assignment: Assignment, enrollment: Enrollment, reason: str = "", *, status_code: int = 400,
             **kwargs) -> AnnotatorError:
    """An error about one item, as its annotator may read it: the item is named by its place in their work."""
    kind = ANNOTATOR_ERRORS.get(status_code, AnnotatorError)
    return kind(reason, position=assignment.position + 1, total=enrollment.assigned_count, status_code=status_code,
                **kwargs)


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
    base_revision: int | None = None,
    writer: str = "",
    writer_seq: int | None = None,
) -> SaveResult:
    """Merge `values` into the assignment's answer (autosave sends one field at a time).

    Saving the same values again is a no-op (double submits and retries change nothing); every real
    change appends an AnswerRevision, so nothing is ever overwritten without trace.

    A page (`writer`, a random id per loaded item page) sends the revision it last saw (`base_revision`)
    and its own running number (`writer_seq`). A change to a field that another page changed after that
    revision is refused (409) with the answer as it now stands, so a stale tab can never silently
    overwrite what was saved elsewhere; a page's own request that arrives after its newer one (the two
    overtook each other on the network, e.g. the save sent as the page unloads) is not applied.

    The two-phase lock lives here, once, so that web, API and import all obey it: Phase 2 answers are
    refused until Phase 1 is finished (`phase1_finish`), Phase 1 answers are frozen from then on, and
    nothing changes after the annotator has submitted. Every refusal is an AnnotatorError: it names the
    item by its position in the annotator's own work and never by its id."""
    campaign = assignment.enrollment.campaign
    spec = protocols.get(campaign.protocol)
    gold_type = assignment.item.gold_label
    # Keys and choices first: these checks do not depend on the item's gold type.
    problems = spec.validate_values(values)
    if problems:
        raise _refusal(assignment, assignment.enrollment, problems=problems)
    with transaction.atomic():
        # Lock the enrollment: its phase milestones and progress counters change with this save, and
        # a concurrent save by the same annotator (another tab) must see them.
        enrollment = Enrollment.objects.select_for_update(of=("self",)).select_related("campaign").get(
            pk=assignment.enrollment_id
        )
        if _closed_to_work(enrollment):
            raise _refusal(assignment, enrollment, "this campaign is closed to annotation: answers can no longer change",
                           status_code=403)
        # Lock the answer row: two tabs saving at once must each see the other's merged values.
        answer, _ = Answer.objects.select_for_update().get_or_create(assignment=assignment)
        merged = dict(values) if replace else {**answer.values, **values}
        changed_keys = {k for k in set(merged) | set(answer.values) if merged.get(k, "") != answer.values.get(k, "")}
        changed = merged != answer.values
        if changed_keys:
            _check_phase_lock(spec, enrollment, changed_keys, assignment)
        # Which Phase 2 questions apply depends on the gold type: checked only after the phase lock,
        # so that a Phase 1 annotator probing with Phase 2 keys learns nothing from the refusal.
        problems = spec.validate_values(values, gold_type)
        # Rules across questions read the answer as it would stand (autosave sends one field at a time).
        if not problems and changed_keys:
            problems = spec.answer_problems(merged)
        if problems:
            raise _refusal(assignment, enrollment, problems=problems)
        if changed and enrollment.submitted_at:
            changed = False  # only empty-string keys differ: nothing to record after submission
        if changed and writer and writer_seq is not None and _overtaken(answer, writer, writer_seq):
            changed = False
            time_on_item_ms = 0
        if changed and base_revision is not None and base_revision < answer.revision:
            if changed_keys & _changed_elsewhere(answer, base_revision, writer):
                raise _refusal(
                    assignment, enrollment,
                    "this item was changed in another tab or window; it now shows what was saved there",
                    status_code=409, current={"values": dict(answer.values), "revision": answer.revision},
                )
        if time_on_item_ms:
            answer.time_on_item_ms += min(max(0, int(time_on_item_ms)), MAX_TIME_PER_SAVE_MS)
        if extra:
            answer.extra = {**answer.extra, **extra}
        if changed:
            answer.values = merged
            answer.revision += 1
            answer.answered_at = answered_at or timezone.now()
            was1, was2 = answer.phase1_done, answer.phase2_done
            answer.phase1_done = spec.phase1_done(merged)
            answer.phase2_done = spec.phase2_done(merged, gold_type)
            AnswerRevision.objects.create(
                answer=answer, revision=answer.revision, values=merged, source=source, saved_by=user,
                writer=writer or None, writer_seq=writer_seq if writer else None,
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
                # The assignment's copy of the flags, read by resume_assignment through its partial index.
                Assignment.objects.filter(pk=assignment.pk).update(
                    phase1_done=answer.phase1_done, phase2_done=answer.phase2_done
                )
                assignment.phase1_done, assignment.phase2_done = answer.phase1_done, answer.phase2_done
        if changed or time_on_item_ms or extra:
            answer.save()
    assignment.enrollment.__dict__.update(
        {k: getattr(enrollment, k) for k in ("phase1_completed_at", "phase1_done_count", "phase2_done_count")}
    )
    ready = enrollment.phase1_completed_at is None and enrollment.phase1_done_count >= required_count(enrollment)
    return SaveResult(answer=answer, changed=changed, phase1_ready=ready)


def _overtaken(answer: Answer, writer: str, writer_seq: int) -> bool:
    """This page already saved a later request of its own (they crossed on the network)."""
    latest = (
        AnswerRevision.objects.filter(answer=answer, writer=writer, writer_seq__isnull=False)
        .order_by("-revision").values_list("writer_seq", flat=True).first()
    )
    return latest is not None and latest >= writer_seq


def _changed_elsewhere(answer: Answer, base_revision: int, writer: str) -> set[str]:
    """The fields another writer changed after `base_revision` (every field when the base is unknown)."""
    rows = list(
        AnswerRevision.objects.filter(answer=answer, revision__gte=base_revision)
        .order_by("revision").values_list("revision", "values", "writer")
    )
    if base_revision == 0:
        previous: dict = {}
    elif rows and rows[0][0] == base_revision:
        previous = rows[0][1]
    else:
        return set(answer.values) | set(rows[-1][1] if rows else {})
    changed: set[str] = set()
    for revision, values, by in rows:
        if revision == base_revision:
            continue
        if not writer or by != writer:
            changed |= {k for k in set(values) | set(previous) if values.get(k, "") != previous.get(k, "")}
        previous = values
    return changed


def _check_phase_lock(spec, enrollment: Enrollment, keys: set[str], assignment: Assignment) -> None:
    if enrollment.submitted_at:
        raise _refusal(assignment, enrollment, f"this annotation was submitted on {enrollment.submitted_at:%Y-%m-%d}; "
                       "it is final", status_code=403)
    if not spec.has_phase2:
        return
    phases = {spec.phase_of(key) for key in keys}
    if 1 in phases and enrollment.phase1_completed_at:
        raise _refusal(assignment, enrollment, "Phase 1 is locked (finished "
                       f"{enrollment.phase1_completed_at:%Y-%m-%d %H:%M})", status_code=403)
    if 2 in phases and not enrollment.phase1_completed_at:
        raise _refusal(assignment, enrollment, "Phase 2 opens once you finish Phase 1", status_code=403)


def enrollment_mark(*, enrollment: Enrollment, milestone: str) -> Enrollment:
    """Record phase1_completed_at / submitted_at / crisis_declined_at once (the first time counts)."""
    if milestone not in {"phase1_completed_at", "submitted_at", "crisis_declined_at", "crisis_notice_seen_at"}:
        raise ValueError(milestone)
    Enrollment.objects.filter(pk=enrollment.pk, **{f"{milestone}__isnull": True}).update(**{milestone: timezone.now()})
    enrollment.refresh_from_db()
    return enrollment


def _unanswered_message(enrollment: Enrollment, phase: int) -> str:
    missing = phase1_missing if phase == 1 else phase2_missing
    if not missing(enrollment):
        return ""
    field = "answer__phase1_done" if phase == 1 else "answer__phase2_done"
    positions = list(
        _open_assignments(enrollment).filter(Q(answer__isnull=True) | Q(**{field: False}))
        .order_by("position").values_list("position", flat=True)[:20]
    )
    listed = ", ".join(str(p + 1) for p in positions)
    which = f"items {listed} have" if len(positions) > 1 else f"item {listed} has"
    return f"Phase {phase} is not complete: {which} no answer yet"


@transaction.atomic
def phase1_finish(*, enrollment: Enrollment) -> Enrollment:
    """The annotator finishes Phase 1 (after the review screen and a confirmation): every open item has
    its verdict, and from now on the verdicts are locked and Phase 2 opens. The only way Phase 1 ends on
    the annotator's pages — answering the last item locks nothing. Finishing twice changes nothing."""
    # Lock the enrollment: a save of the same annotator in another tab must not slip in between the
    # check and the lock.
    enrollment = Enrollment.objects.select_for_update().select_related("campaign").get(pk=enrollment.pk)
    if enrollment.phase1_completed_at:
        return enrollment
    if enrollment.submitted_at:
        raise AnnotatorNotAllowed("this annotation was submitted; it is final")
    problem = _unanswered_message(enrollment, 1)
    if problem:
        raise AnnotatorError(problem)
    return enrollment_mark(enrollment=enrollment, milestone="phase1_completed_at")


@transaction.atomic
def enrollment_close_phase1(*, enrollment: Enrollment) -> Enrollment:
    """Close Phase 1 now, answered or not: for loading a finished, exported annotation (whose Phase 2
    answers exist) that left some verdict missing. The annotator's pages never call this: for them
    Phase 1 closes only through `phase1_finish`, once every open item has its verdict."""
    if not protocols.get(enrollment.campaign.protocol).has_phase2:
        return enrollment
    enrollment = Enrollment.objects.select_for_update().select_related("campaign").get(pk=enrollment.pk)
    return enrollment_mark(enrollment=enrollment, milestone="phase1_completed_at")


@transaction.atomic
def enrollment_submit(*, enrollment: Enrollment, as_imported: bool = False) -> Enrollment:
    """Hand in the annotation: every open item answered in every phase. Recorded once, for disclosure;
    from then on this annotator may see the campaign's unblinded material (if an author).

    `as_imported`: the answers came from an exported file, which is handed in as it is, complete or not
    (Phase 1 is closed first if the protocol has a Phase 2)."""
    enrollment = Enrollment.objects.select_for_update().select_related("campaign").get(pk=enrollment.pk)
    if enrollment.submitted_at:
        return enrollment
    if _closed_to_work(enrollment):
        raise AnnotatorNotAllowed("this campaign is closed to annotation: nothing can be submitted")
    if as_imported:
        if protocols.get(enrollment.campaign.protocol).has_phase2:
            enrollment_mark(enrollment=enrollment, milestone="phase1_completed_at")
        return enrollment_mark(enrollment=enrollment, milestone="submitted_at")
    problem = _unanswered_message(enrollment, 1)
    if problem:
        raise AnnotatorError(f"{problem}; answer every item before submitting")
    if protocols.get(enrollment.campaign.protocol).has_phase2:
        if not enrollment.phase1_completed_at:
            raise AnnotatorError("finish Phase 1 first: Phase 2 opens after it")
        problem = _unanswered_message(enrollment, 2)
        if problem:
            raise AnnotatorError(f"{problem}; answer every item before submitting")
    else:
        # One phase only: submitting is what ends it.
        enrollment = enrollment_mark(enrollment=enrollment, milestone="phase1_completed_at")
    return enrollment_mark(enrollment=enrollment, milestone="submitted_at")


@transaction.atomic
def crisis_block_decline(*, enrollment: Enrollment) -> Enrollment:
    """Decline the whole crisis block (PROTOCOL §8); the rest of the work is unaffected."""
    enrollment = Enrollment.objects.select_for_update().get(pk=enrollment.pk)
    if not enrollment.crisis_count:
        raise AnnotatorError("this campaign has no crisis block for you")
    if enrollment.submitted_at:
        raise AnnotatorNotAllowed("this annotation was submitted; it is final")
    return enrollment_mark(enrollment=enrollment, milestone="crisis_declined_at")


def crisis_notice_accept(*, enrollment: Enrollment) -> Enrollment:
    if not enrollment.crisis_count:
        raise AnnotatorError("this campaign has no crisis block for you")
    if enrollment.crisis_declined_at:
        raise AnnotatorNotAllowed("you declined the crisis block")
    return enrollment_mark(enrollment=enrollment, milestone="crisis_notice_seen_at")


# ---------------------------------------------------------------------------------------------
# The annotator's workbench: skip, undo, guidelines, keyboard preferences.

# The source of a revision written by an undo: an undo takes back a change, never another undo.
UNDO_SOURCE = "undo"


def _open_for_work(enrollment: Enrollment, assignment: Assignment, doing: str) -> None:
    if _closed_to_work(enrollment):
        raise _refusal(assignment, enrollment, f"this campaign is closed to annotation: cannot {doing}",
                       status_code=403)
    if enrollment.submitted_at:
        raise _refusal(assignment, enrollment, "this annotation was submitted; it is final", status_code=403)


@transaction.atomic
def assignment_skip(*, assignment: Assignment) -> bool:
    """Skip an item for now: it stays unanswered (the review and the item list say so), and Resume and
    the next skip pass over it until every other open item of the phase is answered. Skipping an item
    already answered in this phase records nothing (False). Refused once the work is handed in or closed."""
    # Lock the enrollment, as answer_save does: the phase cannot change under the skip.
    enrollment = Enrollment.objects.select_for_update(of=("self",)).select_related("campaign").get(
        pk=assignment.enrollment_id
    )
    _open_for_work(enrollment, assignment, "skip an item")
    phase = current_phase(enrollment)
    done = assignment.phase2_done if phase == 2 else assignment.phase1_done
    if not done:
        Skip.objects.get_or_create(assignment=assignment, phase=phase)
    return not done


def answer_undo(*, enrollment: Enrollment, user) -> tuple[Assignment, SaveResult]:
    """Take back the annotator's last change in this campaign (on whichever item it was): the answer goes
    back to its previous revision through `answer_save` — so the Phase 1 lock, the submission and the
    campaign lifecycle refuse it exactly as they refuse any change — and the undo is itself a revision
    (source "undo"): the history keeps both. One step: an undo is not undone by the next one."""
    # Said first, in words about the campaign; answer_save below refuses it again under its row lock.
    if _closed_to_work(enrollment):
        raise AnnotatorNotAllowed("this campaign is closed to annotation: nothing can be undone")
    if enrollment.submitted_at:
        raise AnnotatorNotAllowed("this annotation was submitted; it is final")
    last = (
        AnswerRevision.objects.filter(answer__assignment__enrollment=enrollment, saved_by=user)
        .exclude(source="import").order_by("-pk").values_list("answer_id", "revision", "source").first()
    )
    if last is None or last[2] == UNDO_SOURCE:
        raise AnnotatorError("nothing to undo: your last change was already taken back" if last else
                             "nothing to undo yet")
    answer_id, revision, _ = last
    assignment = Assignment.objects.select_related("enrollment__campaign", "item", "answer").get(answer__pk=answer_id)
    previous = (
        AnswerRevision.objects.filter(answer_id=answer_id, revision__lt=revision)
        .order_by("-revision").values_list("values", flat=True).first()
    ) or {}
    result = answer_save(
        assignment=assignment, values=dict(previous), user=user, source=UNDO_SOURCE, replace=True,
        base_revision=assignment.answer.revision,
    )
    return assignment, result


@transaction.atomic
def campaign_guidelines_set(*, campaign: Campaign, guidelines: str, user) -> Campaign:
    """An author writes the campaign's guidelines (Markdown). Every annotator sees them again on their next
    visit. Refused once the campaign is frozen: what its annotators were told is part of the sealed record."""
    roles.require_author(user, message="only authors may write a campaign's guidelines")
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if locked.status == Campaign.Status.FROZEN:
        raise NotAllowed(f"campaign '{locked.slug}' is {STATUS_WORDS[locked.status]}: its guidelines cannot change")
    text = guidelines.replace("\r\n", "\n").strip()
    if len(text) > 100_000:
        raise ApplicationError(f"guidelines: {len(text):,} characters; at most 100,000")
    if text == (locked.guidelines or ""):
        return locked
    now = timezone.now()
    Campaign.objects.filter(pk=locked.pk).update(guidelines=text or None, guidelines_updated_at=now)
    campaign.guidelines, campaign.guidelines_updated_at = text or None, now
    return campaign


def guidelines_mark_read(*, enrollment: Enrollment) -> Enrollment:
    """The annotator has read the campaign's guidelines (the "Start" button after them)."""
    now = timezone.now()
    Enrollment.objects.filter(pk=enrollment.pk).update(guidelines_seen_at=now)
    enrollment.guidelines_seen_at = now
    return enrollment


def preferences_update(*, user, single_key_shortcuts: bool | None = None, auto_advance: bool | None = None) -> Preferences:
    """Change a user's keyboard preferences (None: leave as it is)."""
    preferences, _ = Preferences.objects.get_or_create(user=user)
    changes = {name: value for name, value in (("single_key_shortcuts", single_key_shortcuts),
                                               ("auto_advance", auto_advance)) if value is not None}
    if changes:
        for name, value in changes.items():
            setattr(preferences, name, value)
        preferences.save()
    return preferences
