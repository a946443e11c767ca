from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from lapse.trail import lapse_gold_import


class Command(GoldkeyCommand):
    help = (
        "Load the released Lapse gold trail (both annotators' labels, adjudicated labels, judge labels) "
        "into a new campaign over placeholder items (gid only; the texts were not released)."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("directory", help="the lapse-gold folder")
        parser.add_argument("--campaign", required=True, help="slug of the campaign to create")
        parser.add_argument("--judge-file", help="judged-items file name inside the folder (default: the released one)")
        parser.add_argument(
            "--undecided", action="store_true",
            help="do not apply the adjudicated labels: leave the disagreements queued for adjudication in Goldkey",
        )

    def run(self, *, directory, campaign, judge_file=None, undecided=False, **_):
        return lapse_gold_import(
            directory=Path(directory), slug=campaign, judge_file=judge_file, with_decisions=not undecided
        )

    def summary(self, r):
        judge = f", {r['judge']['labels']} judge labels" if r["judge"] else ""
        return (
            f"Created campaign '{r['campaign']}' over {r['items']} placeholder items: labels {r['labels']}, "
            f"{r['adjudicated']} adjudicated labels{judge}."
        )
