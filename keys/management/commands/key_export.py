from pathlib import Path

from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from keys import releases
from keys import selectors as key_selectors
from keys.canonical import sha256_hex


class Command(GoldkeyCommand):
    help = "Write a frozen key's release bundle (key, candidates, rejects, annotation trail, errata, datasheet, HF layout, MANIFEST.sha256)."

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="key version, e.g. TWIST-v1.0")
        parser.add_argument("--out", required=True, help="output folder (created)")

    def run(self, **options) -> dict:
        key = key_selectors.key_get(options["version"])
        if not key.is_frozen:
            raise ApplicationError(f"key '{key.version}' is a draft; only frozen keys are released")

        def check() -> None:
            if sha256_hex(key_selectors.key_canonical_bytes(key)) != key.sha256:
                # The sealed bytes are still intact, but someone changed the key's rows: say so first.
                raise ApplicationError(f"{key.version}: the stored entries do not match the recorded hash (run key_verify)")

        out = Path(options["out"])
        # The sealed bytes, whatever happened since the freeze, written while the entries are checked;
        # nothing reaches the folder unless the check passes.
        written = releases.release_write(key=key, out=out, check=check)
        return {"version": key.version, "out": str(out), "files": written, "sha256": key.sha256}

    def summary(self, result: dict) -> str:
        return f"{result['version']}: {result['files']} files written to {result['out']} (verify: cd {result['out']} && sha256sum -c MANIFEST.sha256)"
