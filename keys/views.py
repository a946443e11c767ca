"""Gold key pages: frozen keys are public (no login); drafts are for authors only."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from goldkey.errors import ApplicationError, NotAllowed, NotFound
from keys import bundle
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import Erratum


def _key_or_404(version: str, user):
    return key_selectors.get_key_for_user(version, user)  # NotFound → 404 through the one HTML error path


@require_GET
def key_list(request):
    return render(request, "keys/list.html", {"keys": list(key_selectors.keys_for_user(request.user))})


@require_GET
def key_detail(request, version: str):
    key = _key_or_404(version, request.user)
    return render(
        request,
        "keys/detail.html",
        {
            "key": key,
            "counts": key_selectors.key_counts(key),
            "errata": list(key_selectors.errata_for_key(key)),
            "agreement": key.manifest.get("agreement", {}),
            "kinds": Erratum.Kind.choices,
        },
    )


@require_GET
def key_download(request, version: str):
    key = _key_or_404(version, request.user)
    if not key.is_frozen:
        raise Http404("drafts are not released")
    files = bundle.render(key_selectors.bundle_data(key))
    response = HttpResponse(bundle.zip_bytes(files, key.version), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{key.version}.zip"'
    return response


@require_GET
def key_jsonl(request, version: str):
    key = _key_or_404(version, request.user)
    response = HttpResponse(key_selectors.key_canonical_bytes(key), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{key.version}.key.jsonl"'
    return response


@login_required
@require_POST
def erratum_create(request, version: str):
    key = _key_or_404(version, request.user)
    try:
        erratum = key_services.erratum_file(
            key=key,
            item_external_id=request.POST.get("item", "").strip(),
            kind=request.POST.get("kind", ""),
            value=request.POST.get("value", ""),
            description=request.POST.get("description", ""),
            user=request.user,
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Erratum {erratum.pk} filed against {key.version}.")
    return redirect("keys:detail", version=key.version)


@login_required
@require_POST
def erratum_decide(request, pk: int):
    try:
        erratum = key_services.erratum_get(pk)
        erratum = key_services.erratum_decide(
            erratum=erratum, accept=request.POST.get("decision") == "accept", note=request.POST.get("note", ""),
            user=request.user,
        )
    except (NotFound, NotAllowed):
        raise  # 404 / 403 pages through the one HTML error path
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("keys:list")
    messages.success(request, f"Erratum {erratum.pk} {erratum.status}.")
    return redirect("keys:detail", version=erratum.key.version)
