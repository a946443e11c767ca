"""What a gold key is made from: the campaign's decided queue.

The adjudication queue and the retained set belong to adjudication/queue.py and
adjudication/selectors.py (the adjudication engineer's modules). Until those are on this branch, a
minimal reading of the same contract (PROTOCOL.md §3) stands in, so that keys can be frozen and
tested; once they are present they are used and the fallback below is dead code to delete.

Contract used:
    undecided_items(campaign) -> iterable of Item           (queued, no decision yet)
    retained_items(campaign)  -> list[(Item, final_gold, how)]
"""

from collections import defaultdict

from adjudication.models import Action, Decision
from annotation.models import Answer, Campaign, Protocol
from annotation.protocols import PRIMARY_KEY
from items.models import GOLD_VERDICT, GoldType, Item

try:  # the adjudication engineer's selectors (branch `adj`)
    from adjudication.selectors import retained_items as _adj_retained_items
    from adjudication.selectors import undecided_items as _adj_undecided_items
except ImportError:  # pragma: no cover - depends on merge state
    _adj_retained_items = _adj_undecided_items = None


def _answers_by_item(campaign: Campaign) -> dict[int, list[dict]]:
    rows = Answer.objects.filter(assignment__enrollment__campaign=campaign).values_list(
        "assignment__item_id", "assignment__enrollment__pseudonym", "values"
    )
    by_item: dict[int, list[tuple[str, dict]]] = defaultdict(list)
    for item_id, pseudonym, values in rows:
        by_item[item_id].append((pseudonym, values))
    return {item_id: [v for _, v in sorted(answers, key=lambda x: x[0])] for item_id, answers in by_item.items()}


def queue_reasons(campaign: Campaign, items: list[Item]) -> dict[int, list[str]]:
    """PROTOCOL.md §3: every reason that applies, per queued item id (fallback implementation)."""
    answers = _answers_by_item(campaign)
    key = PRIMARY_KEY[campaign.protocol]
    reasons: dict[int, list[str]] = {}
    for item in items:
        given = answers.get(item.pk, [])
        primary = [a.get(key) or None for a in given]
        found = []
        if len(primary) < campaign.per_item or any(p is None for p in primary):
            found.append("missing_answers")
        present = [p for p in primary if p is not None]
        if len(set(present)) > 1:
            found.append("q1_disagreement" if key == "q1" else "label_disagreement")
        if campaign.protocol == Protocol.TWIST_B:
            verdict = GOLD_VERDICT.get(item.gold_type, "")
            if len(present) >= 2 and len(set(present)) == 1 and present[0] != verdict:
                found.append("q1_agreed_against_gold")
            if item.gold_type == GoldType.CONTRADICTING:
                if any(a.get("q2") == "no" for a in given):
                    found.append("q2_not_self_contained")
                if any(a.get("q2quote") == "no" for a in given):
                    found.append("q2_quote_wrong")
            elif any(a.get("q3") == "conflict" for a in given):
                found.append("q3_uncited_conflict")
        if found:
            reasons[item.pk] = found
    return reasons


def _agreed_label(campaign: Campaign, item: Item, answers: dict[int, list[dict]]) -> str:
    labels = {a.get("label") for a in answers.get(item.pk, [])}
    return labels.pop() if len(labels) == 1 else ""


def _fallback(campaign: Campaign) -> tuple[list[Item], list[tuple[Item, str, str]]]:
    items = list(Item.objects.filter(item_set=campaign.item_set).order_by("external_id"))
    reasons = queue_reasons(campaign, items)
    decisions = {d.item_id: d for d in Decision.objects.filter(campaign=campaign)}
    answers = _answers_by_item(campaign) if campaign.protocol == Protocol.LAPSE else {}
    undecided, retained = [], []
    for item in items:
        decision = decisions.get(item.pk)
        if item.pk in reasons and decision is None:
            undecided.append(item)
            continue
        if decision is not None and decision.action == Action.DROP:
            continue
        if decision is not None and decision.action == Action.RELABEL:
            retained.append((item, decision.new_gold, "relabelled"))
            continue
        if campaign.protocol == Protocol.TWIST_B:
            gold = item.gold_type
        else:
            gold = _agreed_label(campaign, item, answers)
        how = "kept_after_adjudication" if item.pk in reasons else "kept_unanimous"
        retained.append((item, gold, how))
    return undecided, retained


def undecided_items(campaign: Campaign) -> list[Item]:
    if _adj_undecided_items is not None:
        return list(_adj_undecided_items(campaign))
    return _fallback(campaign)[0]


def retained_items(campaign: Campaign) -> list[tuple[Item, str, str]]:
    if _adj_retained_items is not None:
        return list(_adj_retained_items(campaign))
    return _fallback(campaign)[1]
