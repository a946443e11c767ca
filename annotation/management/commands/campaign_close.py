from annotation.access import get_campaign
from annotation.services import campaign_close
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Close a campaign to annotation so that its disagreements can be decided. Refused while an "
        "enrollment is open, unless --end-open ends those enrollments (recorded and disclosed in the release)."
    )
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--end-open", action="store_true", help="end the enrollments not yet submitted")

    def run(self, *, campaign, end_open=False, **options):
        obj = campaign_close(campaign=get_campaign(campaign), user=self.acting_user(options), end_open=end_open)
        ended = list(obj.enrollments.filter(ended_at__isnull=False).values_list("pseudonym", flat=True))
        return {"campaign": obj.slug, "status": obj.status, "closed_at": obj.closed_at.isoformat(), "ended": ended}

    def summary(self, r):
        ended = f"; ended without submitting: {', '.join(r['ended'])}" if r["ended"] else ""
        return f"Campaign {r['campaign']} is closed to annotation{ended}. Its disagreements can now be decided."
