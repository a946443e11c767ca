from pathlib import Path

from chains.importer import items_import_twist_c
from goldkey.lib.commands import GoldkeyCommand
from items.services import gate_rejects_sentence


class Command(GoldkeyCommand):
    help = (
        "Import TWIST Track C chain queries (JSON Lines, Goldkey's shape: docs/twist_c.md) over conversation versions "
        "imported with import_locomo --version-of. All or nothing for a malformed file; a chain failing a gate is kept "
        "as a reject with its reasons."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--license", default="", help="licence id to record, e.g. cc-by-4.0 (default: the benchmark's declared licence)")
        parser.add_argument("--item-set", help="item set name (default: derived from the file name)")

    def run(self, *, path, license="", item_set=None, dry_run=False, **_):
        name = item_set or f"TWIST Track C {path.stem}"
        return items_import_twist_c(path=path, item_set_name=name, license=license, dry_run=dry_run).as_dict()

    def summary(self, r):
        prefix = "Dry run: would import" if r["dry_run"] else "Imported"
        text = f"{prefix} {r['created']} chain query(ies) into '{r['item_set']}'; {r['unchanged']} already present."
        return text + gate_rejects_sentence(r["gate_rejects"])
