"""TWIST Track C's verification-as-seen gate (TWIST §4.3 rule 2; docs/twist_c.md): a council member reads only
the dated standalone steps of each chain, in a fixed shuffled order (`protocols.twist_c.chain.verification_prompt`:
no family, values, question, gold or id), and must recover the relation, the order and the current value. It
runs on every family. A miss is a blocking verdict: the item is kept for audit, no campaign takes it, no key
holds it and the release ships it as a reject with the reasons. The chain's deterministic gates ran at import
(`chains.importer`)."""

from django.db.models import Prefetch

from council.gates import verdicts_store, verifier_reply
from council.models import CouncilMember, GateVerdict
from items.models import Evidence, Item, ItemSet
from protocols.twist_c import SPEC
from protocols.twist_c import chain as tc

GATE = "chain_verification"


def chain_items_query(item_set: ItemSet):
    """The items of a Track C set with what their chains read (three queries when evaluated)."""
    return Item.objects.filter(item_set=item_set).select_related("conversation__version_of").prefetch_related(
        Prefetch("evidence", queryset=Evidence.objects.filter(role=tc.STEP_ROLE).select_related("turn__session"))
    ).order_by("external_id")


def chain_items(item_set: ItemSet) -> list[tuple[Item, tc.ChainItem]]:
    """Every item of a Track C set with its chain as the import line gave it (three queries)."""
    return [(item, chain_of(item)) for item in chain_items_query(item_set)]


def chain_of(item: Item, *, frozen: dict | None = None) -> tc.ChainItem:
    """One stored item's chain (its step citations prefetched, in chain order); `frozen`: content values a key
    entry froze, read over the item's live ones."""
    version = item.conversation
    return tc.chain_item(
        external_id=item.external_id, family=item.family,
        conversation=(version.version_of or version).external_id if version else "",
        conversation_version=version.external_id if version else "",
        content={**SPEC.content_of(item), **(frozen or {})},
        cited=[{"turn_id": ev.turn.dia_id, "date": ev.turn.session.date_time_raw, "speaker": ev.turn.speaker,
                "text": ev.turn.text} for ev in sorted(item.evidence.all(), key=lambda ev: ev.position)],
    )


def chain_verification_run(*, item_set_id: int, llm_member_id: int) -> dict:
    """The verification-as-seen gate on every item of a Track C set through one council member; one stored
    verdict per item (replaced on a re-run), each naming the prompt version it was asked with."""
    item_set = ItemSet.objects.get(pk=item_set_id)
    member = CouncilMember.objects.get(pk=llm_member_id)
    verdicts = []
    by_family: dict[str, dict[str, int]] = {}
    for item, chain in chain_items(item_set):
        prompt, shown = tc.verification_prompt(chain)
        verdict, reply, failure = verifier_reply(member, [{"role": "user", "content": prompt}], tc.parse_verification)
        reasons = [failure] if verdict is None else tc.gate_verification(chain, shown, reply)
        verdicts.append(GateVerdict(
            item_set=item_set, item=item, gate=GATE, passed=not reasons, blocking=True,
            detail=f"{tc.VERIFY_PROMPT_VERSION}: " + ("; ".join(reasons) if reasons else "relation, order and current value recovered"),
        ))
        counts = by_family.setdefault(item.family, {"checked": 0, "rejected": 0})
        counts["checked"] += 1
        counts["rejected"] += bool(reasons)
    verdicts_store(item_set=item_set, verdicts=verdicts, gates=(GATE,))
    rejected = sum(not v.passed for v in verdicts)
    return {
        "item_set": item_set.name, "llm": member.name, "prompt_version": tc.VERIFY_PROMPT_VERSION,
        "checked": len(verdicts), "rejected": rejected, "by_family": by_family,
        # the summary every gate run gives (council.gates.gates_run), for the gates page and `gates_run`
        "passed": len(verdicts) - rejected, "rejected_by_gate": {GATE: rejected}, "warnings": {},
    }
