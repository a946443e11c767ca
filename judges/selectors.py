"""Reads of the judges wing: the judge audit on the agreement page (human–human and human(gold)–judge,
overall, per question type and for abstention items) and each judge's latest decoy calibration."""

from collections import Counter

from adjudication.selectors import campaign_data, snapshot_from_data
from annotation.models import Campaign
from goldkey.lib import statistics as st
from items.models import Item
from judges.models import JudgeCalibration
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
