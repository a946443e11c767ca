from pathlib import Path

from django.db import transaction

from annotation.access import get_campaign
from annotation.services import campaign_guidelines_set
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Write a campaign's guidelines for its annotators from a Markdown file (raw HTML is shown as text, "
        "never run). Each annotator reads them before their next item. An empty file removes them. "
        "Refused once the campaign is frozen."
    )
    acting_user_option = True
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("file", help="the guidelines, in Markdown (UTF-8)")

    def run(self, *, campaign, file, dry_run=False, **options):
        path = Path(file)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise ApplicationError(f"{path}: no such file") from exc
        except UnicodeDecodeError as exc:
            raise ApplicationError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
        with transaction.atomic():
            # The same service (and so the same checks) with or without --dry-run; a dry run rolls back.
            obj = campaign_guidelines_set(campaign=get_campaign(campaign), guidelines=text, user=self.acting_user(options))
            if dry_run:
                transaction.set_rollback(True)
        return {"campaign": obj.slug, "characters": len(obj.guidelines or ""), "dry_run": dry_run}

    def summary(self, r):
        what = f"{r['characters']:,} characters of guidelines" if r["characters"] else "no guidelines"
        return f"{'Would give' if r['dry_run'] else 'Campaign'} {r['campaign']} {'' if r['dry_run'] else 'has '}{what}" + (
            "." if r["dry_run"] else ": each annotator reads them before their next item.")
