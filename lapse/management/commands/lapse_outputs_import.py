from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from lapse.corpus import lapse_outputs_import


class Command(GoldkeyCommand):
    help = (
        "Import Lapse model outputs (JSONL: case_id, model, response) as output items linked to their "
        "stimulus, all-or-nothing."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--item-set", default="Lapse outputs", help="item set for the outputs")
        parser.add_argument("--stimuli", default="", help="stimulus item set (needed only if ids are ambiguous)")

    def run(self, *, path, item_set, stimuli, dry_run=False, **_):
        return lapse_outputs_import(path=path, item_set_name=item_set, stimuli_item_set=stimuli, dry_run=dry_run)

    def summary(self, r):
        verb = "Would import" if r["dry_run"] else "Imported"
        return f"{verb} {r['created']} output(s) into '{r['item_set']}'; {r['unchanged']} already present."
