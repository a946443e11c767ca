"""Council pages for authors: members and runs, a run's live progress and cancel, triage."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

import protocols
from annotation.access import get_unblinded_campaign
from annotation.models import Campaign
from council import selectors, services
from council.access import get_run_for_user
from council.models import CouncilMember, CouncilRun
from goldkey import roles
from goldkey.errors import ApplicationError, NotAllowed, NotFound
from items.models import ItemSet

TRIAGE_PAGE_SIZE = 50  # rows the triage table shows at once

# Item kinds whose sets pass the generation gates (PROTOCOL §5), or gates of their protocol's own, which read
# through a council member (`ProtocolSpec.set_gates`).
GATED_KINDS = [spec.item_kind for spec in protocols.specs() if spec.generation_gates or spec.set_gates]
MEMBER_GATED_KINDS = [spec.item_kind for spec in protocols.specs() if spec.set_gates]


def _require_author(user) -> None:
    roles.require_author(user, message="Only authors may open the council pages.")


@login_required
@require_GET
def index(request):
    _require_author(request.user)
    campaigns = list(Campaign.objects.select_related("item_set").order_by("slug"))
    runs = list(CouncilRun.objects.select_related("campaign", "prompt_version").order_by("-created_at")[:20])
    return render(request, "council/index.html", {
        "campaigns": campaigns, "runs": runs, "members": list(CouncilMember.objects.order_by("name")),
        "item_sets": list(ItemSet.objects.filter(kind__in=GATED_KINDS).order_by("name")), "gates": selectors.gate_summary(),
        "member_gated": MEMBER_GATED_KINDS,
    })


@login_required
@require_POST
def gates_start(request, item_set_id: int):
    _require_author(request.user)
    item_set = ItemSet.objects.filter(pk=item_set_id).first()
    if item_set is None:
        raise NotFound(f"no item set {item_set_id}")
    llm = request.POST.get("llm", "")
    services.gates_run_enqueue(item_set_id=item_set.pk, llm_member=services.members_by_names([llm])[0] if llm else None)
    messages.info(request, f"Gates queued for '{item_set.name}'; verdicts appear here when the worker is done.")
    return redirect("council:index")


@login_required
@require_POST
def run_start(request, slug: str):
    campaign = get_unblinded_campaign(request.user, slug)
    names = request.POST.getlist("members")
    try:
        run = services.council_run_start(
            campaign=campaign, members=services.members_by_names(names), created_by=request.user
        )
    except ApplicationError as exc:
        if isinstance(exc, (NotAllowed, NotFound)):
            raise
        messages.error(request, exc.message)
        return redirect("council:index")
    return redirect("council:run", run_id=run.pk)


@login_required
@require_GET
def run_detail(request, run_id: int):
    run = get_run_for_user(request.user, run_id)
    return render(request, "council/run.html", {"run": run, "progress": selectors.run_progress(run)})


@login_required
@require_GET
def run_progress(request, run_id: int):
    run = get_run_for_user(request.user, run_id)
    return JsonResponse(selectors.run_progress(run))


@login_required
@require_POST
def run_cancel(request, run_id: int):
    run = services.council_run_cancel(run=get_run_for_user(request.user, run_id))
    if run.status == CouncilRun.Status.CANCELLED:
        messages.info(request, f"Run {run.pk} cancelled; votes already recorded are kept.")
    else:  # it ended meanwhile (e.g. from a page opened before it finished)
        messages.info(request, f"Run {run.pk} had already {run.status}: there was nothing left to cancel.")
    return redirect("council:run", run_id=run.pk)


@login_required
@require_GET
def triage(request, slug: str):
    campaign = get_unblinded_campaign(request.user, slug)
    if selectors.triage_sealed(campaign):
        return render(request, "council/triage_sealed.html", {"campaign": campaign})
    spec = protocols.get(campaign.protocol)
    band = request.GET.get("band", "") if request.GET.get("band") in selectors.BANDS else ""
    gold_type = request.GET.get("type", "") if request.GET.get("type") in spec.gold_values else ""
    data = selectors.triage(campaign)
    rows = [r for r in data["rows"] if (not band or r["band"] == band) and (not gold_type or r["gold_type"] == gold_type)]
    # The bands and kappas need every vote; the table shows a page of the matching rows.
    pages = max(1, -(-len(rows) // TRIAGE_PAGE_SIZE))
    try:
        number = min(max(0, int(request.GET.get("page", "1")) - 1), pages - 1)
    except ValueError:
        number = 0
    shown = rows[number * TRIAGE_PAGE_SIZE:(number + 1) * TRIAGE_PAGE_SIZE]
    link = reverse("adjudication:item", args=[campaign.slug, 0]).removesuffix("0/")
    for row in shown:
        row["href"] = f"{link}{row['item_id']}/"
    query = urlencode({k: v for k, v in (("band", band), ("type", gold_type)) if v})
    return render(request, "council/triage.html", {
        "campaign": campaign, "data": data, "rows": shown, "n_matching": len(rows), "band": band, "gold_type": gold_type,
        "page": number, "pages": pages, "filter_query": f"&{query}" if query else "",
        "first_number": number * TRIAGE_PAGE_SIZE,
        "bands": selectors.BANDS, "types": spec.gold_values,
        "circularity": selectors.circularity_note(data["members"]),
        "kappas": [(pair.replace("|", " × "), v["kappa"], v["n"]) for pair, v in data["pairwise_kappa"].items()],
    })
