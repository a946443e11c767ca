from pathlib import Path

from annotation.models import Campaign
from annotation.transfer import answers_import
from goldkey.errors import ApplicationError
from items.management.commands._base import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Import one annotator's answers (TWIST answer JSON or Lapse JSONL) into a campaign, all-or-nothing."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("path", type=Path)
        parser.add_argument("--annotator", required=True, help="pseudonym (A, B, …) or username")

    def run(self, *, campaign, path, annotator, **_):
        try:
            obj = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist as exc:
            raise ApplicationError(f"no campaign '{campaign}'") from exc
        return answers_import(campaign=obj, path=path, annotator=annotator)

    def summary(self, r):
        return (
            f"Imported {r['answers']} answers for {r['annotator']} ({r['changed']} changed; "
            f"phase 1 complete: {r['phase1_complete']}, submitted: {r['submitted']})."
        )
