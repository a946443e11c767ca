import time

from adjudication.services import queue_build
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Build a campaign's stored adjudication queue in one pass (the first adjudication page does it "
        "otherwise): e.g. right after closing a large campaign, so that no adjudicator waits for it."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")

    def run(self, *, campaign, **_):
        started = time.perf_counter()
        state = queue_build(campaign=get_campaign(campaign))
        return {"campaign": campaign, "items": state.n_items, "queued": state.n_queued,
                "seconds": round(time.perf_counter() - started, 2)}

    def summary(self, r):
        return f"{r['campaign']}: {r['queued']} of {r['items']} items queued (stored queue built in {r['seconds']} s)."
