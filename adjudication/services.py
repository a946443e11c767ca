"""Writes for adjudication: decisions (web, import), the released decisions file, judge labels and
the released Lapse gold trail. Every path that records a decision goes through `decision_save`."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from adjudication.models import Action, Decision, DecisionRevision
from adjudication.selectors import campaign_is_frozen
from annotation.models import Answer, Campaign, Protocol
from annotation.protocols import LAPSE_LABELS
from annotation.services import campaign_create
from annotation.transfer import answers_import
from council.models import CouncilMember, CouncilVote
from goldkey.errors import ApplicationError
from items.models import GoldType, Item
from items.parsing import (
    ErrorLog,
    ImportFailed,
    ParsedLapseItem,
    json_key_lines,
    read_json,
    read_json_document,
    read_jsonl,
)
from items.services import lapse_items_create

JUDGE_LABELS = (*LAPSE_LABELS, "RESIDUAL")
IMPORTED = "imported"  # prompt_version of replayed judge/council files


@dataclass
class DecisionResult:
    decision: Decision
    changed: bool


def _check_decision(*, campaign: Campaign, item: Item, action: str, new_gold: str, note: str, source: str) -> list[str]:
    problems = []
    if action not in Action.values:
        problems.append(f"action '{action}' is not one of {', '.join(Action.values)}")
    if item.item_set_id != campaign.item_set_id:
        problems.append(f"item '{item.external_id}' is not in campaign '{campaign.slug}'")
    if action == Action.RELABEL:
        allowed = LAPSE_LABELS if campaign.protocol == Protocol.LAPSE else tuple(GoldType.values)
        if new_gold not in allowed:
            problems.append(f"relabel needs a new label, one of {', '.join(allowed)} (got '{new_gold}')")
    elif new_gold:
        problems.append("only a relabel carries a new label")
    # Interactive decisions must say why; a released trail is recorded as it was published.
    if action in (Action.DROP, Action.RELABEL) and not note.strip() and source != "import":
        problems.append(f"a {action} decision needs a note")
    return problems


def decision_save(
    *,
    campaign: Campaign,
    item: Item,
    action: str,
    new_gold: str = "",
    note: str = "",
    user=None,
    source: str = "web",
) -> DecisionResult:
    """Record (or change) the adjudicator's decision on one item: keep, drop or relabel, with a note
    (required for drop and relabel), who and when. Every change appends a DecisionRevision; saving the
    same decision again changes nothing. Refused once a key has been frozen from the campaign."""
    if campaign_is_frozen(campaign):
        raise ApplicationError(f"campaign '{campaign.slug}' has a frozen key: its decisions can no longer change")
    problems = _check_decision(campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, source=source)
    if action == Action.KEEP and campaign.protocol == Protocol.LAPSE and not problems:
        labels = {
            (values or {}).get("label")
            for values in Answer.objects.filter(assignment__enrollment__campaign=campaign, assignment__item=item).values_list("values", flat=True)
        }
        labels.discard(None)
        if len(labels) != 1:
            # Lapse gold is the agreed label, else the adjudicated one: "keep" has nothing to keep here.
            problems.append("the annotators' labels differ (or are missing): set the adjudicated label with relabel")
    if problems:
        raise ApplicationError(f"{item.external_id}: " + "; ".join(problems), extra={"errors": problems})
    with transaction.atomic():
        # Lock the row: two adjudicators saving at once must not both write revision n+1.
        decision = Decision.objects.select_for_update().filter(campaign=campaign, item=item).first()
        if decision is not None and (decision.action, decision.new_gold, decision.note) == (action, new_gold, note):
            return DecisionResult(decision, False)
        if decision is None:
            decision = Decision(campaign=campaign, item=item, revision=0)
        decision.action, decision.new_gold, decision.note, decision.decided_by = action, new_gold, note, user
        decision.revision += 1
        decision.save()
        DecisionRevision.objects.create(
            decision=decision, revision=decision.revision, action=action, new_gold=new_gold, note=note, decided_by=user
        )
    return DecisionResult(decision, True)


def _items_by_id(campaign: Campaign) -> dict[str, Item]:
    return {i.external_id: i for i in Item.objects.filter(item_set_id=campaign.item_set_id)}


def decisions_import(*, campaign: Campaign, path: Path, user=None, dry_run: bool = False) -> dict:
    """The released decisions file `{"exported", "decisions": {item_id: {"action", "note"?, "new_gold"?}}}`.
    Validated in full, then all-or-nothing. Items not in the file are kept (they need no record);
    an item in the file that is not queued is still recorded."""
    path = Path(path)
    doc, data = read_json_document(path)
    if not isinstance(data, dict) or not isinstance(data.get("decisions"), dict):
        raise ImportFailed([f'{path.name}:1: expected {{"exported", "decisions": {{item_id: {{"action", "note"?}}}}}}'])
    items = _items_by_id(campaign)
    log = ErrorLog()
    parsed = []
    lines = json_key_lines(doc.text, ("decisions",))
    for item_id, record in data["decisions"].items():
        where = f"{path.name}:{lines.get(item_id, 1)}: {item_id}"
        if not isinstance(record, dict):
            log.add(where, 'a decision must be an object {"action", "note"?}')
            continue
        unknown = set(record) - {"action", "note", "new_gold"}
        if unknown:
            log.add(where, f"unknown field(s) {', '.join(sorted(unknown))}")
        item = items.get(item_id)
        if item is None:
            log.add(where, f"no item '{item_id}' in campaign '{campaign.slug}'")
            continue
        action, note, new_gold = record.get("action", ""), record.get("note", ""), record.get("new_gold", "")
        if not all(isinstance(v, str) for v in (action, note, new_gold)):
            log.add(where, "action, note and new_gold must be strings")
            continue
        for problem in _check_decision(campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, source="import"):
            log.add(where, problem)
        parsed.append((item, action, new_gold, note))
    log.raise_if_any()
    counts = {"decisions": len(parsed), "changed": 0, "by_action": {}}
    for _, action, _, _ in parsed:
        counts["by_action"][action] = counts["by_action"].get(action, 0) + 1
    if dry_run:
        return counts | {"dry_run": True}
    with transaction.atomic():
        for item, action, new_gold, note in parsed:
            result = decision_save(
                campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, user=user, source="import"
            )
            counts["changed"] += result.changed
    return counts | {"dry_run": False}


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def decisions_export(*, campaign: Campaign, exported: str | None = None) -> dict:
    """The released decisions format; `note` and `new_gold` appear only when they carry something."""
    decisions = {}
    for d in Decision.objects.filter(campaign=campaign).select_related("item").order_by("item__external_id"):
        record = {"action": d.action}
        if d.note:
            record["note"] = d.note
        if d.new_gold:
            record["new_gold"] = d.new_gold
        decisions[d.item.external_id] = record
    return {"exported": exported or iso_now(), "decisions": decisions}


def judge_import(*, campaign: Campaign, path: Path, dry_run: bool = False) -> dict:
    """LLM-judge labels in the released judged-items format `{"gid", "judge", "judge_model"}` (JSONL),
    stored as council votes `{"label": …}` of a member named after `judge_model`, prompt version
    'imported'. Re-importing the same file changes nothing."""
    if campaign.protocol != Protocol.LAPSE:
        raise ApplicationError(f"judge labels belong to a Lapse campaign; '{campaign.slug}' is {campaign.protocol}")
    path = Path(path)
    items = _items_by_id(campaign)
    log = ErrorLog()
    parsed: dict[tuple[str, str], tuple[Item, str]] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        gid, label, model = record.get("gid"), record.get("judge"), record.get("judge_model")
        if not isinstance(gid, str) or not gid:
            log.add(where, "missing field 'gid'")
            continue
        if not isinstance(model, str) or not model:
            log.add(where, f"{gid}: missing field 'judge_model'")
            continue
        if label not in JUDGE_LABELS:
            log.add(where, f"{gid}: judge label '{label}' is not one of {', '.join(JUDGE_LABELS)}")
            continue
        if gid not in items:
            log.add(where, f"no item '{gid}' in campaign '{campaign.slug}'")
            continue
        if (model, gid) in parsed:
            log.add(where, f"duplicate judge label for '{gid}'")
            continue
        parsed[(model, gid)] = (items[gid], label)
    if not parsed and not log.errors:
        log.add(f"{path.name}:1", "no judge labels in file")
    log.raise_if_any()
    models = sorted({model for model, _ in parsed})
    if dry_run:
        return {"judges": models, "labels": len(parsed), "changed": 0, "dry_run": True}
    changed = 0
    with transaction.atomic():
        members = {m: CouncilMember.objects.get_or_create(name=m, defaults={"model": m})[0] for m in models}
        existing = {
            (v.member.name, v.item_id): v
            for v in CouncilVote.objects.filter(campaign=campaign, member__in=members.values(), prompt_version=IMPORTED).select_related("member")
        }
        fresh = []
        for (model, _gid), (item, label) in parsed.items():
            vote = existing.get((model, item.id))
            if vote is None:
                fresh.append(CouncilVote(campaign=campaign, member=members[model], item=item, prompt_version=IMPORTED, values={"label": label}))
            elif vote.values != {"label": label} or vote.status != CouncilVote.Status.OK:
                vote.values, vote.status, vote.error = {"label": label}, CouncilVote.Status.OK, ""
                vote.save(update_fields=["values", "status", "error"])
                changed += 1
        CouncilVote.objects.bulk_create(fresh, batch_size=2000)
        changed += len(fresh)
    return {"judges": models, "labels": len(parsed), "changed": changed, "dry_run": False}


LAPSE_GOLD_FILES = {
    "annotators": ("gold_annotations_annotator1.jsonl", "gold_annotations_annotator2.jsonl"),
    "adjudicated": "gold_adjudicated.jsonl",
    "judge": "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl",
    "manifest": "gold_manifest_v1.json",
}


def _annotator_name(path: Path) -> tuple[str, list[str]]:
    log = ErrorLog()
    names, gids = set(), []
    for line, record in read_jsonl(path, log):
        if not isinstance(record.get("annotator"), str) or not record["annotator"]:
            log.add(f"{path.name}:{line}", "missing field 'annotator'")
            continue
        names.add(record["annotator"])
        if isinstance(record.get("gid"), str):
            gids.append(record["gid"])
    log.raise_if_any()
    if len(names) != 1:
        raise ImportFailed([f"{path.name}:1: expected one annotator per file, found {sorted(names) or 'none'}"])
    return names.pop(), gids


def lapse_gold_import(*, directory: Path, slug: str, user=None, judge_file: str | None = None) -> dict:
    """Load the released Lapse gold trail (labels only) into a new campaign: placeholder items (gid
    only, text not released), the two annotators (accounts with unusable passwords, pseudonyms = the
    files' annotator names) and their labels, the adjudicated labels as relabel decisions, and the
    judge's labels as council votes. All-or-nothing."""
    directory = Path(directory)
    paths = [directory / name for name in LAPSE_GOLD_FILES["annotators"]]
    adjudicated_path = directory / LAPSE_GOLD_FILES["adjudicated"]
    judge_path = directory / (judge_file or LAPSE_GOLD_FILES["judge"])
    missing = [str(p) for p in (*paths, adjudicated_path) if not p.exists()]
    if missing:
        raise ApplicationError(f"not a Lapse gold folder: missing {', '.join(missing)}")
    if Campaign.objects.filter(slug=slug).exists():
        raise ApplicationError(f"campaign '{slug}' already exists")
    names, gid_lists = zip(*(_annotator_name(p) for p in paths), strict=True)
    if names[0] == names[1]:
        raise ImportFailed([f"{paths[1].name}:1: both files are by '{names[0]}'"])
    gids = sorted(set(gid_lists[0]) | set(gid_lists[1]))
    log = ErrorLog()
    adjudicated = {}
    for line, record in read_jsonl(adjudicated_path, log):
        gid, label = record.get("gid"), record.get("label")
        if gid not in gids:
            log.add(f"{adjudicated_path.name}:{line}", f"'{gid}' is not a labelled item")
        elif label not in LAPSE_LABELS:
            log.add(f"{adjudicated_path.name}:{line}", f"{gid}: label '{label}' is not one of {', '.join(LAPSE_LABELS)}")
        else:
            adjudicated[gid] = label
    log.raise_if_any()
    seed = 0
    manifest = directory / LAPSE_GOLD_FILES["manifest"]
    if manifest.exists():
        seed = int(read_json(manifest).get("seed", 0) or 0)
    item_set_name = f"Lapse gold set ({slug})"
    with transaction.atomic():
        lapse_items_create(
            item_set_name=item_set_name,
            items=[ParsedLapseItem(line=n, external_id=gid, request="", response="", key_fact="", hidden={"placeholder": True}) for n, gid in enumerate(gids, 1)],
            source=str(directory),
            text_released=False,
        )
        from items.models import ItemSet

        item_set = ItemSet.objects.get(name=item_set_name)
        users = []
        for name in names:
            account, _ = get_user_model().objects.get_or_create(username=f"{slug}-{name}"[:150])
            account.set_unusable_password()
            account.save(update_fields=["password"])
            users.append(account)
        campaign = campaign_create(
            slug=slug, item_set=item_set, annotators=users, per_item=2, seed=seed,
            name=f"Lapse gold trail ({directory.name})", created_by=user, pseudonyms=list(names),
        )
        labels = [answers_import(campaign=campaign, path=p, annotator=name, user=user) for p, name in zip(paths, names, strict=True)]
        items = _items_by_id(campaign)
        for gid, label in sorted(adjudicated.items()):
            decision_save(
                campaign=campaign, item=items[gid], action=Action.RELABEL, new_gold=label,
                note=f"adjudicated label ({adjudicated_path.name})", user=user, source="import",
            )
        judge = judge_import(campaign=campaign, path=judge_path) if judge_path.exists() else None
    return {
        "campaign": campaign.slug,
        "item_set": item_set_name,
        "items": len(gids),
        "annotators": list(names),
        "labels": {r["annotator"]: r["answers"] for r in labels},
        "adjudicated": len(adjudicated),
        "judge": judge,
        "answers_total": Answer.objects.filter(assignment__enrollment__campaign=campaign).count(),
    }


def dumps(payload: dict) -> str:
    return json.dumps(payload, indent=1, ensure_ascii=False)
