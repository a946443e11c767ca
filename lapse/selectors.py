"""Lapse scoring reads: how far the automatic scorers got on a set of outputs, and the scorer
validation report of a gold campaign (cascade–gold and judge–gold agreement, binary and five-way),
computed by the one statistics module. The adjudication agreement page shows `scorer_validation`.
"""

from __future__ import annotations

from collections import Counter

from annotation.models import Campaign, Protocol
from goldkey.lib import statistics as st
from items.models import Item, ItemKind
from protocols.lapse import LABELS as LAPSE_LABELS

# PROTOCOL §9 binary outcome: PROCEED vs withholding; caveat and confabulation are excluded.
BINARY = {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}




def scoring_summary(*, item_set_name: str) -> dict:
    """Counts over the outputs of one set: scored, judged, auto-labelled, flagged, per label. Two queries."""
    rows = list(
        Item.objects.filter(item_set__name=item_set_name, kind=ItemKind.LAPSE, hidden__has_key="arm")
        .exclude(hidden__has_key="history")
        .values_list("hidden", flat=True)
    )
    return {
        "item_set": item_set_name,
        "outputs": len(rows),
        "cascade_scored": sum(1 for h in rows if h.get("cascade")),
        "judged": sum(1 for h in rows if h.get("judge")),
        "auto_labelled": sum(1 for h in rows if h.get("auto_label")),
        "flagged": sum(1 for h in rows if h.get("flagged")),
        "by_cascade": dict(sorted(Counter(h["cascade"] for h in rows if h.get("cascade")).items())),
        "by_judge": dict(sorted(Counter(h["judge"] for h in rows if h.get("judge")).items())),
        "by_auto_label": dict(sorted(Counter(h["auto_label"] for h in rows if h.get("auto_label")).items())),
    }


def _pair_stats(gold: list, scorer: list, seed: int) -> dict:
    """Five-way (the five behaviour labels; anything else, e.g. RESIDUAL, is excluded and counted)
    and binary (PROCEED vs HEDGE/TEMPLATE) agreement of one scorer with gold."""
    five_gold, five_scorer, five_counts = st.eligible_pairs(gold, scorer, {label: label for label in LAPSE_LABELS})
    five = st.kappa_summary(five_gold, five_scorer, categories=LAPSE_LABELS, seed=seed)
    five.update(excluded=five_counts["excluded"], missing=five_counts["missing"])
    bin_gold, bin_scorer, bin_counts = st.eligible_pairs(gold, scorer, BINARY)
    binary = st.kappa_summary(bin_gold, bin_scorer, categories=("PROCEED", "WITHHOLD"), seed=seed)
    binary.update(excluded=bin_counts["excluded"], missing=bin_counts["missing"], mapping=BINARY)
    keep = ("n", "agree", "observed", "kappa", "ci95", "excluded", "missing", "confusion")
    return {"five_way": {k: five[k] for k in (*keep,)}, "binary": {k: binary[k] for k in (*keep, "mapping")}}


def scorer_validation(campaign: Campaign) -> dict:
    """Cascade–gold, judge–gold and agreed-automatic-label–gold agreement on a Lapse campaign's gold
    (the label both annotators gave, else the adjudicated one). Cascade and judge labels come from
    the items' hidden scoring fields; judge labels fall back to the campaign's council votes (e.g.
    the released judge file). A constant number of queries whatever the campaign size."""
    from adjudication.selectors import campaign_data, retained_from_data  # agreement reads live there

    if campaign.protocol != Protocol.LAPSE:
        return {"campaign": campaign.slug, "applicable": False}
    data = campaign_data(campaign)
    gold = {item.id: label for item, label, _ in retained_from_data(data)}
    hidden = dict(Item.objects.filter(id__in=[i.id for i in data.items]).values_list("id", "hidden"))
    ids = [item.id for item in data.items]
    cascade = {i: (hidden.get(i) or {}).get("cascade") for i in ids}
    judge = {i: (hidden.get(i) or {}).get("judge") for i in ids}
    judge_source = "items"
    if not any(judge.values()):
        judge_source = "council votes"
        for item_id, ballots in data.council.items():
            for ballot in ballots:
                if ballot.values.get("label") and not judge.get(item_id):
                    judge[item_id] = ballot.values["label"]
    agreed = {i: cascade[i] if cascade[i] and cascade[i] == judge.get(i) else None for i in ids}
    gold_ids = [i for i in ids if i in gold]
    gold_list = [gold[i] for i in gold_ids]
    seed = campaign.seed
    report = {
        "campaign": campaign.slug,
        "applicable": True,
        "n_items": len(ids),
        "n_gold": len(gold_ids),
        "gold_complete": len(gold_ids) == len(ids),
        "judge_source": judge_source,
        "binary_mapping": BINARY,
    }
    for name, labels in (("cascade", cascade), ("judge", judge), ("auto_label", agreed)):
        scorer = [labels.get(i) for i in gold_ids]
        present = sum(1 for label in scorer if label)
        report[name] = {"labelled": present, **(_pair_stats(gold_list, scorer, seed) if present else {})}
    report["rows"] = [
        ("Rule cascade", report["cascade"]), ("LLM judge", report["judge"]), ("Agreed automatic label", report["auto_label"])
    ]
    both = [i for i in gold_ids if cascade.get(i) and judge.get(i)]
    report["cascade_judge"] = {
        "n": len(both),
        "disagree": sum(1 for i in both if cascade[i] != judge[i]),
        "auto_label_coverage": (sum(1 for i in gold_ids if agreed[i]) / len(gold_ids)) if gold_ids else None,
    }
    return st.json_safe(report)
