from django.db import transaction

from goldkey.lib.commands import GoldkeyCommand
from keys import selectors as key_selectors
from keys import services as key_services


class Command(GoldkeyCommand):
    help = (
        "Publish a frozen key: until then it is sealed but embargoed (its pages, files and API are for authors "
        "only). Refused while a reliability pass (or any other campaign) still has open work on its items."
    )
    dry_run_option = True
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="frozen key version, e.g. TWIST-v1.0")

    def run(self, **options) -> dict:
        key = key_selectors.key_get(options["version"])
        with transaction.atomic():
            publication = key_services.key_publish(key=key, user=self.acting_user(options))
            if options["dry_run"]:
                transaction.set_rollback(True)
        return {"version": key.version, "published_at": publication.published_at.isoformat(), "dry_run": options["dry_run"]}

    def summary(self, result: dict) -> str:
        if result["dry_run"]:
            return f"{result['version']} would be published (dry run: nothing written)."
        return f"{result['version']} is published: its page, files and API are public."
