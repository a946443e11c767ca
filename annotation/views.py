"""The annotator's pages and the author's campaign overview. Views parse, authorize through
annotation.access, call one service or selector, and render."""


from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation import access, selectors, services
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
    page = selectors.item_page(assignment)
    page["crisis_contacts"] = crisis_contacts() if assignment.crisis else None
    page["revision"] = getattr(getattr(assignment, "answer", None), "revision", 0)
    # Every item of the current phase is answered: the page points to the review, where the phase ends.
    progress = page["progress"]
    bar = progress["phase2"] if page["phase"] == 2 else progress["phase1"]
    page["phase_ready"] = bar.complete and not enrollment.submitted_at
    page["ready_action"] = "submit" if page["phase"] == 2 or progress["phase2"] is None else "finish_phase1"
    return render(request, page["template"], page)


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
