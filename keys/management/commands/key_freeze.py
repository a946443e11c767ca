from django.db import transaction

from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand, acting_user
from keys import services as key_services


class Command(GoldkeyCommand):
    help = (
        "Freeze a gold key from a campaign whose adjudication queue is fully decided (refuses and lists "
        "the undecided items otherwise). Writes the canonical entries and their SHA-256. Irreversible."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("--key-version", dest="version", required=True, help="key version label, e.g. TWIST-v1.0")
        parser.add_argument("--by", default=None, help="username of the author freezing the key (default: the first admin)")
        parser.add_argument("--notes", default="")
        parser.add_argument("--draft", action="store_true", help="build (or rebuild) a draft key instead of freezing")

    def run(self, **options) -> dict:

        campaign = get_campaign(options["campaign"])
        user = acting_user(options["by"])
        service = key_services.key_build if options["draft"] else key_services.key_freeze
        with transaction.atomic():
            key = service(campaign=campaign, version=options["version"], user=user, notes=options["notes"])
            result = {
                "version": key.version,
                "status": key.status,
                "sha256": key.sha256,
                "entries": key.manifest.get("entries"),
                "counts_by_gold": key.manifest.get("counts_by_gold"),
                "dry_run": options["dry_run"],
            }
            if options["dry_run"]:
                transaction.set_rollback(True)
        return result

    def summary(self, result: dict) -> str:
        counts = " / ".join(f"{n} {gold}" for gold, n in (result["counts_by_gold"] or {}).items())
        verb = "would be" if result["dry_run"] else "is"
        return f"{result['version']} {verb} {result['status']}: {result['entries']} items ({counts})\nsha256 {result['sha256']}"
