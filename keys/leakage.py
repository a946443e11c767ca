"""The shortcut-leakage audit of a key version (PROTOCOL §6): the figure that describes the benchmark,
run on the key's own items with their final gold, so it changes with errata."""

from council.leakage import TOP_TOKENS, LeakageRow, leakage_figures
from keys.models import GoldKey, KeyEntry


def key_leakage_audit(*, key: GoldKey, top: int = TOP_TOKENS) -> dict:
    rows = [
        LeakageRow(*values)
        for values in KeyEntry.objects.filter(key=key)
        .values_list("item__content__draft", "gold", "item__conversation__external_id", "item__batch")
        .order_by("external_id")
    ]
    return {"scope": "key", "key": {"version": key.version, "sha256": key.sha256}, **leakage_figures(rows, top=top)}
