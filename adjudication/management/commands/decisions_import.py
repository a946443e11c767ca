from adjudication.services import decisions_import
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand, user_named


class Command(GoldkeyCommand):
    help = (
        'Import adjudication decisions in the released format {"exported", "decisions": {item_id: {"action", "note"?}}} '
        "(items not in the file are kept). The file does not say who decided: name the adjudicator with --by, "
        "or say it is unknown with --adjudicator-unknown (the datasheet discloses either)."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("path", help="decisions JSON file")
        who = parser.add_mutually_exclusive_group()
        who.add_argument("--by", default=None, help="username of the author who took these decisions (recorded on each)")
        who.add_argument("--adjudicator-unknown", action="store_true",
                         help="nobody knows who decided: recorded, and the datasheet says so")

    def run(self, *, campaign, path, by=None, adjudicator_unknown=False, dry_run=False, **_):
        user = user_named(by) if by else None
        return decisions_import(
            campaign=get_campaign(campaign), path=path, user=user, adjudicator_unknown=adjudicator_unknown, dry_run=dry_run
        )

    def summary(self, r):
        what = "Would import" if r["dry_run"] else "Imported"
        return f"{what} {r['decisions']} decisions {r['by_action']} ({r['changed']} changed)."
