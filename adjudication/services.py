"""Writes for adjudication: decisions (web, import) and the released decisions file. Every path that
records a decision goes through `decision_save`."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction

import protocols
from adjudication.models import Action, Decision, DecisionRevision
from annotation.models import Answer, Campaign
from annotation.services import campaign_lock
from goldkey import roles
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import ErrorLog, ImportFailed, json_key_lines, read_json_document
from items.models import Item


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
        allowed = protocols.get(campaign.protocol).gold_values
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
    same decision again changes nothing. Decisions are made while the campaign is closed: not while
    annotators may still change the answers they rest on, and never after its key is frozen."""
    problems = _check_decision(campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, source=source)
    spec = protocols.get(campaign.protocol)
    if action == Action.KEEP and spec.gold_from_answers and not problems:
        labels = {
            (values or {}).get(spec.primary_key)
            for values in Answer.objects.filter(assignment__enrollment__campaign=campaign, assignment__item=item).values_list("values", flat=True)
        }
        labels.discard(None)
        if len(labels) != 1:
            # The gold is the agreed label, else the adjudicated one: "keep" has nothing to keep here.
            problems.append("the annotators' labels differ (or are missing): set the adjudicated label with relabel")
    if problems:
        raise ApplicationError(f"{item.external_id}: " + "; ".join(problems), extra={"errors": problems})
    with transaction.atomic():
        # Hold the campaign row: a freeze waits for this decision, or this decision sees the freeze.
        campaign_lock(campaign=campaign, status=Campaign.Status.CLOSED, doing="record decisions")
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


def decisions_import(
    *, campaign: Campaign, path: Path, user=None, adjudicator_unknown: bool = False, dry_run: bool = False
) -> dict:
    """The released decisions file `{"exported", "decisions": {item_id: {"action", "note"?, "new_gold"?}}}`.
    Validated in full, then all-or-nothing. Items not in the file are kept (they need no record);
    an item in the file that is not queued is still recorded.

    The file does not say who decided: `user` is the adjudicator, recorded on every decision, or
    `adjudicator_unknown` says that nobody knows — the datasheet then says so, instead of claiming an
    adjudication independent of the annotators."""
    if user is None and not adjudicator_unknown:
        raise ApplicationError(
            "name the adjudicator who took these decisions (--by USERNAME), or say that it is not known "
            "(--adjudicator-unknown): the release's datasheet discloses whether the adjudicator was an annotator"
        )
    if user is not None and adjudicator_unknown:
        raise ApplicationError("give either the adjudicator (--by) or --adjudicator-unknown, not both")
    if user is not None:
        roles.require_author(user, message=f"'{user.username}' is not an author: only authors adjudicate")
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


def dumps(payload: dict) -> str:
    return json.dumps(payload, indent=1, ensure_ascii=False)
