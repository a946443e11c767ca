"""Adjudication pages: the campaign list, the agreement page, the queue and the side-by-side item
view. Authors only, through `annotation.access.require_unblinded` (declared once, in `campaign_page`)."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from adjudication import charts, pages, selectors
from adjudication.agreement import campaign_agreement
from adjudication.services import decision_save
from annotation.access import get_unblinded_campaign
from goldkey import roles
from goldkey.errors import ApplicationError


def campaign_page(view):
    """Log in, find the campaign (404), and let only authors who are not blind in it through (403)."""

    @login_required
    @wraps(view)
    def wrapper(request, slug, *args, **kwargs):
        campaign = get_unblinded_campaign(request.user, slug)  # 404 / 403 through the one HTML error path
        return view(request, campaign, *args, **kwargs)

    return wrapper


@login_required
def campaign_list(request):
    if not roles.is_author(request.user):
        raise PermissionDenied("Only authors may open this page.")
    return render(request, "adjudication/campaign_list.html", {"campaigns": selectors.campaign_list()})


def _forest_rows(agreement: dict) -> list[dict]:
    def row(label, section):
        return {"label": label, "kappa": section.get("kappa"), "ci95": section.get("ci95"), "n": section.get("n", 0)}

    if agreement["protocol"] == "lapse":
        rows = [row("five-way", agreement["five_way"]), row("binary (PROCEED vs HEDGE/TEMPLATE)", agreement["binary"])]
        judge = agreement.get("judge_gold")
        if judge:
            rows += [row("judge–gold five-way", judge["five_way"]), row("judge–gold binary", judge["binary"])]
        return rows
    rows = [row("all items", agreement["q1"])]
    rows += [row(f"gold: {t}", s) for t, s in agreement["q1"]["by_gold_type"].items()]
    rows += [row(f"history {name}", s) for name, s in agreement["strata"]["history"].items()]
    rows += [row(f"family: {name}", s) for name, s in agreement["strata"]["family"].items()]
    if agreement["retained"]["complete"]:
        rows.append(row("retained set", {**agreement["retained"], "n": agreement["retained"]["kappa_n"]}))
    return rows


@campaign_page
def agreement_page(request, campaign):
    agreement = campaign_agreement(campaign)
    lapse = agreement["protocol"] == "lapse"
    main = agreement["five_way"] if lapse else agreement["q1"]
    annotators = agreement["annotators"] + ["?", "?"]
    pictures = {
        "forest": charts.kappa_forest(
            _forest_rows(agreement), bar=None if lapse else agreement["retained"]["bar"]
        ),
        "confusion": charts.confusion_svg(
            main["confusion"]["categories"], main["confusion"]["counts"], rater_a=annotators[0], rater_b=annotators[1]
        ),
    }
    if not lapse and agreement["retained"]["complete"]:
        confusion = agreement["retained"]["confusion"]
        pictures["retained_confusion"] = charts.confusion_svg(
            confusion["categories"], confusion["counts"], rater_a=annotators[0], rater_b=annotators[1]
        )
    scorers = None
    if lapse:
        from lapse.selectors import scorer_validation  # Lapse scorer validation (lapse branch)

        scorers = scorer_validation(campaign)
    return render(
        request,
        "adjudication/agreement.html",
        {"campaign": campaign, "a": agreement, "main": main, "pictures": pictures, "lapse": lapse, "scorers": scorers},
    )


@campaign_page
def queue_page(request, campaign):
    view = pages.queue_page_view(campaign)
    return render(request, "adjudication/queue.html", {"campaign": campaign, **view})


@campaign_page
@require_http_methods(["GET", "POST"])
def item_page(request, campaign, item_id: int):
    reveal = request.GET.get("reveal") == "1"
    errors, status = [], 200
    if request.method == "POST":
        item = selectors.campaign_item(campaign, item_id)
        if item is None:
            raise Http404("no such item in this campaign")
        try:
            decision_save(
                campaign=campaign,
                item=item,
                action=request.POST.get("action", ""),
                new_gold=request.POST.get("new_gold", "") if request.POST.get("action") == "relabel" else "",
                note=request.POST.get("note", ""),
                user=request.user,
            )
        except ApplicationError as exc:
            errors, status = exc.extra.get("errors") or [exc.message], 400
        else:
            messages.success(request, f"{item.external_id}: {request.POST.get('action')} recorded.")
            next_id = selectors.next_undecided(campaign, after=item.id)
            if next_id is None:
                return redirect(reverse("adjudication:queue", args=[campaign.slug]))
            suffix = "?reveal=1" if reveal else ""
            return redirect(reverse("adjudication:item", args=[campaign.slug, next_id]) + suffix)
    view = pages.item_view(campaign, item_id, reveal=reveal)
    if view is None:
        raise Http404("no such item in this campaign")
    context = {"campaign": campaign, "errors": errors, "reveal": reveal, "posted": request.POST if errors else None, **view}
    return render(request, "adjudication/item.html", context, status=status)
