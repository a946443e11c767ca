from pathlib import Path

from annotation.access import get_campaign
from annotation.transfer import answers_export
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Export one annotator's answers in the released format (TWIST answer JSON; Lapse JSONL "
        "{gid,label,notes,annotator,ts})."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--annotator", required=True, help="pseudonym (A, B, …) or username")
        parser.add_argument("--out", required=True, type=Path, help="file to write (or a folder)")

    def run(self, *, campaign, annotator, out, **_):
        obj = get_campaign(campaign)
        return answers_export(campaign=obj, annotator=annotator, out=out)

    def summary(self, r):
        return f"Exported {r['answers']} answers of {r['annotator']} to {r['path']}."
