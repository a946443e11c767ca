from django.contrib.auth import get_user_model

from annotation.access import get_campaign
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from keys import services as key_services


def user_named(username: str | None):
    if not username:
        raise ApplicationError("give --by USERNAME (who does this; recorded)")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ApplicationError(f"no user '{username}'")
    return user


def acting_user(username: str | None):
    """--by USERNAME, or the first admin when the option is left out (recorded on the key either way)."""
    if username:
        return user_named(username)
    user = get_user_model().objects.filter(is_superuser=True).order_by("id").first()
    if user is None:
        raise ApplicationError("give --by USERNAME (no admin user exists)")
    return user


class Command(GoldkeyCommand):
    help = (
        "Freeze a gold key from a campaign whose adjudication queue is fully decided (refuses and lists "
        "the undecided items otherwise). Writes the canonical entries and their SHA-256. Irreversible."
    )
    dry_run_option = True

    def create_parser(self, prog_name, subcommand, **kwargs):
        # The issue spells the key label `--version`, which Django reserves for its own version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("--version", required=True, help="key version label, e.g. TWIST-v1.0")
        parser.add_argument("--by", default=None, help="username of the author freezing the key (default: the first admin)")
        parser.add_argument("--notes", default="")
        parser.add_argument("--draft", action="store_true", help="build (or rebuild) a draft key instead of freezing")

    def run(self, **options) -> dict:
        from django.db import transaction

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
