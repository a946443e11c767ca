"""Lapse reads: the scorable outputs of a set and their scorer labels, how far the automatic scorers got,
and the scorer validation report of a gold campaign (cascade–gold, judge–gold and automatic-label–gold
agreement, binary and five-way, overall and per sampling tier, against the protocol's bars; sealed until
every disagreement is decided), computed by the one statistics module. The adjudication agreement page
shows `scorer_validation`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db.models import QuerySet

from adjudication.selectors import campaign_data, snapshot_from_data
from annotation.models import Campaign
from goldkey.errors import NotFound
from goldkey.lib import statistics as st
from items.models import Item, ItemSet
from lapse.cascade import BEHAVIOUR, TASK_OF_ARM
from lapse.judge import automatic_label
from lapse.models import Scorer, ScorerLabel
from lapse.validation import binary_label_agreement, detector_agreement
from protocols.lapse import BINARY, SPEC


def lapse_item_set(name: str) -> ItemSet:
    try:
        return ItemSet.objects.get(name=name, kind=SPEC.item_kind)
    except ItemSet.DoesNotExist:
        raise NotFound(f"no Lapse item set '{name}'") from None


def lapse_outputs(item_set: ItemSet) -> QuerySet[Item]:
    """Scorable items: model outputs (imported against a stimulus) and released battery/gold items —
    anything with a task arm — but not the stimuli themselves (they carry the rendered history)."""
    return _scorable(Item.objects.filter(item_set=item_set)).order_by("external_id")


def _scorable(items: QuerySet[Item]) -> QuerySet[Item]:
    return items.filter(content__hidden__has_key="arm").exclude(content__hidden__has_key="history")


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
    """Counts over the outputs of one set: scored, judged, auto-labelled, flagged, per label. Two queries.
    `by_auto_label` counts automatic labels (lapse.judge.automatic_label): "PROCEED" and "WITHHOLD" for
    behaviour outputs (binary), the cascade's own label for memory notes."""
    items = list(_scorable(Item.objects.filter(item_set__name=item_set_name, kind=SPEC.item_kind)).only("id", "content"))
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


# Where lapse_sample_create records the tier an item was sampled in (on the sample copy's record).
TIER_KEY = "sample_tier"
NO_TIER = (
    "no tier recorded: these items carry no sampling tier (the released gold trail gives tier sizes in "
    "its manifest but not which item came from which tier), so agreement is reported overall only"
)


def scorer_validation(campaign: Campaign) -> dict:
    """Cascade–gold, judge–gold and automatic-label–gold agreement on a Lapse campaign's gold (the
    label both annotators gave, else the adjudicated one), overall and per sampling tier, five-way and
    binary, each kappa with its verdict against the protocol's bars (protocols.lapse.DETECTOR_BARS:
    'pass', 'between', 'revise'). The automatic label is binary, so it has a binary figure only.

    Sealed (PROTOCOL §11): while any queued disagreement is undecided the report carries no detector
    figure at all — `sealed` is True, with the number still undecided. Cascade and judge labels are the
    items' scorer labels; judge labels fall back to the campaign's council votes (e.g. the released
    judge file). The tier is the one an item was sampled in (`hidden["sample_tier"]`, written by the
    sampler); items without one are reported as "no tier recorded". A constant number of queries."""
    if campaign.protocol != SPEC.name:
        return {"campaign": campaign.slug, "applicable": False}
    snapshot = snapshot_from_data(campaign_data(campaign))
    data = snapshot.data
    undecided = sum(1 for e in snapshot.queue if e.needs_decision)
    bars = SPEC.detector_bars
    report = {
        "campaign": campaign.slug,
        "applicable": True,
        "n_items": len(data.items),
        "undecided": undecided,
        "sealed": SPEC.detectors_sealed(undecided),
        "bars": {"passes": bars.passes, "revise": bars.revise, "between": bars.between},
        "binary_mapping": BINARY,
    }
    if report["sealed"]:
        return st.json_safe(report)
    gold = {item.id: label for item, label, _ in snapshot.retained}
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
    tier_of = dict(Item.objects.filter(item_set_id=campaign.item_set_id, content__hidden__has_key=TIER_KEY).values_list("id", f"content__hidden__{TIER_KEY}"))
    gold_ids = [i for i in ids if i in gold]
    tiers = sorted({tier_of[i] for i in gold_ids if tier_of.get(i)})
    seed = campaign.seed
    report.update(
        n_gold=len(gold_ids),
        gold_complete=len(gold_ids) == len(ids),
        judge_source=judge_source,
        tiers=tiers,
        tier_note="" if tiers else NO_TIER,
        untiered=sum(1 for i in gold_ids if not tier_of.get(i)),
    )

    def figures(name: str, by_id: dict, item_ids: list[int]) -> dict:
        gold_list, scorer = [gold[i] for i in item_ids], [by_id.get(i) for i in item_ids]
        if name == "auto_label":
            return binary_label_agreement(gold_list, scorer, seed=seed)
        return detector_agreement(gold_list, scorer, seed=seed)

    for name, by_id in (("cascade", cascade), ("judge", judge), ("auto_label", agreed)):
        present = sum(1 for i in gold_ids if by_id.get(i))
        if not present:
            report[name] = {"labelled": 0}
            continue
        by_tier = {tier: figures(name, by_id, [i for i in gold_ids if tier_of.get(i) == tier]) for tier in tiers}
        report[name] = {"labelled": present, **figures(name, by_id, gold_ids), "by_tier": by_tier}
    report["rows"] = [
        ("Rule cascade", report["cascade"]), ("LLM judge", report["judge"]), ("Automatic label (binary)", report["auto_label"])
    ]
    both = [i for i in gold_ids if cascade.get(i) and judge.get(i)]
    report["cascade_judge"] = {
        "n": len(both),
        "disagree": sum(1 for i in both if cascade[i] != judge[i]),
        "auto_label_coverage": (sum(1 for i in gold_ids if agreed[i]) / len(gold_ids)) if gold_ids else None,
    }
    return st.json_safe(report)
