from pathlib import Path

from django.db import transaction

from annotation.access import get_campaign
from council.services import council_votes_import
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Import a released council answer file as one member's votes (prompt version 'imported')."
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("path", type=Path)
        parser.add_argument("--member", required=True, help="the member name to record the votes under")
        parser.add_argument("--generator", action="store_true", help="mark the member as the item generator")

    def run(self, **o) -> dict:

        campaign = get_campaign(o["campaign"])
        with transaction.atomic():
            result = council_votes_import(
                campaign=campaign, path=o["path"], member_name=o["member"], is_generator=True if o["generator"] else None
            )
            if o["dry_run"]:
                transaction.set_rollback(True)
        return {**result, "dry_run": o["dry_run"]}

    def summary(self, r: dict) -> str:
        return f"{'would import' if r['dry_run'] else 'imported'} {r['created']} vote(s) for {r['member']} ({r['unchanged']} unchanged)"
