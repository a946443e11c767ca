from django.core.management.base import CommandError

from goldkey.lib.commands import GoldkeyCommand
from keys import services as key_services


class Command(GoldkeyCommand):
    help = "Recompute a key's SHA-256 from its entries; exits non-zero when it differs from the recorded hash."

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="key version, e.g. TWIST-v1.0")

    def run(self, **options) -> dict:
        self._last = key_services.key_verify(version=options["version"])
        return self._last

    def handle(self, *args, **options):
        super().handle(*args, **options)
        result = self._last
        if not result["ok"]:
            raise CommandError(f"{result['version']}: hash mismatch (recorded {result['recorded'] or '-'}, computed {result['computed']})")

    def summary(self, result: dict) -> str:
        state = "OK" if result["ok"] else "MISMATCH"
        return f"{result['version']} ({result['status']}, {result['entries']} entries): {state}\nrecorded {result['recorded']}\ncomputed {result['computed']}"
