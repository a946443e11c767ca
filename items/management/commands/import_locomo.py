from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from items.services import corpus_import_locomo


class Command(GoldkeyCommand):
    help = (
        "Import LoCoMo conversations: a folder of 26.json-style files (26.json → conv-26), one such file, "
        "or one locomo10.json list. All or nothing; re-importing the same content changes nothing."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--license", default="", help="licence id to record, e.g. cc-by-4.0 (default: LoCoMo's own, cc-by-nc-4.0)")

    def run(self, *, path, license="", dry_run=False, **_):
        return corpus_import_locomo(path=path, license=license, dry_run=dry_run).as_dict()

    def summary(self, r):
        prefix = "Dry run: would import" if r["dry_run"] else "Imported"
        return f"{prefix} {r['created']} conversation(s); {r['unchanged']} already present."
