import contextlib
from pathlib import Path

from django.db import transaction

from annotation.access import get_campaign
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand, acting_user
from keys import releases
from keys import services as key_services


class Command(GoldkeyCommand):
    help = (
        "Freeze a gold key from a campaign whose adjudication queue is fully decided (refuses and lists "
        "the undecided items otherwise). Writes the canonical entries and their SHA-256, and seals the "
        "release. Irreversible. With --out, also writes the sealed release into a folder, as key_export does."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("--key-version", dest="version", required=True, help="key version label, e.g. TWIST-v1.0")
        parser.add_argument("--by", default=None, help="username of the author freezing the key (default: the first admin)")
        parser.add_argument("--notes", default="")
        parser.add_argument("--draft", action="store_true", help="build (or rebuild) a draft key instead of freezing")
        parser.add_argument(
            "--out", default=None,
            help="also write the sealed release into this folder (created; the files key_export writes, byte for "
                 "byte): written as the freeze seals them, moved in only once the freeze has committed",
        )

    def run(self, **options) -> dict:
        if options["out"] and (options["draft"] or options["dry_run"]):
            raise ApplicationError("--out writes a frozen key's sealed release: not with --draft or --dry-run")
        campaign = get_campaign(options["campaign"])
        user = acting_user(options["by"])
        if not options["out"]:
            return self._run(campaign, user, options, None)
        out = Path(options["out"])
        # The release's files are written beside the freeze, as each is sealed, into a temporary folder
        # beside `out`, and moved into it only once the freeze has committed; a refused freeze leaves nothing.
        with contextlib.ExitStack() as stack:
            try:
                folder = stack.enter_context(releases.ReleaseFolder(out))
            except OSError as exc:
                raise ApplicationError(f"cannot write the release into {out} ({exc}): nothing was frozen") from exc
            result = self._run(campaign, user, options, folder.write)
            try:
                result["files"] = folder.publish()
            except OSError as exc:
                raise ApplicationError(
                    f"{result['version']} is frozen and its release sealed, but writing it to {out} failed ({exc}): "
                    f"write it with key_export {result['version']} --out FOLDER"
                ) from exc
            result["out"] = str(out)
        return result

    def _run(self, campaign, user, options: dict, on_sealed_file) -> dict:
        if options["draft"]:
            service, extra = key_services.key_build, {}
        else:
            service, extra = key_services.key_freeze, {"on_sealed_file": on_sealed_file}
        with transaction.atomic():
            key = service(campaign=campaign, version=options["version"], user=user, notes=options["notes"], **extra)
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
        text = f"{result['version']} {verb} {result['status']}: {result['entries']} items ({counts})\nsha256 {result['sha256']}"
        if "out" in result:
            text += f"\n{result['files']} files written to {result['out']} (verify: cd {result['out']} && sha256sum -c MANIFEST.sha256)"
        return text
