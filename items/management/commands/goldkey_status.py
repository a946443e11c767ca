import protocols
from goldkey.lib.commands import GoldkeyCommand
from items.selectors import status_report


class Command(GoldkeyCommand):
    help = "Counts of conversations, turns and items (by kind, gold type and item set)."

    def run(self, **_):
        return status_report()

    def summary(self, r):
        lines = [
            f"{r['conversations']} conversations, {r['turns']} turns",
            "items by kind: " + ", ".join(f"{s.item_kind_label} {r['items'][s.item_kind]}" for s in protocols.specs()),
        ]
        lines += [f"  {k}: {v}" for k, v in r["items_by_type"].items()]
        lines += [f"item set '{k}': {v}" for k, v in r["item_sets"].items()]
        return "\n".join(lines)
