"""The annotator's pages and the author's campaign overview. Views parse, authorize through
annotation.access, call one service or selector, and render."""


from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import access, preferences, selectors, services
from annotation.transfer import answers_export_text
from goldkey import roles
from goldkey.errors import AnnotatorError, AnnotatorNotFound, ApplicationError

# Shown in the header of the crisis block (PROTOCOL §8). Override per deployment/region in settings.
DEFAULT_CRISIS_CONTACTS = [
    "United States: call or text 988 (Suicide & Crisis Lifeline)",
    "United Kingdom & Ireland: Samaritans, 116 123",
    "Elsewhere: findahelpline.com lists free, confidential lines by country",
]


def crisis_contacts() -> list[str]:
    return getattr(settings, "GOLDKEY_CRISIS_CONTACTS", DEFAULT_CRISIS_CONTACTS)


def annotator_view(view):
    """A page an annotator uses: login required, and every refusal it shows is an AnnotatorError — any
    other application error raised below reaches the annotator as its status and a fixed text, since
    its message was written for an operator or an author and may name an item."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ApplicationError as exc:
            blind = AnnotatorError.blind(exc)
            if blind is exc:
                raise
            raise blind from exc

    return login_required(wrapped)


@require_GET
@annotator_view
def my_work(request):
    authored = selectors.campaigns_for_author(request.user) if roles.is_author(request.user) else []
    return render(request, "annotation/my_work.html", {"rows": selectors.my_enrollments(request.user), "authored": authored})


@require_GET
@annotator_view
def campaign_resume(request, slug):
    """Resume at the first unanswered item of the current phase; the review screen once all is done."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    if selectors.guidelines_due(enrollment):
        return redirect("annotation:guidelines", slug=slug)
    assignment = selectors.resume_assignment(enrollment)
    if assignment is not None and not enrollment.submitted_at:
        return redirect("annotation:item", slug=slug, position=assignment.position + 1)
    return redirect("annotation:review", slug=slug)


@require_GET
@annotator_view
def review(request, slug):
    """Before Phase 1 locks or the annotation is handed in: what is answered, what is not (with links),
    and the one button that ends the phase, behind a confirmation."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    return render(request, "annotation/review.html", {
        "enrollment": enrollment,
        "campaign": enrollment.campaign,
        "review": selectors.phase_review(enrollment),
        "keyed_by_id": selectors.export_keyed_by_id(enrollment),
        **selectors.enrollment_progress(enrollment),
    })


def _confirmed(request) -> None:
    if request.POST.get("confirm") != "yes":
        raise AnnotatorError("tick the confirmation box first: this step cannot be undone")


@require_POST
@annotator_view
def phase1_finish(request, slug):
    enrollment = access.get_enrollment_for_user(request.user, slug)
    _confirmed(request)
    services.phase1_finish(enrollment=enrollment)
    return redirect("annotation:resume", slug=slug)


@require_GET
@annotator_view
def item(request, slug, position):
    assignment = access.get_assignment_for_user(request.user, campaign_slug=slug, position=position)
    enrollment = assignment.enrollment
    if assignment.crisis:
        if enrollment.crisis_declined_at:
            return redirect("annotation:crisis", slug=slug)
        if not enrollment.crisis_notice_seen_at:
            return redirect("annotation:crisis", slug=slug)
    if selectors.guidelines_due(enrollment):
        return redirect(f"{reverse('annotation:guidelines', args=[slug])}?next={request.path}")
    page = selectors.item_page(assignment)
    page["crisis_contacts"] = crisis_contacts() if assignment.crisis else None
    page["revision"] = getattr(getattr(assignment, "answer", None), "revision", 0)
    # Every item of the current phase is answered: the page points to the review, where the phase ends.
    progress = page["progress"]
    bar = progress["phase2"] if page["phase"] == 2 else progress["phase1"]
    page["phase_ready"] = bar.complete and not enrollment.submitted_at
    page["ready_action"] = "submit" if page["phase"] == 2 or progress["phase2"] is None else "finish_phase1"
    page["guidelines"] = selectors.guidelines_html(enrollment.campaign)
    return render(request, page["template"], page)


@require_GET
@annotator_view
def item_list(request, slug):
    """The annotator's own items in their order, filtered (unanswered, answered, cannot-tell, noted), and a
    jump to any position (`?go=12`)."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    go = request.GET.get("go", "").strip()
    if go:
        if go.isdigit() and 1 <= int(go) <= enrollment.assigned_count:
            return redirect("annotation:item", slug=slug, position=int(go))
        messages.error(request, f"there is no item {go[:12]} in your work: items are numbered 1 to {enrollment.assigned_count}")
    page = request.GET.get("page", "1")
    listing = selectors.item_list(enrollment, show=request.GET.get("show", "all"),
                                  page=int(page) if page.isdigit() else 1)
    return render(request, "annotation/item_list.html", {
        "enrollment": enrollment,
        "campaign": enrollment.campaign,
        "listing": listing,
        "current_position": int(at) if (at := request.GET.get("at", "")).isdigit() else None,
        **selectors.enrollment_progress(enrollment),
    })


def _refused(request, slug: str, position: int, error) -> HttpResponse:
    """A workbench step the service refused: back to the item, the reason shown as a message (it is an
    AnnotatorError: it names the item by its position only)."""
    messages.error(request, error.message)
    return redirect("annotation:item", slug=slug, position=position)


@require_POST
@annotator_view
def item_skip(request, slug, position):
    """Skip this item for now; go to the next item still to answer (the review when only skipped ones are left)."""
    assignment = access.get_assignment_for_user(request.user, campaign_slug=slug, position=position)
    try:
        services.assignment_skip(assignment=assignment)
    except AnnotatorError as exc:
        return _refused(request, slug, position, exc)
    following = selectors.next_open_assignment(assignment.enrollment, assignment.position)
    if following is None:
        messages.info(request, "every other item is answered: only skipped items are left")
        return redirect("annotation:review", slug=slug)
    return redirect("annotation:item", slug=slug, position=following.position + 1)


@require_POST
@annotator_view
def answer_undo(request, slug):
    """Take back the last change (on whichever item it was) and show that item."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    back_to = request.POST.get("position", "")
    back_to = int(back_to) if back_to.isdigit() and 1 <= int(back_to) <= enrollment.assigned_count else 1
    try:
        assignment, _ = services.answer_undo(enrollment=enrollment, user=request.user)
    except AnnotatorError as exc:
        return _refused(request, slug, back_to, exc)
    messages.success(request, f"Undone: item {assignment.position + 1} is back to what it was before your last change.")
    return redirect("annotation:item", slug=slug, position=assignment.position + 1)


@require_http_methods(["GET", "POST"])
@annotator_view
def guidelines(request, slug):
    """The campaign's guidelines and the protocol's conventions: shown on the first visit (and after the
    authors change them) until the annotator presses Start."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    following = request.GET.get("next") or request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(following, allowed_hosts=None) or not following.startswith(
        reverse("annotation:resume", args=[slug])
    ):
        following = reverse("annotation:resume", args=[slug])
    if request.method == "POST":
        services.guidelines_mark_read(enrollment=enrollment)
        return redirect(following)
    return render(request, "annotation/guidelines.html", {
        "enrollment": enrollment,
        "campaign": enrollment.campaign,
        "guidelines": selectors.guidelines_html(enrollment.campaign),
        "conventions": selectors.campaign_conventions(enrollment),
        "next": following,
        "due": selectors.guidelines_due(enrollment),
    })


def _flag(value) -> bool | None:
    if value is None:
        return None
    return str(value).lower() in {"1", "on", "true", "yes"}


@require_POST
@login_required
def preferences_view(request):
    """Keyboard preferences (single-key shortcuts on or off, auto-advance): kept for the user, copied into
    the session. A form post goes back to `next`, else to the page it came from (the overlay's form names no
    page, so the overlay is the same on every item); a script's post gets the preferences as JSON."""
    changed = services.preferences_update(
        user=request.user,
        single_key_shortcuts=_flag(request.POST.get("single_key_shortcuts")),
        auto_advance=_flag(request.POST.get("auto_advance")),
    )
    values = {"single_key_shortcuts": changed.single_key_shortcuts, "auto_advance": changed.auto_advance}
    preferences.remember(request.session, values)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(values)
    following = request.POST.get("next") or request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(following, allowed_hosts={request.get_host()}):
        following = reverse("annotation:my-work")
    messages.success(request, "Keyboard preferences saved.")
    return redirect(following)


@annotator_view
def crisis(request, slug):
    """The crisis block's content notice: shown first, declinable as a whole."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    if not enrollment.crisis_count:
        raise Http404("this campaign has no crisis block for you")
    if request.method == "POST":
        choice = request.POST.get("choice")
        if choice == "decline":
            services.crisis_block_decline(enrollment=enrollment)
            return redirect("annotation:resume", slug=slug)
        if choice == "accept":
            services.crisis_notice_accept(enrollment=enrollment)
            return redirect("annotation:resume", slug=slug)
        return HttpResponseBadRequest("choose accept or decline")
    return render(request, "annotation/crisis.html", {
        "enrollment": enrollment, "campaign": enrollment.campaign, "crisis_contacts": crisis_contacts(),
    })


@require_POST
@annotator_view
def submit(request, slug):
    enrollment = access.get_enrollment_for_user(request.user, slug)
    _confirmed(request)
    services.enrollment_submit(enrollment=enrollment)
    return redirect("annotation:resume", slug=slug)


@require_GET
@annotator_view
def export(request, slug):
    """The annotator's own answers in the released format (only their own: nothing else is reachable),
    keyed by item id once they are final and by position before (selectors.export_keyed_by_id)."""
    enrollment = access.get_enrollment_for_user(request.user, slug)
    if not enrollment.phase1_done_count and not enrollment.phase2_done_count:
        raise AnnotatorNotFound("nothing to download yet: answer an item first")
    name, text = answers_export_text(enrollment=enrollment, by_position=not selectors.export_keyed_by_id(enrollment))
    content_type = "application/json" if name.endswith(".json") else "application/x-ndjson"
    response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
@login_required
def overview(request, slug):
    """Authors: per-annotator progress and pace. Never answers (blind or not): those belong to adjudication."""
    roles.require_author(request.user)
    campaign = access.get_campaign(slug)
    return render(request, "annotation/overview.html", {
        "campaign": campaign,
        "guidelines": selectors.guidelines_html(campaign),
        "rows": selectors.campaign_overview(campaign),
        "counts": selectors.campaign_item_counts(campaign),
        "unblinded": access.can_view_unblinded(request.user, campaign),
        "open_count": services.open_enrollments(campaign).count(),
    })


@require_POST
@login_required
def campaign_close_view(request, slug):
    """Authors: close the campaign to annotation (the overview's button), ending open enrollments only
    when the form says so explicitly."""
    roles.require_author(request.user)
    campaign = access.get_campaign(slug)
    services.campaign_close(campaign=campaign, user=request.user, end_open=request.POST.get("end_open") == "1")
    messages.success(request, f"{campaign.name} is closed to annotation: its disagreements can now be decided.")
    return redirect("annotation:overview", slug=slug)


@require_POST
@login_required
def campaign_guidelines_view(request, slug):
    """Authors: write the campaign's guidelines (Markdown) from the overview."""
    roles.require_author(request.user)
    campaign = access.get_campaign(slug)
    services.campaign_guidelines_set(campaign=campaign, guidelines=request.POST.get("guidelines", ""), user=request.user)
    messages.success(request, "Guidelines saved: each annotator sees them on their next visit.")
    return redirect("annotation:overview", slug=slug)
