"""A frozen Track C key's score page: every stored run's figures with their intervals, beside the calibration of
the judge that scored it. Authors only (`chains.selectors.get_chain_key_for_author`)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chains import charts, selectors


@login_required
@require_GET
def chain_scores(request, version: str):
    key = selectors.get_chain_key_for_author(version, request.user)
    runs = selectors.chain_run_reports(key)
    for run in runs:
        run["forest"] = charts.run_forest(run, title=f"{run['system']} against {key.version}, judged by "
                                                     f"{run['judge']['member']}")
    return render(request, "chains/scores.html", {"key": key, "runs": runs})
