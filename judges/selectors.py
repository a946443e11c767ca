"""Reads of the judges wing: the judge audit on the agreement page (human–human and human(gold)–judge,
overall, per question type and for abstention items) and each judge's latest decoy calibration."""

import re
from collections import Counter
from dataclasses import dataclass

from django.urls import reverse

from adjudication.selectors import campaign_data, snapshot_from_data
from annotation.models import Answer, Campaign
from goldkey.lib import statistics as st
from items.models import Item, ItemSet
from judges import audit
from judges.models import JudgeCalibration, JudgedSample
from judges.sampling import Unit
from protocols import judged

KEYS = ("n", "left_out", "agree", "observed", "kappa", "ci95", "ci95_bootstrap")
# A council member that judged the campaign, told apart from a judge whose labels came with the items.
COUNCIL_SUFFIX = " (council)"


def latest_calibrations(judges: list[str]) -> dict[str, dict]:
    """judge model or member name -> its latest calibration (one query whatever the number of judges)."""
    if not judges:
        return {}
    rows = JudgeCalibration.objects.filter(judge_model__in=judges) | JudgeCalibration.objects.filter(judge__in=judges)
    latest: dict[str, dict] = {}
    for row in rows.order_by("-created_at", "-id").values(
        "id", "judge", "judge_model", "template_version", "seed", "results", "admissible", "created_at", "item_set__name"
    ):
        for name in (row["judge_model"], row["judge"]):
            if name in judges and name not in latest:
                latest[name] = {
                    "id": row["id"], "judge": row["judge"], "judge_model": row["judge_model"],
                    "template_version": row["template_version"], "seed": row["seed"], "item_set": row["item_set__name"],
                    "admissible": row["admissible"], "classes": row["results"].get("classes", {}),
                    "gold": row["results"].get("gold", {}), "created_at": row["created_at"].isoformat(),
                }
    return latest


def _summary(a: list, b: list, seed: int) -> dict:
    result = st.kappa_summary(a, b, categories=judged.VERDICTS, seed=seed)
    return {k: result[k] for k in KEYS}


def _group_order(types: set[str]) -> list[str]:
    known = [t for t in judged.TYPES if t in types]
    return ["overall", *known, *sorted(types - set(judged.TYPES)), "abstention"]


def judge_audit(campaign: Campaign) -> dict:
    """The judge audit of a judged-answer campaign: per group (overall, each question type, abstention
    items) the human–human verdict agreement and, once no disagreement is left undecided, the agreement
    of the human gold with each judge's label: the judge whose labels came with the items and every
    council member that judged the campaign. Judges' latest decoy calibrations beside them."""
    snapshot = snapshot_from_data(campaign_data(campaign))
    data = snapshot.data
    spec = data.spec
    seed = data.campaign.seed
    undecided = sum(1 for e in snapshot.queue if e.needs_decision)
    sealed = spec.detectors_sealed(undecided)
    gold = {item.id: label for item, label, _ in snapshot.retained}
    hidden = dict(Item.objects.filter(item_set_id=campaign.item_set_id).values_list("id", "content__hidden"))
    key = spec.primary_key
    members: dict[str, list] = {}
    judge_labels: dict[str, dict[int, str]] = {}
    for item in data.items:
        question_type, abstention = judged.split_family(item.family)
        groups = ["overall", question_type] + (["abstention"] if abstention else [])
        for group in groups:
            members.setdefault(group, []).append(item)
        judge = (hidden.get(item.id) or {}).get("judge") or {}
        if judge.get("judge_model") and judge.get("label") in judged.JUDGE_LABELS:
            judge_labels.setdefault(judge["judge_model"], {})[item.id] = judged.JUDGE_LABELS[judge["label"]]
    for item_id, ballots in data.council.items():
        for ballot in ballots:
            if ballot.values.get(key) in judged.VERDICTS:
                judge_labels.setdefault(ballot.member + COUNCIL_SUFFIX, {})[item_id] = ballot.values[key]
    rows = []
    types = {judged.split_family(i.family)[0] for i in data.items}
    for group in _group_order(types):
        items = members.get(group, [])
        if not items and group != "overall":
            continue
        pairs = [([*(v.get(key) for v in data.answer_list(i.id)), None, None])[:2] for i in items]
        row = {
            "group": group, "n_items": len(items),
            "human_human": _summary([p[0] for p in pairs], [p[1] for p in pairs], seed),
            "human_judge": {},
        }
        if not sealed:
            for model, labels in sorted(judge_labels.items()):
                ids = [i.id for i in items if i.id in gold and i.id in labels]
                row["human_judge"][model] = _summary([gold[i] for i in ids], [labels[i] for i in ids], seed)
        rows.append(row)
    judges = sorted(judge_labels)
    calibrations = latest_calibrations([m.removesuffix(COUNCIL_SUFFIX) for m in judges])
    return st.json_safe({
        "sample": judged_sample_audit(campaign),
        "sealed": sealed,
        "undecided": undecided,
        "gold_n": len(gold),
        "judges": [
            {"judge_model": m, "labels": len(judge_labels[m]),
             "by_label": dict(sorted(Counter(judge_labels[m].values()).items())) if not sealed else {},
             "calibration": calibrations.get(m.removesuffix(COUNCIL_SUFFIX))}
            for m in judges
        ],
        "rows": rows,
    })


@dataclass(frozen=True)
class JudgedRow:
    """One judged answer of an item set as the sample and the audit read it."""

    item_id: int
    run: str
    question_id: str
    question_type: str
    hypothesis: str
    label: bool | None  # the judge's (True: correct); None: the answer came without one


def judged_rows(item_set: ItemSet) -> list[JudgedRow]:
    """Every judged answer of the set with its run, question and judge label (one query). An answer that
    cites no shared question is its own question (the one-answer-per-question shapes)."""
    rows = []
    for item_id, external_id, family, content, question_id in (
        Item.objects.filter(item_set=item_set).order_by("id")
        .values_list("id", "external_id", "family", "content", "context__external_id")
    ):
        hidden = content.get("hidden") or {}
        label = (hidden.get("judge") or {}).get("label")
        rows.append(JudgedRow(
            item_id, hidden.get("run", ""), question_id or external_id, judged.split_family(family)[0],
            content.get("hypothesis", ""), None if label is None else judged.JUDGE_LABELS.get(label) == "correct",
        ))
    return rows


# LongMemEval's note-budget runs name their budget ("con500_1k", "con5500_6k"): runs that differ in that
# setting alone form a ladder, read in the order of the budget.
BUDGET = re.compile(r"_con(\d+)_\d+k_")


def run_ladders(runs) -> dict[str, list[str]]:
    budgets = sorted((int(m.group(1)), run) for run in runs if (m := BUDGET.search(run)))
    return {"note budget": [run for _, run in budgets]} if len(budgets) > 1 else {}


def sample_design(campaign: Campaign, gold: dict[int, str] | None = None) -> dict | None:
    """The designed sample a campaign was drawn as (for its key's datasheet); None: not a sample."""
    sample = JudgedSample.objects.filter(campaign=campaign).only("design").first()
    return None if sample is None else sample.design


def judged_sample_audit(campaign: Campaign, gold: dict[int, str] | None = None) -> dict | None:
    """The judge audited against the human key over a designed sample (judges.audit): human–human kappa;
    once every disagreement is decided, the adjudicated label against the judge overall, per type and for
    abstention, with lenient and strict errors beside the published figure; the judge's self-consistency on
    identical answer texts; each run's accuracy under the judge and under the human key, weighted back to
    the population, and whether the order of the runs changes. None: the campaign is not a sample. `gold`
    (item id -> verdict): a derived key's labels (answers re-judged against a corrected reference) in place
    of the campaign's adjudicated ones."""
    sample = JudgedSample.objects.filter(campaign=campaign).first()
    if sample is None:
        return None
    snapshot = snapshot_from_data(campaign_data(campaign))
    data = snapshot.data
    undecided = sum(1 for e in snapshot.queue if e.needs_decision)
    sealed = data.spec.detectors_sealed(undecided)
    units = [Unit(run, question_id, question_type, abstention, disputed)
             for run, question_id, question_type, abstention, disputed, _ in sample.population]
    key_of = {item_id: (run, question_id) for run, question_id, *_, item_id in sample.population}
    key = data.spec.primary_key
    pairs = [([*(v.get(key) for v in data.answer_list(i.id)), None, None])[:2] for i in data.items]
    verdict = {"correct": True, "incorrect": False}
    result = {
        "design": sample.design, "sealed": sealed, "undecided": undecided,
        "human_human": audit.human_human([verdict.get(a) for a, _ in pairs], [verdict.get(b) for _, b in pairs],
                                         seed=data.campaign.seed),
    }
    if sealed:
        return st.json_safe(result)
    rows = [r for r in judged_rows(campaign.item_set) if r.item_id in key_of and r.label is not None]
    judge = {key_of[r.item_id]: r.label for r in rows}
    labels = {item.id: label for item, label, _ in snapshot.retained} if gold is None else gold
    human = {key_of[item_id]: label == "correct" for item_id, label in labels.items() if item_id in key_of}
    result.update({
        "published_agreement": audit.PUBLISHED_AGREEMENT,
        "agreement": audit.judge_agreement(units=units, judge=judge, human=human),
        "self_consistency": audit.self_consistency((*key_of[r.item_id], r.hypothesis, r.label) for r in rows),
        "runs": audit.run_accuracy(units=units, judge=judge, human=human, ladders=run_ladders({u.run for u in units})),
    })
    return st.json_safe(result)


def gold_flags(campaign: Campaign, item: Item) -> dict:
    """The adjudicator's view of "the gold answer is wrong" on an item's page: every flag and its note on any
    answer to the item's question in the campaign (one question, many answer items: the runs), each with a
    link to its item, so the question is decided once whatever the item it was reached from. Two queries."""
    question = Item.objects.filter(pk=item.pk).values_list("context__external_id", flat=True).first() or item.external_id
    same_question = {"assignment__item__context_id": item.context_id} if item.context_id else {"assignment__item_id": item.pk}
    rows = (
        Answer.objects.filter(assignment__enrollment__campaign=campaign, **same_question)
        .order_by("assignment__item__external_id", "assignment__enrollment__pseudonym")
        .values_list("assignment__item_id", "assignment__item__external_id", "values")
    )
    link = reverse("adjudication:item", args=[campaign.slug, 0]).removesuffix("0/")
    flags, items = [], set()
    for item_id, external_id, values in rows:
        items.add(item_id)
        if judged.gold_flagged(values):
            flags.append({"item": external_id, "url": f"{link}{item_id}/", "this_item": item_id == item.pk,
                          "note": values.get(judged.GOLD_WRONG_NOTE, "")})
    return {"question": question, "answers": len(items), "flags": flags}
