"""Score pages of a key version: the leaderboard, one run, and what changed between two versions.

Visibility follows the key's (keys.selectors.get_key_for_user: frozen keys are public, drafts are for
authors). Every figure comes from scoring.selectors; the views only arrange and format it.
"""

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

import protocols
from goldkey import roles
from goldkey.errors import NotFound
from keys import selectors as key_selectors
from scoring import charts, formats
from scoring import selectors as score_selectors
from scoring.metrics import LONG, SCORE_LEVEL_METRICS, SHORT

CELLS = ("CR", "AS", "HNS", "Attr", "GCR", "fact_only")  # CR never without AS and HNS beside it


def _cells(figures: dict) -> list[tuple[str, dict]]:
    return [(metric, figures[metric]) for metric in CELLS]


def _rows(report: dict) -> list[dict]:
    records = report["run_records"]
    return [
        {"name": name, "record": records[name], "figures": figures, "cells": _cells(figures)}
        for name, figures in report["runs"].items()
    ]


def _ingests(report: dict) -> list[dict]:
    """Per system with several ingests (or score-level ones): its rows, CR, AS and HNS always together."""
    return [
        {"base": base, "group": group, "metrics": [(metric, group[metric]) for metric in SCORE_LEVEL_METRICS]}
        for base, group in report["multi_ingest"].items()
    ]


def family_options(request) -> dict:
    """The Holm family the reader asked for (?family=, ?classes=): the author's choice, stated in the report."""
    options = {"family": request.GET.get("family") or "all"}
    if request.GET.get("classes"):
        options["classes"] = tuple(c.strip() for c in request.GET["classes"].split(",") if c.strip())
    return options


def protocol_score_page(key, user) -> str:
    """The key protocol's own score page, for an author (its runs are free text graded by a judge, say, which
    the Track B metrics here cannot score): '' when the protocol has none."""
    page = protocols.for_kind(key.kind).score_page
    return reverse(page, args=[key.version]) if page and key.is_frozen and roles.is_author(user) else ""


@require_GET
def leaderboard(request, version: str):
    key = key_selectors.get_key_for_user(version, request.user)
    if own := protocol_score_page(key, request.user):
        return redirect(own)
    report = score_selectors.score_report(key, **family_options(request))
    return render(
        request,
        "scoring/scores.html",
        {
            "key": key,
            "report": report,
            "rows": _rows(report),
            "ingests": _ingests(report),
            "forest": charts.score_forest(report["runs"], title=f"CR, AS and HNS with 95% intervals against {key.version}"),
            "later": list(key.children.order_by("version")),
        },
    )


@require_GET
def run_detail(request, version: str, run_id: int):
    key = key_selectors.get_key_for_user(version, request.user)
    run = score_selectors.run_for_key(key, run_id)
    report = score_selectors.score_report(key)
    if run.name not in report["runs"]:
        raise NotFound(f"run {run_id} cannot be scored against '{key.version}': {report['unscorable'].get(run.name, '')}")
    figures = report["runs"][run.name]
    return render(
        request,
        "scoring/score_run.html",
        {
            "key": key,
            "run": run,
            "record": report["run_records"][run.name],
            "figures": figures,
            "cells": _cells(figures),
            "strata": [(name, figures["strata"][name], _cells(figures["strata"][name])) for name in (SHORT, LONG)],
            "tests": [t for t in report["mcnemar"] if run.name in (t["a"], t["b"])],
            "family": report["family"],
            "multi_ingest": report["multi_ingest"].get(run.base_name),
            "forest": charts.score_forest({run.name: figures}, title=f"{run.name} against {key.version}"),
        },
    )


@require_GET
def changes(request, version: str, other: str):
    before = key_selectors.get_key_for_user(version, request.user)
    after = key_selectors.get_key_for_user(other, request.user)
    return render(request, "scoring/score_changes.html", {"before": before, "after": after,
                                                       "changes": score_selectors.score_changes(before, after)})


def _download(key, body: str, suffix: str, content_type: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{key.version}.scores.{suffix}"'
    return response


@require_GET
def report_csv(request, version: str):
    key = key_selectors.get_key_for_user(version, request.user)
    return _download(key, formats.report_csv(score_selectors.score_report(key)), "csv", "text/csv; charset=utf-8")


@require_GET
def report_markdown(request, version: str):
    key = key_selectors.get_key_for_user(version, request.user)
    report = score_selectors.score_report(key, **family_options(request))
    return _download(key, formats.report_markdown(report), "md", "text/markdown; charset=utf-8")
