"""Who may see what of a campaign. Declared once; every page, API view, export and admin uses it.

Gold, the adjudication queue, council votes, agreement figures and other annotators' answers are
"unblinded" material. Blindness belongs to a (user, item) pair: while a user has an open assignment on an
item — in any campaign, under any role — nothing that shows that item's other answers, decisions, detector
labels or key entry is served to them (404), so a second campaign over the same items cannot be read
through the first one. An author may see the rest. A page that shows many items refuses as a whole when
one of them is blind to the viewer.
"""

from django.db.models import Exists, OuterRef, Q

from annotation.models import Assignment, Campaign, Enrollment
from goldkey import roles
from goldkey.errors import NotAllowed, NotFound


def _blinding_enrollments(user):
    """The user's enrollments that keep them blind: neither handed in nor ended (at most one per campaign)."""
    return Enrollment.objects.filter(annotator=user, submitted_at__isnull=True, ended_at__isnull=True)


def blind_items(user):
    """The items `user` is blind to, as a subquery of item ids: those they hold an open assignment on, in
    any campaign. The one rule; every other question of blindness is asked through it."""
    if not user.is_authenticated:
        return Assignment.objects.none().values("item_id")
    return Assignment.objects.filter(enrollment__in=_blinding_enrollments(user)).values("item_id")


def _blind_in(user, campaign_pk: int):
    """Is `user` blind in a campaign? They are when they annotate in it, not yet handed in, or when it
    holds an item they have open work on elsewhere. The second is driven from the user's own open
    assignments (usually none), each probing the (item, enrollment) index, rather than from the
    campaign's, which may be 200,000."""
    return Exists(_blinding_enrollments(user).filter(campaign_id=campaign_pk)) | Exists(
        Assignment.objects.filter(enrollment__in=_blinding_enrollments(user)).filter(
            Exists(Assignment.objects.filter(item_id=OuterRef("item_id"), enrollment__campaign_id=campaign_pk))
        )
    )


def can_view_unblinded(user, campaign: Campaign) -> bool:
    if not roles.is_author(user):
        return False
    blind = getattr(campaign, "blind_for", None)
    if blind is not None and blind[0] == user.pk:  # known with the campaign (get_campaign's blind_for)
        return not blind[1]
    return not Campaign.objects.filter(pk=campaign.pk).filter(_blind_in(user, campaign.pk)).exists()


def blind_campaigns(user):
    """The campaigns `user` is still blind to, as a subquery of campaign ids: those they annotate in, not
    yet handed in, and any other holding an item they have open work on. Admin lists, key lines and draft
    keys filter on it."""
    if not user.is_authenticated:
        return Campaign.objects.none().values("pk")
    holding = Assignment.objects.filter(item_id__in=blind_items(user)).values("enrollment__campaign_id")
    own = _blinding_enrollments(user).values("campaign_id")
    return Campaign.objects.filter(Q(pk__in=own) | Q(pk__in=holding)).values("pk")


def blind_item_sets(user):
    """The item sets of `blind_campaigns(user)`: their gate verdicts and audits stay hidden too."""
    return Campaign.objects.filter(pk__in=blind_campaigns(user)).values("item_set")


def require_unblinded(user, campaign: Campaign) -> None:
    roles.require_author(user)
    if not can_view_unblinded(user, campaign):
        # 404, as for a campaign that does not exist: the refusal is the same whichever campaign holds the
        # items, and says nothing of which items they are.
        raise NotFound(
            f"You have open work on items of '{campaign.slug}': its gold, queue, council votes and agreement "
            "open once you have submitted your own annotation."
        )


def get_campaign(slug: str, *, blind_for=None) -> Campaign:
    """The campaign by slug (NotFound → 404 on pages, a clear error in commands). Every page, API view and
    command looks a campaign up through here. `blind_for`: a signed-in user whose blindness in it is read
    in the same query (for can_view_unblinded: one query less on every unblinded page)."""
    rows = Campaign.objects.filter(slug=slug).select_related("item_set__track__benchmark")
    if blind_for is not None and blind_for.is_authenticated:
        # Only whether the user has open work at all: without it they are blind nowhere (_blind_in starts
        # from that work), which is an author's usual case, and this subquery takes a quarter of the time
        # to build that _blind_in's nested ones take (~0.5 ms against ~1.8 ms, every unblinded page).
        # With open work, can_view_unblinded asks _blind_in itself.
        rows = rows.annotate(user_has_open_work=Exists(_blinding_enrollments(blind_for)))
    campaign = rows.first()
    if campaign is None:
        known = ", ".join(Campaign.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise NotFound(f"no campaign '{slug}'", operator_hint=f"campaigns: {known}")
    if getattr(campaign, "user_has_open_work", None) is False:
        campaign.blind_for = (blind_for.pk, False)
    return campaign


def get_unblinded_campaign(user, slug: str) -> Campaign:
    """The campaign, if it exists (404) and this user may see its unblinded material (403)."""
    campaign = get_campaign(slug, blind_for=user)
    require_unblinded(user, campaign)
    return campaign


def get_enrollment_for_user(user, campaign_slug: str) -> Enrollment:
    """The user's own enrollment in a campaign: 404 when the campaign does not exist, 403 when the
    user is not one of its annotators."""
    enrollment = (
        Enrollment.objects.filter(campaign__slug=campaign_slug, annotator=user)
        .select_related("campaign__item_set")
        .first()
        if user.is_authenticated
        else None
    )
    if enrollment is None:
        get_campaign(campaign_slug)  # 404 first
        raise NotAllowed("You are not an annotator of this campaign.")
    return enrollment


def _assignment_queryset():
    return Assignment.objects.select_related("enrollment__campaign", "item", "answer")


def get_assignment_for_user(user, *, campaign_slug: str | None = None, position: int | None = None,
                            pk: int | None = None) -> Assignment:
    """One of the user's own assignments, by campaign and 1-based position or by id.

    By id: 404 when it is not one of the user's, whether another annotator's or none at all — a 403 for
    the first would let anyone count the assignment ids there are. The only way any page, API view or
    export reaches an assignment."""
    if pk is not None:
        assignment = next(iter(_assignment_queryset().filter(pk=pk, enrollment__annotator_id=user.pk).order_by()[:1]), None)
        if assignment is None or not user.is_authenticated:
            raise NotFound("no such assignment among yours")
        return assignment
    # One query on the hot path; the error path finds out which of 404/403 applies.
    assignment = (
        _assignment_queryset()
        .filter(enrollment__campaign__slug=campaign_slug, enrollment__annotator_id=user.pk, position=(position or 0) - 1)
        .order_by()[:1]
        if user.is_authenticated
        else []
    )
    if not assignment:
        get_enrollment_for_user(user, campaign_slug)  # 404 / 403
        raise NotFound(f"no item {position} in your work for '{campaign_slug}'")
    return assignment[0]

