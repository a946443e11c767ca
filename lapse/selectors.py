"""Lapse reads: the scorable outputs of a set and their scorer labels, how far the automatic scorers got,
and the scorer validation report of a gold campaign (cascade–gold and judge–gold agreement, binary and
five-way), computed by the one statistics module. The adjudication agreement page shows
`scorer_validation`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db.models import QuerySet

from adjudication.selectors import campaign_data, retained_from_data
from annotation.models import Campaign, Protocol
from goldkey.errors import NotFound
from goldkey.lib import statistics as st
from items.models import Item, ItemKind, ItemSet
from lapse.cascade import BEHAVIOUR, TASK_OF_ARM
from lapse.judge import automatic_label
from lapse.models import Scorer, ScorerLabel
from protocols.lapse import BINARY, LABELS


def lapse_item_set(name: str) -> ItemSet:
    try:
        return ItemSet.objects.get(name=name, kind=ItemKind.LAPSE)
    except ItemSet.DoesNotExist:
        raise NotFound(f"no Lapse item set '{name}'") from None


def lapse_outputs(item_set: ItemSet) -> QuerySet[Item]:
    """Scorable items: model outputs (imported against a stimulus) and released battery/gold items —
    anything with a task arm — but not the stimuli themselves (they carry the rendered history)."""
    return _scorable(Item.objects.filter(item_set=item_set)).order_by("external_id")


def _scorable(items: QuerySet[Item]) -> QuerySet[Item]:
    return items.filter(hidden__has_key="arm").exclude(hidden__has_key="history")


def campaign_items_by_external_id(campaign: Campaign) -> dict[str, Item]:
    return {item.external_id: item for item in Item.objects.filter(item_set_id=campaign.item_set_id)}


def task_of(item: Item) -> str | None:
    return TASK_OF_ARM.get(item.hidden.get("arm", ""))


def scorer_labels(item_ids: Iterable[int]) -> dict[int, dict[str, ScorerLabel]]:
    """{item id: {scorer: its label row}} for the given items. One query."""
    by_item: dict[int, dict[str, ScorerLabel]] = {}
    for row in ScorerLabel.objects.filter(item_id__in=list(item_ids)):
        by_item.setdefault(row.item_id, {})[row.scorer] = row
    return by_item


def label_of(labels: dict[str, ScorerLabel] | None, scorer: str) -> str | None:
    row = (labels or {}).get(scorer)
    return row.label if row is not None else None


def item_automatic_label(item: Item, labels: dict[str, ScorerLabel] | None) -> tuple[str | None, bool]:
    """(automatic label, flagged) of one output from its scorer label rows (see lapse.judge.automatic_label)."""
    return automatic_label(
        task=task_of(item), cascade=label_of(labels, Scorer.CASCADE), judge=label_of(labels, Scorer.JUDGE)
    )


def scoring_summary(*, item_set_name: str) -> dict:
    """Counts over the outputs of one set: scored, judged, auto-labelled, flagged, per label. Two queries."""
    items = list(_scorable(Item.objects.filter(item_set__name=item_set_name, kind=ItemKind.LAPSE)).only("id", "hidden"))
    labels = scorer_labels(item.id for item in items)
    cascade = [label for item in items if (label := label_of(labels.get(item.id), Scorer.CASCADE))]
    judge = [label for item in items if (label := label_of(labels.get(item.id), Scorer.JUDGE))]
    automatic = [item_automatic_label(item, labels.get(item.id)) for item in items]
    return {
        "item_set": item_set_name,
        "outputs": len(items),
        "cascade_scored": len(cascade),
        "judged": len(judge),
        "auto_labelled": sum(1 for label, _ in automatic if label),
        "flagged": sum(1 for _, flagged in automatic if flagged),
        "by_cascade": dict(sorted(Counter(cascade).items())),
        "by_judge": dict(sorted(Counter(judge).items())),
        "by_auto_label": dict(sorted(Counter(label for label, _ in automatic if label).items())),
    }


def _pair_stats(gold: list, scorer: list, seed: int) -> dict:
    """Five-way (the five behaviour labels; anything else, e.g. RESIDUAL, is excluded and counted)
    and binary (the protocol's binary collapse) agreement of one scorer with gold."""
    five_gold, five_scorer, five_counts = st.eligible_pairs(gold, scorer, {label: label for label in LABELS})
    five = st.kappa_summary(five_gold, five_scorer, categories=LABELS, seed=seed)
    five.update(excluded=five_counts["excluded"], missing=five_counts["missing"])
    bin_gold, bin_scorer, bin_counts = st.eligible_pairs(gold, scorer, BINARY)
    binary = st.kappa_summary(bin_gold, bin_scorer, categories=("PROCEED", "WITHHOLD"), seed=seed)
    binary.update(excluded=bin_counts["excluded"], missing=bin_counts["missing"], mapping=BINARY)
    keep = ("n", "agree", "observed", "kappa", "ci95", "excluded", "missing", "confusion")
    return {"five_way": {k: five[k] for k in keep}, "binary": {k: binary[k] for k in (*keep, "mapping")}}


def scorer_validation(campaign: Campaign) -> dict:
    """Cascade–gold, judge–gold and automatic-label–gold agreement on a Lapse campaign's gold (the
    label both annotators gave, else the adjudicated one). Cascade and judge labels are the items'
    scorer labels; judge labels fall back to the campaign's council votes (e.g. the released judge
    file). A constant number of queries whatever the campaign size."""
    if campaign.protocol != Protocol.LAPSE:
        return {"campaign": campaign.slug, "applicable": False}
    data = campaign_data(campaign)
    gold = {item.id: label for item, label, _ in retained_from_data(data)}
    ids = [item.id for item in data.items]
    labels = scorer_labels(ids)
    cascade = {i: label_of(labels.get(i), Scorer.CASCADE) for i in ids}
    judge = {i: label_of(labels.get(i), Scorer.JUDGE) for i in ids}
    judge_source = "items"
    if not any(judge.values()):
        judge_source = "council votes"
        for item_id, ballots in data.council.items():
            for ballot in ballots:
                if ballot.values.get("label") and not judge.get(item_id):
                    judge[item_id] = ballot.values["label"]
    # Every gold item is a behaviour output, so the automatic label is the behaviour rule.
    agreed = {i: automatic_label(task=BEHAVIOUR, cascade=cascade[i], judge=judge.get(i))[0] for i in ids}
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
    for name, by_id in (("cascade", cascade), ("judge", judge), ("auto_label", agreed)):
        scorer = [by_id.get(i) for i in gold_ids]
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
