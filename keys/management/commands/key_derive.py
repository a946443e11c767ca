from django.db import transaction

from goldkey.lib.commands import GoldkeyCommand, acting_user
from keys import selectors as key_selectors
from keys import services as key_services


class Command(GoldkeyCommand):
    help = "Derive a new frozen key from a frozen parent plus its accepted errata, with a per-item changelog."
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("parent", help="the frozen parent key, e.g. TWIST-v1.0")
        parser.add_argument("--key-version", dest="version", default=None, help="new version (default: next minor, e.g. TWIST-v1.1)")
        parser.add_argument("--by", default=None, help="username of the author (default: the first admin)")
        parser.add_argument("--notes", default="")

    def run(self, **options) -> dict:
        parent = key_selectors.key_get(options["parent"])
        version = options["version"] or key_services.next_version(parent.version)
        user = acting_user(options["by"])
        with transaction.atomic():
            key = key_services.key_derive(parent=parent, version=version, user=user, notes=options["notes"])
            result = {
                "version": key.version, "parent": parent.version, "sha256": key.sha256,
                "entries": key.manifest["entries"], "changes": key.changelog, "dry_run": options["dry_run"],
            }
            if options["dry_run"]:
                transaction.set_rollback(True)
        return result

    def summary(self, result: dict) -> str:
        lines = [f"{result['version']} (from {result['parent']}): {result['entries']} items, {len(result['changes'])} change(s)"]
        lines += [f"  {c['item']}: {c['kind']} (erratum {c['erratum']})" for c in result["changes"]]
        lines.append(f"sha256 {result['sha256']}")
        return "\n".join(lines)
