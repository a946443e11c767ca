from django.core.management.base import CommandError

from goldkey.lib.commands import GoldkeyCommand
from keys import services as key_services


class Command(GoldkeyCommand):
    help = (
        "Recompute a key's SHA-256 from its entries, check its sealed release against its manifest and the live "
        "rows (items, answers, decisions, council votes) against the sealed copy; exits non-zero naming what drifted."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="key version, e.g. TWIST-v1.0")

    def run(self, **options) -> dict:
        self._last = key_services.key_verify(version=options["version"])
        return self._last

    def handle(self, *args, **options):
        super().handle(*args, **options)
        result = self._last
        if not result["ok"]:
            raise CommandError(f"{result['version']}: " + "; ".join(result["drift"]))

    def summary(self, result: dict) -> str:
        state = "OK" if result["ok"] else "DRIFTED"
        lines = [f"{result['version']} ({result['status']}, {result['entries']} entries): {state}",
                 f"recorded {result['recorded']}", f"computed {result['computed']}"]
        if result["release_sha256"]:
            lines.append(f"release  {result['release_sha256']} (sha256 of MANIFEST.sha256)")
        return "\n".join(lines + [f"  drift: {d}" for d in result["drift"]])
