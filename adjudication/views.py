"""Adjudication pages: the campaign list, the agreement page, the queue and the side-by-side item
view. Authors only, through `annotation.access.require_unblinded` (declared once, in `campaign_page`)."""

from functools import wraps
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET, require_http_methods

import protocols
from adjudication import charts, exports, pages, selectors
from adjudication.agreement import campaign_agreement
from adjudication.services import decision_save, queue_sync
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
    roles.require_author(request.user)
    return render(request, "adjudication/campaign_list.html", {"campaigns": selectors.campaign_list()})


def _forest_rows(spec, agreement: dict) -> list[dict]:
    def interval(section: dict):
        # Fleiss' kappa (more than two annotators) has a bootstrap interval only.
        analytic = section.get("ci95")
        return analytic if analytic and analytic[0] is not None else section.get("ci95_bootstrap")

    return [
        {"label": label, "kappa": section.get("kappa"), "ci95": interval(section), "n": section.get("kappa_n", section.get("n", 0))}
        for label, section in spec.forest_rows(agreement)
    ]


def _agreement_panels(spec, campaign) -> list[tuple]:
    """The protocol's own sections of the agreement page (Lapse: scorer validation) with their figures,
    resolved by name: adjudication never imports a protocol's app."""
    return [(panel, import_string(panel.data)(campaign)) for panel in spec.agreement_panels]


@campaign_page
def agreement_page(request, campaign):
    spec = protocols.get(campaign.protocol)
    agreement = campaign_agreement(campaign)
    main = agreement[spec.agreement_main]
    retained = agreement.get("retained")  # a protocol whose gold is the item's own reports its kept set
    annotators = agreement["annotators"] + ["?", "?"]
    raters = agreement.get("raters")
    if raters and raters["statistic"] == "fleiss":  # no two people rated every item: name the axes by role
        annotators = ["each item's first annotator", "its second annotator"]
    pictures = {
        "forest": charts.kappa_forest(_forest_rows(spec, agreement), bar=retained["bar"] if retained else None),
        "confusion": charts.confusion_svg(
            main["confusion"]["categories"], main["confusion"]["counts"], rater_a=annotators[0], rater_b=annotators[1]
        ),
    }
    if retained and retained["complete"]:
        confusion = retained["confusion"]
        pictures["retained_confusion"] = charts.confusion_svg(
            confusion["categories"], confusion["counts"], rater_a=annotators[0], rater_b=annotators[1]
        )
    if raters:
        pictures["pairs"] = charts.pair_matrix(agreement["annotators"], raters["pairs"])
        if raters["gold"]["complete"]:
            pictures["gold_bars"] = charts.gold_bars(raters["gold"]["by_annotator"])
    panels = [{"template": panel.template, "data": data} for panel, data in _agreement_panels(spec, campaign)]
    return render(
        request,
        "adjudication/agreement.html",
        {"campaign": campaign, "spec": spec, "a": agreement, "main": main, "pictures": pictures, "panels": panels},
    )


def _csv_download(body: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@campaign_page
@require_GET
def agreement_csv(request, campaign):
    panels = {panel.data.rsplit(".", 1)[-1]: data
              for panel, data in _agreement_panels(protocols.get(campaign.protocol), campaign)}
    body = exports.agreement_csv(campaign.slug, campaign_agreement(campaign), panels)
    return _csv_download(body, f"{campaign.slug}.agreement.csv")


@campaign_page
@require_GET
def queue_csv(request, campaign):
    view = pages.queue_export_view(campaign)
    return _csv_download(exports.queue_csv(view["spec"], view["entries"], view["pseudonyms"]), f"{campaign.slug}.queue.csv")


def _queue_filter(request, campaign):
    """The queue filter in the query string (the queue page's, and the item page's: where it came from)."""
    return pages.queue_filter(protocols.get(campaign.protocol), reason=request.GET.get("reason", ""),
                              gold_type=request.GET.get("type", ""), band=request.GET.get("band", ""))


@campaign_page
def queue_page(request, campaign):
    try:
        page = max(0, int(request.GET.get("page", "1")) - 1)
    except ValueError:
        page = 0
    try:
        at = int(request.GET["at"]) if "at" in request.GET else None
    except ValueError:
        at = None
    view = pages.queue_page_view(campaign, page=page, where=_queue_filter(request, campaign), at=at)
    return render(request, "adjudication/queue.html", {"campaign": campaign, **view})


# The item page's script asks with this header for the next item's page as the POST's own answer (one
# round trip, not a redirect and a second request); the answer names that page's URL in NEXT_PAGE_URL,
# which the script puts in the address bar (after the last item: 204 and the queue page's URL, which the
# script opens). A plain form post still gets the redirect.
NEXT_PAGE_HEADER = "X-Goldkey-Next"
NEXT_PAGE_URL = "X-Goldkey-Url"
# The script also fetches, while the adjudicator reads an item, the page that a decision on it leads to
# (next_page), and names that page's key in HELD_PAGE when it posts. When the page it holds is the one the
# answer would be, the answer is 204 with HELD_PAGE "current", the page's URL and the decision's message
# (percent-encoded: a header is Latin-1), and the script shows the page it holds: the adjudicator waits for
# the decision's writes only, not for the next page's reads and rendering as well.
HELD_PAGE = "X-Goldkey-Held"
MESSAGE = "X-Goldkey-Message"


def _item_url(campaign, item_id: int, where, reveal: bool) -> str:
    return f"{pages.item_link(campaign)}{item_id}/{pages.item_query(where, reveal=reveal)}"


def _item_response(request, campaign, item_id: int, *, reveal: bool, where, state=None, stored=None, after=None,
                   errors=(), status: int = 200, **extra) -> HttpResponse:
    view = pages.item_view(campaign, item_id, reveal=reveal, where=where, state=state, stored=stored, after=after)
    if view is None:
        raise Http404("no such item in this campaign")
    context = {"campaign": campaign, "errors": list(errors), "reveal": reveal,
               "posted": request.POST if errors else None, **view, **extra}
    return render(request, "adjudication/item.html", context, status=status)


@campaign_page
@require_http_methods(["GET", "POST"])
def item_page(request, campaign, item_id: int):
    reveal = request.GET.get("reveal") == "1"
    where = _queue_filter(request, campaign)
    if request.method == "GET":
        return _item_response(request, campaign, item_id, reveal=reveal, where=where)
    item = selectors.campaign_item(campaign, item_id)
    if item is None:
        raise Http404("no such item in this campaign")
    action = request.POST.get("action", "")
    try:
        result = decision_save(
            campaign=campaign,
            item=item,
            action=action,
            new_gold=request.POST.get("new_gold", "") if action == "relabel" else "",
            note=request.POST.get("note", ""),
            user=request.user,
        )
    except ApplicationError as exc:
        return _item_response(request, campaign, item_id, reveal=reveal, where=where,
                              errors=exc.extra.get("errors") or [exc.message], status=400)
    message = f"{item.external_id}: {action} recorded."
    # The next undecided item within the filter the adjudicator came from (the band only where the queue
    # offers it: pages.item_view drops it otherwise, and so the form never sends it). Once for this
    # request (the next item's page reads it too), from the state the decision left.
    state = queue_sync(campaign=campaign, recorded=result.queue)
    inline = request.headers.get(NEXT_PAGE_HEADER) == "page"
    held = request.headers.get(HELD_PAGE, "")
    # The page held is current only when this decision was the one change since it was rendered.
    if inline and held and result.changed and state is result.queue and (
            next_id := pages.held_page_item(campaign, held, after=item.id, state=state, where=where, reveal=reveal)):
        return HttpResponse(status=204, headers={NEXT_PAGE_URL: _item_url(campaign, next_id, where, reveal),
                                                 HELD_PAGE: "current", MESSAGE: quote(message)})
    stored = pages.next_undecided(campaign, after=item.id, where=where, state=state, after_key=result.sort_key)
    if stored is None:  # every item is decided: the queue page (the script goes there itself)
        messages.success(request, message)
        queue_url = reverse("adjudication:queue", args=[campaign.slug]) + pages.queue_query(where)
        return HttpResponse(status=204, headers={NEXT_PAGE_URL: queue_url}) if inline else redirect(queue_url)
    next_url = _item_url(campaign, stored.item_id, where, reveal)
    messages.success(request, message)
    if not inline:
        return redirect(next_url)
    response = _item_response(request, campaign, stored.item_id, reveal=reveal, where=where, state=state, stored=stored)
    response[NEXT_PAGE_URL] = next_url
    return response


@campaign_page
@require_GET
def next_page(request, campaign, item_id: int):
    """The page a decision on `item_id` leads to (the next undecided item within the filter, as the page is
    now), with its URL in NEXT_PAGE_URL; 204 when no other item is undecided. The item page's script
    fetches it ahead: it shows no messages, which stay for the page the adjudicator opens next."""
    reveal = request.GET.get("reveal") == "1"
    where = _queue_filter(request, campaign)
    if selectors.campaign_item(campaign, item_id) is None:
        raise Http404("no such item in this campaign")
    state = queue_sync(campaign=campaign)
    stored = pages.next_undecided(campaign, after=item_id, where=where, state=state)
    if stored is None:
        return HttpResponse(status=204)
    response = _item_response(request, campaign, stored.item_id, reveal=reveal, where=where, state=state, stored=stored,
                              after=item_id, messages=())
    response[NEXT_PAGE_URL] = _item_url(campaign, stored.item_id, where, reveal)
    return response
