"""Agreement per campaign (PROTOCOL §3 and §9): reads only, from `CampaignData`, through the one
statistics module. The result is a plain JSON-ready dict: the page, the API and
`manage.py agreement --json` all show this same dict.
"""

import math
from collections import Counter, defaultdict

from django.conf import settings

from adjudication import queue as q
from adjudication.models import Action
from adjudication.selectors import CampaignData, campaign_data, queue_from_data, retained_from_data
from annotation import statistics as st
from annotation.models import Campaign, Protocol
from annotation.protocols import LAPSE_LABELS, TWIST_Q1

HISTORY_SPLIT = 620  # TWIST stratifies history length at 620 turns (PROTOCOL §1)
GOLD_TYPES = ("contradicting", "aligned", "hard_negative")
LAPSE_BINARY = {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}

MEANING_ALL = (
    "Raw agreement on all candidates: the reliability of the candidate-generation process "
    "(an unbiased estimate for it)."
)
MEANING_RETAINED = (
    "Agreement after quality filtering: computed on the kept set, conditioned on the adjudicated selection; "
    "not an independent reliability estimate of the frozen key."
)


def kappa_bar() -> float:
    return float(getattr(settings, "GOLDKEY_KAPPA_BAR", 0.8))


def _clean(value):
    """JSON has no NaN: undefined figures become null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _summary(a: list, b: list, *, seed: int, categories=None, full: bool = True) -> dict:
    result = st.kappa_summary(a, b, categories=categories, seed=seed)
    if not full:
        result = {k: result[k] for k in ("n", "left_out", "agree", "observed", "kappa", "ci95", "ci95_bootstrap")}
    return result


def _pairs(data: CampaignData, *keys: str) -> dict[str, dict[int, tuple]]:
    """key -> item id -> the first two annotators' values (None when missing), in one pass."""
    first, second = (data.pseudonyms + [None, None])[:2]
    out: dict[str, dict[int, tuple]] = {key: {} for key in keys}
    empty: dict = {}
    for item in data.items:
        per_item = data.answers.get(item.id, empty)
        a, b = per_item.get(first, empty), per_item.get(second, empty)
        for key in keys:
            out[key][item.id] = (a.get(key), b.get(key))
    return out


def _queue_summary(entries) -> dict:
    by_reason = Counter(r for e in entries for r in e.reasons)
    decided = [e for e in entries if e.decision is not None]
    return {
        "n": len(entries),
        "by_reason": dict(sorted(by_reason.items())),
        "by_suggestion": dict(sorted(Counter(e.suggestion for e in entries).items())),
        "decided": len(decided),
        "undecided": len(entries) - len(decided),
        "by_action": dict(sorted(Counter(e.decision.action for e in decided).items())),
    }


def twist_agreement(data: CampaignData) -> dict:
    seed = data.campaign.seed
    items = data.items
    all_pairs = _pairs(data, "q1", "q2", "q2quote")
    pairs = all_pairs["q1"]
    a = [pairs[i.id][0] for i in items]
    b = [pairs[i.id][1] for i in items]
    q1 = _summary(a, b, seed=seed, categories=TWIST_Q1)
    q1["meaning"] = MEANING_ALL
    q1["krippendorff_alpha"] = st.krippendorff_alpha_nominal([a, b])
    q1["fleiss_kappa"] = st.fleiss_kappa(list(zip(a, b, strict=True)))[0]

    by_type = {}
    for gold_type in GOLD_TYPES:
        sub = [i for i in items if i.gold_type == gold_type]
        if not sub:
            continue
        ta, tb = st.paired([pairs[i.id][0] for i in sub], [pairs[i.id][1] for i in sub])
        gold = q.GOLD_VERDICT[gold_type]
        by_type[gold_type] = {
            "agree": sum(x == y for x, y in zip(ta, tb, strict=True)),
            "n": len(ta),
            "items": len(sub),
            "both_match_gold": sum(x == y == gold for x, y in zip(ta, tb, strict=True)),
            **{k: v for k, v in _summary(ta, tb, seed=seed, full=False).items() if k in ("kappa", "ci95", "ci95_bootstrap")},
        }
    q1["by_gold_type"] = by_type

    contradicting = [i for i in items if i.gold_type == "contradicting"]
    evidence = {}
    q2_pairs = all_pairs["q2"]
    for key, key_pairs in (("q2", q2_pairs), ("q2quote", all_pairs["q2quote"])):
        ea, eb = st.paired([key_pairs[i.id][0] for i in contradicting], [key_pairs[i.id][1] for i in contradicting])
        evidence[key] = {
            "agree": sum(x == y for x, y in zip(ea, eb, strict=True)),
            "n": len(ea),
            "kappa": st.cohen_kappa(ea, eb),
            "both_no": sum(x == y == "no" for x, y in zip(ea, eb, strict=True)),
        }

    batch_items: dict[str, Counter] = defaultdict(Counter)
    for item in items:
        batch_items[item.batch][item.gold_type] += 1
    not_self_contained = Counter(
        i.batch for i in contradicting if q2_pairs[i.id] == ("no", "no")
    )
    by_batch = {
        batch: {
            "both_not_self_contained": not_self_contained.get(batch, 0),
            "items": sum(types.values()),
            "contradicting_only": set(types) == {"contradicting"},
        }
        for batch, types in sorted(batch_items.items())
    }

    def stratum(subset) -> dict:
        sa, sb = [pairs[i.id][0] for i in subset], [pairs[i.id][1] for i in subset]
        return _summary(sa, sb, seed=seed, full=False) | {"items": len(subset)}

    history = {
        f"<{HISTORY_SPLIT}": [i for i in items if i.history_turns is not None and i.history_turns < HISTORY_SPLIT],
        f">={HISTORY_SPLIT}": [i for i in items if i.history_turns is not None and i.history_turns >= HISTORY_SPLIT],
    }
    families: dict[str, list] = defaultdict(list)
    for item in items:
        families[item.family or "(none)"].append(item)

    entries = queue_from_data(data)
    result = {
        "campaign": data.campaign.slug,
        "protocol": Protocol.TWIST_B.value,
        "annotators": data.pseudonyms[:2],
        "n_items": len(items),
        "q1": q1,
        "q2": evidence["q2"],
        "q2quote": evidence["q2quote"],
        "not_self_contained": {
            "n": sum(not_self_contained.values()),
            "from_contradicting_only_batches": sum(
                n for batch, n in not_self_contained.items() if by_batch[batch]["contradicting_only"]
            ),
            "by_batch": by_batch,
        },
        "strata": {
            "history": {name: stratum(subset) for name, subset in history.items()},
            "family": {name: stratum(subset) for name, subset in sorted(families.items())},
        },
        "queue": _queue_summary(entries),
        "retained": twist_retained(data, entries, q1_pairs=pairs),
    }
    return _clean(result)


def twist_retained(data: CampaignData, entries, *, q1_pairs: dict | None = None) -> dict:
    undecided = sum(1 for e in entries if e.decision is None)
    bar = kappa_bar()
    result = {
        "complete": undecided == 0,
        "undecided": undecided,
        "n": None,
        "by_type": {},
        "dropped": {"n": None, "by_type": {}},
        "relabelled": None,
        "kappa": None,
        "ci95": None,
        "ci95_bootstrap": None,
        "agree": None,
        "gold_agreement": {},
        "gold_agreement_detail": {},
        "bar": bar,
        "passes": None,
        "meaning": MEANING_RETAINED,
    }
    if undecided:
        return result
    retained = retained_from_data(data, queued={e.item.id for e in entries})
    q1_pairs = q1_pairs or _pairs(data, "q1")["q1"]
    dropped = [d for d in data.decisions.values() if d.action == Action.DROP]
    types = {i.id: i.gold_type for i in data.items}
    kept_a, kept_b = [], []
    gold_agree: dict[str, list[int]] = {p: [0, 0] for p in data.pseudonyms[:2]}
    for item, final_gold, _how in retained:
        x, y = q1_pairs[item.id]
        kept_a.append(x)
        kept_b.append(y)
        verdict = q.GOLD_VERDICT.get(final_gold, "")
        for pseudonym, label in zip(data.pseudonyms[:2], (x, y), strict=False):
            if label is not None:
                gold_agree[pseudonym][1] += 1
                gold_agree[pseudonym][0] += label == verdict
    summary = _summary(kept_a, kept_b, seed=data.campaign.seed, categories=TWIST_Q1)
    result.update(
        {
            "n": len(retained),
            "by_type": {t: n for t in GOLD_TYPES if (n := sum(1 for _, g, _ in retained if g == t))},
            "by_how": dict(sorted(Counter(how for _, _, how in retained).items())),
            "dropped": {
                "n": len(dropped),
                "by_type": {t: n for t in GOLD_TYPES if (n := sum(1 for d in dropped if types.get(d.item_id) == t))},
            },
            "relabelled": sum(1 for _, _, how in retained if how == "relabelled"),
            "kappa": summary["kappa"],
            "ci95": summary["ci95"],
            "ci95_bootstrap": summary["ci95_bootstrap"],
            "agree": summary["agree"],
            "kappa_n": summary["n"],
            "confusion": summary["confusion"],
            "gold_agreement": {p: v[0] for p, v in gold_agree.items()},
            "gold_agreement_detail": {
                p: {"agree": v[0], "n": v[1], "rate": v[0] / v[1] if v[1] else None} for p, v in gold_agree.items()
            },
            "passes": summary["kappa"] >= bar if not math.isnan(summary["kappa"]) else False,
        }
    )
    return result


def _lapse_pair_stats(a: list, b: list, seed: int) -> dict:
    five = _summary(a, b, seed=seed, categories=LAPSE_LABELS)
    ba, bb, counts = st.eligible_pairs(a, b, LAPSE_BINARY)
    binary = _summary(ba, bb, seed=seed, categories=("PROCEED", "WITHHOLD"))
    binary.update({"excluded": counts["excluded"], "missing": counts["missing"], "mapping": LAPSE_BINARY})
    return {"five_way": five, "binary": binary}


def lapse_agreement(data: CampaignData) -> dict:
    seed = data.campaign.seed
    items = data.items
    label_pairs = _pairs(data, "label")["label"]
    a, b = [label_pairs[i.id][0] for i in items], [label_pairs[i.id][1] for i in items]
    human = _lapse_pair_stats(a, b, seed)
    human["five_way"]["krippendorff_alpha"] = st.krippendorff_alpha_nominal([a, b])
    entries = queue_from_data(data)
    retained = retained_from_data(data, queued={e.item.id for e in entries})
    gold = {item.id: label for item, label, _ in retained}
    judges: dict[str, dict[int, str]] = defaultdict(dict)
    for item_id, ballots in data.council.items():
        for ballot in ballots:
            if ballot.values.get("label"):
                judges[ballot.member][item_id] = ballot.values["label"]
    by_judge = {}
    for name, labels in sorted(judges.items()):
        ids = [i.id for i in items if i.id in gold and i.id in labels]
        stats = _lapse_pair_stats([gold[i] for i in ids], [labels[i] for i in ids], seed)
        by_judge[name] = {"judge": name, "items": len(ids), **stats}
    undecided = sum(1 for e in entries if e.decision is None)
    result = {
        "campaign": data.campaign.slug,
        "protocol": Protocol.LAPSE.value,
        "annotators": data.pseudonyms[:2],
        "n_items": len(items),
        "five_way": human["five_way"],
        "binary": human["binary"],
        "queue": _queue_summary(entries),
        "gold": {
            "complete": undecided == 0,
            "undecided": undecided,
            "n": len(gold),
            "by_label": dict(sorted(Counter(gold.values()).items())),
            "by_how": dict(sorted(Counter(how for _, _, how in retained).items())),
            "rule": "the label both annotators gave, else the adjudicated label",
        },
        "judge_gold": next(iter(by_judge.values()), None),
        "judge_gold_by_judge": by_judge,
    }
    return _clean(result)


def campaign_agreement(campaign: Campaign, *, data: CampaignData | None = None) -> dict:
    data = data or campaign_data(campaign)
    if campaign.protocol == Protocol.LAPSE:
        return lapse_agreement(data)
    return twist_agreement(data)
