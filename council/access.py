"""Who may reach a council run: the campaign's unblinded-material rule, declared once for the pages and the API."""

from annotation.access import require_unblinded
from council.models import CouncilRun
from goldkey.errors import NotFound


def get_run_for_user(user, run_id: int) -> CouncilRun:
    run = CouncilRun.objects.select_related("prompt_version", "campaign").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"no council run {run_id}")
    require_unblinded(user, run.campaign)
    return run
