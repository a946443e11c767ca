from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from items.services import items_import_lapse


class Command(GoldkeyCommand):
    help = "Import Lapse items (JSONL): gold-set items (gid, query, response, witness) or the scorer battery."
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--license", default="", help="licence id to record, e.g. cc-by-4.0 (default: the benchmark's declared licence)")
        parser.add_argument("--item-set", help="item set name (default: derived from the file name)")

    def run(self, *, path, license="", item_set=None, dry_run=False, **_):
        name = item_set or f"Lapse {path.stem}"
        return items_import_lapse(path=path, item_set_name=name, license=license, dry_run=dry_run).as_dict()

    def summary(self, r):
        prefix = "Dry run: would import" if r["dry_run"] else "Imported"
        return f"{prefix} {r['created']} item(s) into '{r['item_set']}'; {r['unchanged']} already present."
