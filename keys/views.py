"""Gold key pages: published keys are public (no login); drafts and embargoed keys are for authors only."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseNotModified, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

import protocols
from annotation import access
from goldkey import roles
from goldkey.errors import ApplicationError, NotAllowed, NotFound
from items.selectors import corpus_summary
from keys import bundle, jobs, next_steps, releases
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import Erratum, GoldKey, KeyJob


@require_GET
def home(request):
    """The home page: what Goldkey is, and each signed-in person's next step by role."""
    user = request.user
    signed_in = user.is_authenticated
    return render(request, "home.html", {
        "summary": corpus_summary(),
        "work": next_steps.annotator_steps(user) if signed_in and roles.is_annotator(user) else [],
        "steps": next_steps.author_steps(user) if signed_in else [],
        "no_role": signed_in and not (roles.is_annotator(user) or roles.is_author(user)),
    })


def _key_or_404(version: str, user):
    return key_selectors.get_key_for_user(version, user)  # NotFound → 404 through the one HTML error path


@require_GET
def key_list(request):
    return render(request, "keys/list.html", {
        "keys": list(key_selectors.keys_for_user(request.user)),
        "ready": key_selectors.campaigns_ready_for_a_key(request.user),
    })


@require_GET
def key_detail(request, version: str):
    key = _key_or_404(version, request.user)
    errata = list(key_selectors.errata_for_key(key))
    waiting = [e for e in errata if e.status == Erratum.Status.ACCEPTED and e.applied_in_id is None]
    counts = key_selectors.key_counts(key)
    gold = request.GET.get("gold", "") if request.GET.get("gold") in counts else ""
    try:
        number = int(request.GET.get("page", "1")) - 1
    except ValueError:
        number = 0
    return render(
        request,
        "keys/detail.html",
        {
            "key": key,
            "counts": counts,
            "table": key_selectors.key_entry_page(key, number=number, gold=gold),
            "gold_filter": gold,
            "errata": errata,
            "waiting_errata": waiting,
            "next_version": _next_version(key) if waiting else "",
            "review": key_selectors.freeze_review(key),
            "superseded_by": list(GoldKey.objects.filter(parent=key, status=GoldKey.Status.FROZEN).order_by("version")),
            "reliability": key_selectors.reliability_report(key) if key.is_frozen else [],
            "agreement": key.manifest.get("agreement", {}),
            "leakage": key.manifest.get("leakage"),
            # A designed sample's strata and weights, as the manifest recorded them (a protocol's section).
            "sample_design": key.manifest.get("sample_design"),
            "leakage_declared": protocols.for_kind(key.kind).leakage_audit is not None,
            "parent_diff": bundle.diff_shown(key_selectors.key_parent_diff(key)),
            "kinds": Erratum.Kind.choices,
            "open_jobs": jobs.open_jobs_on_key(key, request.user),
        },
    )


def _attempt(request, call):
    """Run a service call for a page: its result, or None with the refusal shown as a message. A 404 or
    403 (NotFound, NotAllowed) goes on to the one HTML error path."""
    try:
        return call()
    except (NotFound, NotAllowed):
        raise
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return None


def _next_version(key) -> str:
    try:
        return key_services.next_version(key.version)
    except ApplicationError:
        return ""


@login_required
@require_http_methods(["GET", "POST"])
def key_build(request, slug: str):
    """Authors: build a draft key from a closed, decided campaign, to review it before freezing."""
    roles.require_author(request.user)
    campaign = access.get_campaign(slug)
    if not access.can_view_unblinded(request.user, campaign):
        raise NotFound(f"no campaign '{slug}'")  # an author annotating here is blind to its gold
    if request.method == "POST":
        version = request.POST.get("version", "").strip()
        if not version:
            messages.error(request, "Give the key a version, e.g. TWIST-v1.0.")
        else:
            return _job_started(request, action=KeyJob.Action.BUILD, campaign=campaign, version=version,
                                notes=request.POST.get("notes", "").strip(), back=request.path)
    return render(request, "keys/build.html", {"campaign": campaign, "suggested": f"{campaign.item_set.track.benchmark.name}-v1.0"})


@login_required
@require_POST
def key_freeze(request, version: str):
    """Authors: freeze the reviewed draft as it was built (refused if the decisions changed since)."""
    roles.require_author(request.user)
    key = _key_or_404(version, request.user)
    review = key_selectors.freeze_review(key)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: a frozen key never changes.")
    elif review["below_bar"] and request.POST.get("below_bar") != "yes":
        messages.error(request, f"The kept-set kappa {review['kept_kappa']:.3f} is below the pre-registered bar "
                                f"{review['bar']}: tick the second box to freeze it anyway (the datasheet reports both).")
    else:
        return _job_started(request, action=KeyJob.Action.FREEZE, key=key, version=key.version,
                            back=reverse("keys:detail", args=[key.version]))
    return redirect("keys:detail", version=key.version)


@login_required
@require_POST
def key_publish(request, version: str):
    """Authors: make a frozen (embargoed) key public."""
    roles.require_author(request.user)
    key = _key_or_404(version, request.user)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: a published key's files are public for good.")
    elif _attempt(request, lambda: key_services.key_publish(key=key, user=request.user)) is not None:
        messages.success(request, f"{key.version} is published.")
    return redirect("keys:detail", version=key.version)


@login_required
@require_http_methods(["GET", "POST"])
def key_derive(request, version: str):
    """Authors: preview the next version (the accepted errata applied, every gate checked), then derive it."""
    roles.require_author(request.user)
    parent = _key_or_404(version, request.user)
    target = (request.POST.get("version") or request.GET.get("version") or _next_version(parent)).strip()
    if request.method == "POST" and target:
        return _job_started(request, action=KeyJob.Action.DERIVE, key=parent, version=target,
                            notes=request.POST.get("notes", "").strip(), back=request.path)
    preview = key_services.key_derive_preview(parent=parent, version=target, user=request.user) if target else None
    return render(request, "keys/derive.html", {"parent": parent, "version": target, "preview": preview})


def _job_started(request, *, back: str, **job) -> HttpResponse:
    """Start a key job (or find the one already open on its target) and send the author to its page: 303,
    so that a reload of that page never posts again."""
    started = _attempt(request, lambda: jobs.key_job_start(user=request.user, **job))
    if started is None:
        return redirect(back)
    job, created = started
    if not created:
        messages.info(request, f"A job to {job.get_action_display()} {job.version} is already {job.status}: here it is.")
    return HttpResponseRedirect(reverse("keys:job", args=[job.pk]), status=303)


# What the key page says once a job is done.
_DONE = {
    KeyJob.Action.BUILD: "Draft {version} built: review it, then freeze it.",
    KeyJob.Action.FREEZE: "{version} is frozen and its release sealed.",
    KeyJob.Action.DERIVE: "{version} derived from {parent}, frozen and sealed.",
}


@login_required
@require_GET
def job_detail(request, pk: int):
    """A key job's page: its stage and elapsed time, polled; the key once done, the refusal if it failed."""
    job = jobs.get_job_for_user(pk, request.user)
    if job.status == KeyJob.Status.DONE and job.result is not None:
        messages.success(request, _DONE[job.action].format(
            version=job.result.version, parent=job.key.version if job.key else ""))
        return redirect("keys:detail", version=job.result.version)
    return render(request, "keys/job.html", {"job": job, "progress": jobs.job_progress(job)})


@login_required
@require_GET
def job_progress(request, pk: int):
    return JsonResponse(jobs.job_progress(jobs.get_job_for_user(pk, request.user)))


def _sealed(response: HttpResponse, key, release, filename: str) -> HttpResponse:
    # The same bytes forever: the release hash is the entity tag, and caches may keep a published key's
    # for good. An embargoed key's are for the author who asked: no shared cache may keep them.
    response["ETag"] = f'"{release.sha256}"'
    response["Cache-Control"] = "public, max-age=31536000, immutable" if key.published_at else "private, no-store"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
def key_download(request, version: str):
    key = _key_or_404(version, request.user)
    if not key.is_frozen:
        raise Http404("drafts are not released")
    release = releases.release_get(key)
    if request.headers.get("If-None-Match") == f'"{release.sha256}"':
        return _sealed(HttpResponseNotModified(), key, release, f"{key.version}.zip")
    content = bundle.zip_bytes(releases.release_files(key), key.version)
    return _sealed(HttpResponse(content, content_type="application/zip"), key, release, f"{key.version}.zip")


@require_GET
def key_jsonl(request, version: str):
    key = _key_or_404(version, request.user)
    if not key.is_frozen:  # an author's draft: rendered from the live entries
        response = HttpResponse(key_selectors.key_canonical_bytes(key), content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{key.version}.key.jsonl"'
        return response
    release = releases.release_get(key)
    content = releases.release_files(key)["key.jsonl"]
    return _sealed(HttpResponse(content, content_type="application/jsonl; charset=utf-8"), key, release, f"{key.version}.key.jsonl")


@require_GET
def key_errata_feed(request, version: str):
    """The key line's errata, filed before or after any release: the one place later errata live."""
    key = _key_or_404(version, request.user)
    content = b"".join(
        json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"
        for record in key_selectors.errata_feed(key)
    )
    return HttpResponse(content, content_type="application/jsonl; charset=utf-8")


@login_required
@require_POST
def erratum_create(request, version: str):
    key = _key_or_404(version, request.user)
    erratum = _attempt(request, lambda: key_services.erratum_file(
        key=key,
        item_external_id=request.POST.get("item", "").strip(),
        kind=request.POST.get("kind", ""),
        value=request.POST.get("value", ""),
        description=request.POST.get("description", ""),
        user=request.user,
    ))
    if erratum is not None:
        messages.success(request, f"Erratum {erratum.pk} filed against {key.version}.")
    return redirect("keys:detail", version=key.version)


@login_required
@require_POST
def erratum_decide(request, pk: int):
    erratum = _attempt(request, lambda: key_services.erratum_decide(
        erratum=key_selectors.get_erratum_for_user(pk, request.user), accept=request.POST.get("decision") == "accept",
        note=request.POST.get("note", ""), user=request.user,
    ))
    if erratum is None:
        return redirect("keys:list")
    messages.success(request, f"Erratum {erratum.pk} {erratum.status}.")
    return redirect("keys:detail", version=erratum.key.version)


@login_required
@require_http_methods(["GET", "POST"])
def erratum_rejudge(request, pk: int):
    """Authors: accept a fix-reference erratum by labelling every answer to its question against the
    corrected reference, shown beside each answer (blindness is for annotators; authors see it all), with an
    LLM judge's verdicts as suggestions when the protocol can ask one and the author picks a judge."""
    roles.require_author(request.user)
    erratum = key_selectors.get_erratum_for_user(pk, request.user)
    if request.method == "POST":
        names = [e.external_id for e in key_selectors.question_entries(erratum.key, erratum.item_external_id)]
        done = _attempt(request, lambda: key_services.erratum_rejudge(
            erratum=erratum, user=request.user, note=request.POST.get("note", ""),
            labels={name: request.POST.get(f"label-{name}", "") for name in names},
            suggestions={name: request.POST.get(f"suggested-{name}", "") for name in names},
            judge=request.POST.get("judge", "").strip(),
        ))
        if done is not None:
            messages.success(request, f"Erratum {done.pk} accepted: {len(done.rejudged)} answer(s) re-judged.")
            return redirect("keys:detail", version=erratum.key.version)
    page = _attempt(request, lambda: key_selectors.rejudge_page(erratum, judge=request.GET.get("judge", "").strip()))
    if page is None:
        return redirect("keys:detail", version=erratum.key.version)
    return render(request, "keys/rejudge.html", {**page, "posted": request.POST if request.method == "POST" else {}})
