from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from items.services import corpus_import_locomo, corpus_import_version


class Command(GoldkeyCommand):
    help = (
        "Import LoCoMo conversations: a folder of 26.json-style files (26.json → conv-26), one such file, "
        "or one locomo10.json list. With --version-of, one conversation file as a version of an imported "
        "conversation (the original with injected turns, stored as a conversation of its own; the original is "
        "never edited). All or nothing; re-importing the same content changes nothing."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--license", default="", help="licence id to record, e.g. cc-by-4.0 (default: LoCoMo's own, cc-by-nc-4.0)")
        parser.add_argument("--version-of", default="", help="the imported conversation this file is a version of (e.g. conv-c)")
        parser.add_argument("--as", dest="external_id", default="",
                            help="one conversation file of any name, imported under this id; with --version-of, the version's id "
                            "(default: the file name without .json)")

    def run(self, *, path, license="", version_of="", external_id="", dry_run=False, **_):
        if version_of:
            return corpus_import_version(
                path=path, version_of=version_of, external_id=external_id, license=license, dry_run=dry_run,
            ).as_dict()
        return corpus_import_locomo(path=path, license=license, external_id=external_id, dry_run=dry_run).as_dict()

    def summary(self, r):
        prefix = "Dry run: would import" if r["dry_run"] else "Imported"
        return f"{prefix} {r['created']} conversation(s); {r['unchanged']} already present."
