from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand
from lapse.trail import judge_import


class Command(GoldkeyCommand):
    help = 'Import LLM-judge labels (JSONL {"gid", "judge", "judge_model"}) into a Lapse campaign as council votes.'
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("path", help="judged-items JSONL file")

    def run(self, *, campaign, path, dry_run=False, **_):
        return judge_import(campaign=get_campaign(campaign), path=path, dry_run=dry_run)

    def summary(self, r):
        what = "Would import" if r["dry_run"] else "Imported"
        return f"{what} {r['labels']} judge labels from {', '.join(r['judges'])} ({r['changed']} changed)."
