"""Gold key pages: frozen keys are public (no login); drafts are for authors only."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseNotModified
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from goldkey.errors import ApplicationError, NotAllowed, NotFound
from keys import bundle, releases
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


def _sealed(response: HttpResponse, release, filename: str) -> HttpResponse:
    # The same bytes forever: the release hash is the entity tag, and caches may keep it for good.
    response["ETag"] = f'"{release.sha256}"'
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
def key_download(request, version: str):
    key = _key_or_404(version, request.user)
    if not key.is_frozen:
        raise Http404("drafts are not released")
    release = releases.release_get(key)
    if request.headers.get("If-None-Match") == f'"{release.sha256}"':
        return _sealed(HttpResponseNotModified(), release, f"{key.version}.zip")
    content = bundle.zip_bytes(releases.release_files(key), key.version)
    return _sealed(HttpResponse(content, content_type="application/zip"), release, f"{key.version}.zip")


@require_GET
def key_jsonl(request, version: str):
    key = _key_or_404(version, request.user)
    if not key.is_frozen:  # an author's draft: rendered from the live entries
        response = HttpResponse(key_selectors.key_canonical_bytes(key), content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{key.version}.key.jsonl"'
        return response
    release = releases.release_get(key)
    content = releases.release_files(key)["key.jsonl"]
    return _sealed(HttpResponse(content, content_type="application/jsonl; charset=utf-8"), release, f"{key.version}.key.jsonl")


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
