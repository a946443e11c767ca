from pathlib import Path

from annotation.access import get_campaign
from annotation.transfer import answers_import
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    dry_run_option = True
    help = "Import one annotator's answers (TWIST answer JSON or Lapse JSONL) into a campaign, all-or-nothing."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("path", type=Path)
        parser.add_argument("--annotator", required=True, help="pseudonym (A, B, …) or username")
        parser.add_argument(
            "--submit", action="store_true",
            help="hand the enrollment in as the file leaves it (how a released trail is loaded); "
            "without it the annotator can go on working",
        )
        parser.add_argument(
            "--order-seed", type=int, default=None,
            help="the seed the authors' tool ordered this annotator's items with, if known (recorded for the "
            "datasheet; without it the datasheet says the order is not known)",
        )

    def run(self, *, campaign, path, annotator, submit=False, dry_run=False, order_seed=None, **_):
        obj = get_campaign(campaign)
        return answers_import(campaign=obj, path=path, annotator=annotator, submit=submit, dry_run=dry_run,
                              order_seed=order_seed)

    def summary(self, r):
        return ("(dry run, nothing written) " if r["dry_run"] else "") + (
            f"Imported {r['answers']} answers for {r['annotator']} ({r['changed']} changed; "
            f"phase 1 complete: {r['phase1_complete']}, submitted: {r['submitted']})."
        )
