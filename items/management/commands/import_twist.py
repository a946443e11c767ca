from pathlib import Path

from django.core.management.base import CommandError

from goldkey.lib.commands import GoldkeyCommand
from items.services import gate_rejects_sentence, items_import_twist, release_import_twist


class Command(GoldkeyCommand):
    help = "Import TWIST Track B items (JSONL, v1 or v0 pilot schema), optionally with generation rejects."
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--license", default="", help="licence id to record, e.g. cc-by-4.0 (default: the benchmark's declared licence)")
        parser.add_argument("--item-set", help="item set name (default: derived from the file name)")
        parser.add_argument("--rejects", type=Path, help="generation rejects JSONL to keep with the item set")
        parser.add_argument("--conversations", type=Path, metavar="DIR",
                            help="the LoCoMo conversations the items cite (what import_locomo reads), imported with them in "
                            "one transaction: both or neither")
        parser.add_argument("--conversations-license", default="", metavar="LICENSE",
                            help="licence id to record for those conversations (default: LoCoMo's own, cc-by-nc-4.0)")

    def run(self, *, path, license="", item_set=None, rejects=None, conversations=None, conversations_license="",
            dry_run=False, **_):
        name = item_set or f"TWIST {path.stem}"
        if conversations is not None:
            return release_import_twist(
                path=path, conversations_path=conversations, item_set_name=name, rejects_path=rejects, license=license,
                conversations_license=conversations_license, dry_run=dry_run,
            ).as_dict()
        if conversations_license:
            raise CommandError("--conversations-license names the licence of the --conversations folder, which is not given")
        return items_import_twist(
            path=path, item_set_name=name, rejects_path=rejects, license=license, dry_run=dry_run
        ).as_dict()

    def summary(self, r):
        prefix = "Dry run: would import" if r["dry_run"] else "Imported"
        text = f"{prefix} {r['created']} item(s) into '{r['item_set']}'; {r['unchanged']} already present."
        if "conversations" in r:
            text += f" Conversations: {r['conversations']['created']} new, {r['conversations']['unchanged']} already present."
        if r["rejects_created"] or r["rejects_unchanged"]:
            text += f" Rejects: {r['rejects_created']} new, {r['rejects_unchanged']} already present."
        return text + gate_rejects_sentence(r["gate_rejects"])
