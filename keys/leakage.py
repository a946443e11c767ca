"""The shortcut-leakage audit of a key version (PROTOCOL §6): the figure that describes the benchmark,
run on the key's own items with their final gold, so it changes with errata. A key of a protocol that
declares the audit (`ProtocolSpec.leakage_audit`) records it in its manifest when it is frozen or derived,
and its release, datasheet, card and page show it from there."""

import protocols
from council.leakage import TOP_TOKENS, LeakageRow, leakage_figures
from goldkey.errors import ApplicationError
from keys.models import GoldKey, KeyEntry

METHOD = (
    "Draft-only multinomial Naive Bayes (add-one smoothing, lowercase word tokens), leave-one-conversation-out; "
    "balanced accuracy near 0.5 means the text alone does not give the gold away (PROTOCOL §6)."
)


def _figures(key: GoldKey, top: int) -> dict:
    audit = protocols.for_kind(key.kind).leakage_audit
    if audit is None:
        raise ApplicationError(f"key '{key.version}': its protocol declares no leakage audit")
    rows = [
        LeakageRow(*values)
        for values in KeyEntry.objects.filter(key=key)
        .values_list(f"item__content__{audit.text}", "gold", "item__conversation__external_id", "item__batch")
        .order_by("external_id")
    ]
    return {"field": audit.text, **leakage_figures(rows, positive=audit.positive, top=top)}


def key_leakage_audit(*, key: GoldKey, top: int = TOP_TOKENS) -> dict:
    return {"scope": "key", "key": {"version": key.version, "sha256": key.sha256}, **_figures(key, top)}


def key_leakage_record(*, key: GoldKey) -> dict | None:
    """What a key's manifest records of the audit when it is sealed (its entries written): the figures on
    its own entries, or why there are none (too few items, one conversation, one class: a freeze is never
    refused for it). None: the protocol declares no audit."""
    if protocols.for_kind(key.kind).leakage_audit is None:
        return None
    try:
        return {"computed": True, "method": METHOD, **_figures(key, TOP_TOKENS)}
    except ApplicationError as exc:
        return {"computed": False, "method": METHOD, "reason": exc.message}
