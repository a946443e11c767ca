"""Agreement per campaign (PROTOCOL §3 and §9): reads only, from a `CampaignSnapshot` (the loaded
campaign with its queue and retained set, each built once), through the one statistics module. The
protocol's spec names the figure set (`ProtocolSpec.agreement_figures`) and supplies the labels, gold
verdicts and binary collapse. The result is a plain JSON-ready dict: the page, the API and
`manage.py agreement --json` all show this same dict.
"""

import math
from collections import Counter, defaultdict

from django.conf import settings

from adjudication.models import Action
from adjudication.selectors import (
    CampaignData,
    CampaignSnapshot,
    blocking_ids,
    campaign_data,
    collector_paused,
    retained_from_data,
    snapshot_from_data,
)
from annotation.models import Campaign
from goldkey.lib import statistics as st

HISTORY_SPLIT = 620  # TWIST stratifies history length at 620 turns (PROTOCOL §1)

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


def _summary(a: list, b: list, *, seed: int, categories=None, full: bool = True) -> dict:
    result = st.kappa_summary(a, b, categories=categories, seed=seed)
    if not full:
        result = {k: result[k] for k in ("n", "left_out", "agree", "observed", "kappa", "ci95", "ci95_bootstrap")}
    return result


def _pairs(data: CampaignData, *keys: str) -> dict[str, dict[int, tuple]]:
    """key -> item id -> (first, second) annotator's value (None when missing), in one pass. "First" and
    "second" are the item's own two annotators in pseudonym order, so a campaign that rotates more
    annotators over the items (per_item 2 of 3+) pairs each item's actual raters."""
    out: dict[str, dict[int, tuple]] = {key: {} for key in keys}
    empty: dict = {}
    pseudonyms = data.pseudonyms
    for item in data.items:
        per_item = data.answers.get(item.id, empty)
        if len(per_item) == 2 and len(pseudonyms) == 2:
            a, b = per_item.get(pseudonyms[0], empty), per_item.get(pseudonyms[1], empty)
        else:
            raters = [per_item[p] for p in pseudonyms if p in per_item] + [empty, empty]
            a, b = raters[0], raters[1]
        for key in keys:
            out[key][item.id] = (a.get(key), b.get(key))
    return out


def _many_raters(data: CampaignData) -> bool:
    """More than two annotators: the item's two raters differ from item to item, so no single Cohen's
    kappa describes the campaign (its two "raters" would be a mixture of people). The campaign's kappa
    is then Fleiss' (raters exchangeable per item), and Cohen's kappa is reported per actual pair."""
    return len(data.pseudonyms) > 2


UNPOOLED = {"se": float("nan"), "ci95": [float("nan"), float("nan")]}


def _profiles(data: CampaignData, key: str) -> list[tuple]:
    """Per item (in data.items order), every annotator's label in pseudonym order (None: not assigned
    to the item, or not answered): one pass, from which every many-rater figure is counted."""
    empty: dict = {}
    pseudonyms = data.pseudonyms
    out = []
    for item in data.items:
        per_item = data.answers.get(item.id, empty)
        out.append(tuple([(per_item.get(p) or empty).get(key) for p in pseudonyms]))
    return out


def _fleiss_in_place(section: dict, fleiss: dict) -> None:
    """Put Fleiss' kappa (with its bootstrap interval) where a two-annotator campaign has Cohen's; the
    analytic interval is Cohen's own and is left undefined."""
    section.update(UNPOOLED, kappa=fleiss["kappa"], ci95_bootstrap=fleiss["ci95_bootstrap"], statistic="fleiss",
                   kappa_n=fleiss["n"])


def _fleiss_of(data: CampaignData, profiles: list[tuple], *, only: set[int] | None = None, mapping=None) -> dict:
    """Fleiss' kappa over the items' profiles (those in `only`), labels mapped through `mapping` if given
    (a label outside it leaves its item out, as in the two-annotator binary figure)."""
    rows = profiles if only is None else [p for item, p in zip(data.items, profiles, strict=True) if item.id in only]
    counted = Counter(rows)
    if mapping is not None:  # an unmapped label becomes missing: its item has fewer ratings and is left out
        mapped: Counter = Counter()
        for profile, n in counted.items():
            mapped[tuple(mapping.get(x) if x is not None else None for x in profile)] += n
        counted = mapped
    return st.fleiss_summary_from_profiles(counted, len(data.pseudonyms), seed=data.campaign.seed)


def _unpooled(section: dict) -> dict:
    """A subset's folded-pair Cohen's kappa is not reported for more than two annotators."""
    section.update(UNPOOLED, kappa=float("nan"), ci95_bootstrap=[float("nan"), float("nan")])
    return section


def rater_figures(data: CampaignData, profiles: list[tuple], gold: dict[int, str], *, gold_complete: bool) -> dict:
    """Per annotator and per pair, from the answers (`_profiles`) and the adjudicated gold (item id -> the
    label an answer agrees with): Fleiss' kappa and Krippendorff's alpha over every annotator, Cohen's
    kappa per pair on the items the two share, and each annotator against the gold (kappa and % agreement)."""
    table = Counter(p + (gold.get(item.id),) for item, p in zip(data.items, profiles, strict=True))
    figures = st.many_rater_summary(table, data.pseudonyms, reference=True, seed=data.campaign.seed)
    return {
        "annotators": len(data.pseudonyms),
        "statistic": "fleiss" if _many_raters(data) else "cohen",
        "fleiss": figures["fleiss"],
        "krippendorff_alpha": figures["krippendorff_alpha"],
        "pairs": figures["pairs"],
        "gold": {"complete": gold_complete, "n": len(gold), "by_annotator": figures["reference"]},
    }


def _many_rater_headline(section: dict, raters: dict) -> None:
    """The campaign's kappa with more than two annotators: Fleiss' (and alpha) from the rater figures."""
    _fleiss_in_place(section, raters["fleiss"])
    section.update(krippendorff_alpha=raters["krippendorff_alpha"]["alpha"], fleiss_kappa=raters["fleiss"]["kappa"],
                   fleiss_n=raters["fleiss"]["n"])


def _two_rater_stats(a: list, b: list) -> dict:
    """Krippendorff's alpha and Fleiss' kappa of a two-annotator campaign (the pair lists are the raters)."""
    fleiss, fleiss_n = st.fleiss_kappa(list(zip(a, b, strict=True)))
    return {"krippendorff_alpha": st.krippendorff_alpha_nominal([a, b]), "fleiss_kappa": fleiss, "fleiss_n": fleiss_n}


def _queue_summary(entries) -> dict:
    by_reason = Counter(r for e in entries for r in e.reasons)
    decided = [e for e in entries if e.decision is not None]
    return {
        "n": len(entries),
        "by_reason": dict(sorted(by_reason.items())),
        "by_suggestion": dict(sorted(Counter(e.suggestion for e in entries).items())),
        "decided": len(decided),
        "undecided": sum(1 for e in entries if e.needs_decision),
        "triage_only_undecided": sum(1 for e in entries if e.decision is None and not e.blocking),
        "by_action": dict(sorted(Counter(e.decision.action for e in decided).items())),
    }


def _history_bucket(turns: int | None) -> str | None:
    if turns is None:
        return None
    return f"<{HISTORY_SPLIT}" if turns < HISTORY_SPLIT else f">={HISTORY_SPLIT}"


def _marginal(cells: Counter, position: int, value=None) -> Counter:
    """Sum the cell table down to {(q1_a, q1_b): n}, over all cells or those whose `position` is `value`."""
    out: Counter = Counter()
    for key, n in cells.items():
        if value is None or key[position] == value:
            out[key[0]] += n
    return out


def _answer_pairs(a, b, primary: str) -> tuple:
    """The (primary, q2, q2quote) pairs of two answers: the plain path of _verdict_cells."""
    return (a.get(primary), b.get(primary)), (a.get("q2"), b.get("q2")), (a.get("q2quote"), b.get("q2quote"))


def _verdict_cells(data: CampaignData, pairs: dict[int, tuple]):
    """Per item, its cell key (see gold_verdict_agreement); fills `pairs` (item id -> the primary answer
    pair) on the way. The answer pairs are built once per distinct pair of answers: the answers are
    the read-only AnswerValues campaign_data shares per value combination and `data` keeps alive, so
    equal ids are the same unchanged values (tests/adjudication/test_snapshot.py compares the plain path)."""
    empty: dict = {}
    pseudonyms = data.pseudonyms
    two = len(pseudonyms) == 2
    primary = data.spec.primary_key
    memo: dict[tuple[int, int], tuple] = {}
    for item in data.items:
        per_item = data.answers.get(item.id, empty)
        if two and len(per_item) == 2:
            a, b = per_item.get(pseudonyms[0], empty), per_item.get(pseudonyms[1], empty)
        else:
            raters = [per_item[p] for p in pseudonyms if p in per_item] + [empty, empty]
            a, b = raters[0], raters[1]
        found = memo.get((id(a), id(b)))
        if found is None:
            found = memo[(id(a), id(b))] = _answer_pairs(a, b, primary)
        pair, q2, quote = found
        pairs[item.id] = pair
        yield (pair, item.gold_label, _history_bucket(item.history_turns), item.family or "(none)", item.batch, q2, quote)


def gold_verdict_agreement(snapshot: CampaignSnapshot) -> dict:
    """The primary answer (TWIST q1) against the item's gold verdict: kappa on all candidates, by gold
    type, the evidence questions on contradicting items, batches, strata, the queue and the retained set."""
    data = snapshot.data
    spec = data.spec
    seed = data.campaign.seed
    items = data.items
    # One pass over the items into a small table: (q1 pair, gold type, history bucket, family, batch,
    # q2 pair, q2quote pair) -> count. Every figure below is a sum over this table, not another pass
    # over 100,000 items. The q1 pair per item is kept for the retained set.
    pairs: dict[int, tuple] = {}
    cells = Counter(_verdict_cells(data, pairs))
    GOLD, HISTORY, FAMILY, BATCH, Q2, Q2QUOTE = 1, 2, 3, 4, 5, 6

    def summary(sub: Counter, *, full: bool = False, categories=None) -> dict:
        result = st.kappa_summary_from_pairs(sub, categories=categories, seed=seed)
        if not full:
            result = {k: result[k] for k in ("n", "left_out", "agree", "observed", "kappa", "ci95", "ci95_bootstrap")}
        return result

    everything = _marginal(cells, 0)
    q1 = summary(everything, full=True, categories=spec.primary_choices)
    q1["meaning"] = MEANING_ALL
    many = _many_raters(data)
    entries = snapshot.queue
    queue = _queue_summary(entries)
    profiles = raters = None
    if not many:
        fleiss, fleiss_n = st.fleiss_kappa_from_pairs(everything)
        q1.update(krippendorff_alpha=st.krippendorff_alpha_from_pairs(everything), fleiss_kappa=fleiss, fleiss_n=fleiss_n)
    else:
        profiles = _profiles(data, spec.primary_key)
        complete = not queue["undecided"]
        gold = {item.id: spec.verdict_of(final) for item, final, _ in snapshot.retained} if complete else {}
        raters = rater_figures(data, profiles, gold, gold_complete=complete)
        _many_rater_headline(q1, raters)

    by_type = {}
    for gold_type in spec.gold_values:
        sub = _marginal(cells, GOLD, gold_type)
        if not sub:
            continue
        stats = summary(sub)
        gold = spec.verdict_of(gold_type)
        by_type[gold_type] = {
            "agree": stats["agree"],
            "n": stats["n"],
            "items": sum(sub.values()),
            "both_match_gold": sub.get((gold, gold), 0),
            "kappa": stats["kappa"],
            "ci95": stats["ci95"],
            "ci95_bootstrap": stats["ci95_bootstrap"],
        }
        if many:
            _unpooled(by_type[gold_type])
    q1["by_gold_type"] = by_type

    contradicting = {key: n for key, n in cells.items() if key[GOLD] == "contradicting"}
    evidence = {}
    for key, position in (("q2", Q2), ("q2quote", Q2QUOTE)):
        table: Counter = Counter()
        for cell, n in contradicting.items():
            table[cell[position]] += n
        stats = summary(table)
        evidence[key] = {"agree": stats["agree"], "n": stats["n"], "kappa": float("nan") if many else stats["kappa"],
                         "both_no": table.get(("no", "no"), 0)}

    batch_items: dict[str, Counter] = defaultdict(Counter)
    for key, n in cells.items():
        batch_items[key[BATCH]][key[GOLD]] += n
    not_self_contained: Counter = Counter()
    for cell, n in contradicting.items():
        if cell[Q2] == ("no", "no"):
            not_self_contained[cell[BATCH]] += n
    by_batch = {
        batch: {
            "both_not_self_contained": not_self_contained.get(batch, 0),
            "items": sum(types.values()),
            "contradicting_only": set(types) == {"contradicting"},
        }
        for batch, types in sorted(batch_items.items())
    }

    def stratum(position: int, value) -> dict:
        sub = _marginal(cells, position, value)
        result = summary(sub) | {"items": sum(sub.values())}
        return _unpooled(result) if many else result

    histories = [h for h in (f"<{HISTORY_SPLIT}", f">={HISTORY_SPLIT}") if any(k[HISTORY] == h for k in cells)]
    families = sorted({key[FAMILY] for key in cells})

    result = {
        "campaign": data.campaign.slug,
        "protocol": data.protocol,
        "annotators": data.pseudonyms,
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
            "history": {name: stratum(HISTORY, name) for name in histories},
            "family": {name: stratum(FAMILY, name) for name in families},
        },
        "queue": queue,
        "retained": twist_retained(data, entries, q1_pairs=pairs, retained=snapshot.retained, profiles=profiles),
    }
    if raters:  # a two-annotator campaign's figures stay exactly as published (its release bundle holds them)
        result["raters"] = raters
    return st.json_safe(result)


def twist_retained(
    data: CampaignData | None, entries, *, q1_pairs: dict | None = None, retained=None, undecided: int | None = None,
    profiles: list[tuple] | None = None,
) -> dict:
    """The retained-set figures of the gold-verdict figure set; `retained` when the caller has it (a
    snapshot), else computed from `entries`. `undecided`: the count when the caller has it (the stored
    queue's); while it is not zero nothing else is read."""
    if undecided is None:
        undecided = sum(1 for e in entries if e.needs_decision)
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
    spec = data.spec
    if retained is None:
        retained = retained_from_data(data, queued=blocking_ids(entries))
    q1_pairs = q1_pairs or _pairs(data, spec.primary_key)[spec.primary_key]
    dropped = [d for d in data.decisions.values() if d.action == Action.DROP]
    types = {i.id: i.gold_label for i in data.items} if dropped else {}
    kept_pairs = [q1_pairs[item.id] for item, _, _ in retained]
    kept_a, kept_b = [x for x, _ in kept_pairs], [y for _, y in kept_pairs]
    # One pass into a small table: (final gold, how, the item's pseudonyms, its answers by identity) ->
    # [count, the item's answers]. The answers are the read-only AnswerValues campaign_data shares per
    # value combination and `data` keeps alive, so equal ids are the same unchanged values; every
    # figure below is a sum over the table (tests/adjudication/test_snapshot.py compares the plain path).
    table: dict[tuple, list] = {}
    answers, empty = data.answers, {}
    for item, final_gold, how in retained:
        per_item = answers.get(item.id, empty)
        key = (final_gold, how, tuple(per_item), tuple(map(id, per_item.values())))
        found = table.get(key)
        if found is None:
            table[key] = [1, per_item]
        else:
            found[0] += 1
    gold_agree: dict[str, list[int]] = {p: [0, 0] for p in data.pseudonyms}
    by_gold: Counter = Counter()
    by_how: Counter = Counter()
    for (final_gold, how, _, _), (n, per_item) in table.items():
        by_gold[final_gold] += n
        by_how[how] += n
        verdict = spec.verdict_of(final_gold)
        for pseudonym, answer in per_item.items():
            label = answer.get(spec.primary_key)
            if label:
                gold_agree[pseudonym][1] += n
                gold_agree[pseudonym][0] += n * (label == verdict)
    summary = _summary(kept_a, kept_b, seed=data.campaign.seed, categories=spec.primary_choices)
    result.update(
        {
            "n": len(retained),
            "by_type": {t: by_gold[t] for t in spec.gold_values if by_gold[t]},
            "by_how": dict(sorted(by_how.items())),
            "dropped": {
                "n": len(dropped),
                "by_type": {t: n for t in spec.gold_values if (n := sum(1 for d in dropped if types.get(d.item_id) == t))},
            },
            "relabelled": by_how["relabelled"],
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
        }
    )
    if _many_raters(data):
        profiles = profiles or _profiles(data, spec.primary_key)
        _fleiss_in_place(result, _fleiss_of(data, profiles, only={item.id for item, _, _ in retained}))
    kappa = result["kappa"]
    result["passes"] = kappa >= bar if not math.isnan(kappa) else False
    return result


def kept_set_kappa(data: CampaignData, item_ids: set[int]) -> dict:
    """The primary answer's kappa over exactly `item_ids` (a derived key's kept items): Cohen's between
    the two annotators (kappa_summary), or with more than two Fleiss' kappa over each item's raters
    (`statistic` "fleiss", bootstrap interval only)."""
    spec, key, seed = data.spec, data.spec.primary_key, data.campaign.seed
    ids = [item.id for item in data.items if item.id in item_ids]
    empty: dict = {}
    if _many_raters(data):
        fleiss = _fleiss_of(data, _profiles(data, key), only=set(ids))
        return {"kappa": fleiss["kappa"], "ci95": UNPOOLED["ci95"], "ci95_bootstrap": fleiss["ci95_bootstrap"],
                "n": fleiss["n"], "observed": fleiss["observed"], "statistic": "fleiss"}
    a = [((data.answers.get(i, empty).get(p) or empty).get(key) or None) for i in ids for p in data.pseudonyms[:1]]
    b = [((data.answers.get(i, empty).get(p) or empty).get(key) or None) for i in ids for p in data.pseudonyms[1:2]]
    return st.kappa_summary(a, b, categories=spec.primary_choices, seed=seed)


def queue_retained(campaign: Campaign, *, undecided: int) -> dict:
    """The retained set on the queue page (TWIST's queue panel): waiting for `undecided` decisions, or
    the figures of the complete set, from the campaign loaded once."""
    if undecided:
        return twist_retained(None, (), undecided=undecided)
    snapshot = snapshot_from_data(campaign_data(campaign))
    with collector_paused():
        return twist_retained(snapshot.data, snapshot.queue, retained=snapshot.retained)


def _label_pair_stats(spec, a: list, b: list, seed: int) -> dict:
    """Agreement on every label and on the spec's binary collapse (labels outside it are excluded)."""
    every = _summary(a, b, seed=seed, categories=spec.primary_choices)
    ba, bb, counts = st.eligible_pairs(a, b, spec.binary)
    binary = _summary(ba, bb, seed=seed, categories=tuple(dict.fromkeys(spec.binary.values())))
    binary.update({"excluded": counts["excluded"], "missing": counts["missing"], "mapping": dict(spec.binary)})
    return {"five_way": every, "binary": binary}


def label_agreement(snapshot: CampaignSnapshot) -> dict:
    """The primary label between the annotators (every label and the binary collapse), the gold the
    retained set gives, and each council judge against that gold."""
    data = snapshot.data
    spec = data.spec
    key = spec.primary_key
    seed = data.campaign.seed
    items = data.items
    label_pairs = _pairs(data, key)[key]
    a, b = [label_pairs[i.id][0] for i in items], [label_pairs[i.id][1] for i in items]
    human = _label_pair_stats(spec, a, b, seed)
    entries = snapshot.queue
    retained = snapshot.retained
    gold = {item.id: label for item, label, _ in retained}
    undecided = sum(1 for e in entries if e.needs_decision)
    raters = None
    if not _many_raters(data):
        human["five_way"].update(_two_rater_stats(a, b))
    else:
        profiles = _profiles(data, key)
        raters = rater_figures(data, profiles, gold if not undecided else {}, gold_complete=not undecided)
        _many_rater_headline(human["five_way"], raters)
        _fleiss_in_place(human["binary"], _fleiss_of(data, profiles, mapping=spec.binary))
    # Judges are detectors: a protocol that seals them until every disagreement is decided gets none.
    sealed = spec.detectors_sealed(undecided)
    judges: dict[str, dict[int, str]] = defaultdict(dict)
    for item_id, ballots in ({} if sealed else data.council).items():
        for ballot in ballots:
            if ballot.values.get(key):
                judges[ballot.member][item_id] = ballot.values[key]
    by_judge = {}
    for name, labels in sorted(judges.items()):
        ids = [i.id for i in items if i.id in gold and i.id in labels]
        stats = _label_pair_stats(spec, [gold[i] for i in ids], [labels[i] for i in ids], seed)
        by_judge[name] = {"judge": name, "items": len(ids), **stats}
    result = {
        "campaign": data.campaign.slug,
        "protocol": data.protocol,
        "annotators": data.pseudonyms,
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
        "detectors_sealed": sealed,
        "judge_gold": next(iter(by_judge.values()), None),
        "judge_gold_by_judge": by_judge,
    }
    if raters:  # as in gold_verdict_agreement: two-annotator figures unchanged
        result["raters"] = raters
    return st.json_safe(result)


# The figure sets a protocol may name in ProtocolSpec.agreement_figures.
FIGURES = {"gold_verdict": gold_verdict_agreement, "labels": label_agreement}


def campaign_agreement(
    campaign: Campaign, *, data: CampaignData | None = None, snapshot: CampaignSnapshot | None = None
) -> dict:
    """The campaign's agreement figures, from `snapshot` when the caller has one (batch work), else
    from `data` or a fresh load."""
    if snapshot is None:
        snapshot = snapshot_from_data(data or campaign_data(campaign))
    with collector_paused():  # per-item tables for 100,000 items: see collector_paused
        return FIGURES[snapshot.spec.agreement_figures](snapshot)
