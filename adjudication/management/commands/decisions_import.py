from adjudication.services import decisions_import
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = 'Import adjudication decisions in the released format {"exported", "decisions": {item_id: {"action", "note"?}}} (items not in the file are kept).'
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("path", help="decisions JSON file")

    def run(self, *, campaign, path, dry_run=False, **_):
        return decisions_import(campaign=get_campaign(campaign), path=path, dry_run=dry_run)

    def summary(self, r):
        what = "Would import" if r["dry_run"] else "Imported"
        return f"{what} {r['decisions']} decisions {r['by_action']} ({r['changed']} changed)."
