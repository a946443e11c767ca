"""Lapse scoring writes: the rule cascade and the LLM judge over output items, the agreement gate
(an automatic label only where both agree), and the blinded gold-sample campaign.

Labels live in the output item's `hidden` JSON (never shown to annotators):
  cascade, cascade_rule        the rule cascade's label and the rule that fired
  judge, judge_member,         the judge's label, who gave it, under which prompt version,
  judge_prompt_version, judge_raw   and its raw reply
  auto_label, flagged          the agreed automatic label (None) and whether people must look
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Campaign
from annotation.services import campaign_create
from council.models import CouncilMember, CouncilVote
from goldkey.errors import ApplicationError, NotFound
from items.models import Item, ItemKind, ItemSet
from items.parsing import ParsedLapseItem
from items.services import item_set_get_or_create, lapse_items_create
from lapse import judge as lapse_judge
from lapse.cascade import BEHAVIOUR, TASK_OF_ARM, explain
from lapse.sampler import sample_plan

UNSCORABLE = {"RESIDUAL", "UNPARSED"}
JUDGE_ATTEMPTS = 3


def _item_set(name: str) -> ItemSet:
    try:
        return ItemSet.objects.get(name=name, kind=ItemKind.LAPSE)
    except ItemSet.DoesNotExist:
        raise NotFound(f"no Lapse item set '{name}'") from None


def _outputs(item_set: ItemSet):
    """Scorable items: model outputs (imported against a stimulus) and released battery/gold items —
    anything with a task arm — but not the stimuli themselves (they carry the rendered history)."""
    return (
        Item.objects.filter(item_set=item_set, hidden__has_key="arm")
        .exclude(hidden__has_key="history")
        .order_by("external_id")
    )


def task_of(item: Item) -> str | None:
    return TASK_OF_ARM.get(item.hidden.get("arm", ""))


def _gate(hidden: dict, task: str | None) -> None:
    """Set auto_label/flagged from what is known. Behaviour needs cascade and judge to agree; the
    other tasks are scored by the cascade alone (as in the paper), flagged when it cannot decide."""
    cascade = hidden.get("cascade")
    if task == BEHAVIOUR:
        label, flagged = lapse_judge.agreement_label(cascade, hidden.get("judge"))
    else:
        label = cascade if cascade and cascade not in UNSCORABLE else None
        flagged = label is None
    hidden["auto_label"], hidden["flagged"] = label, flagged


def lapse_outputs_cascade(*, item_set_name: str) -> dict:
    """Run the rule cascade over every output of the set (idempotent; re-running refreshes labels)."""
    item_set = _item_set(item_set_name)
    changed = []
    counts: dict[str, int] = {}
    with transaction.atomic():
        for item in _outputs(item_set).select_for_update():
            task = task_of(item)
            if task is None:
                continue
            h = item.hidden
            decision = explain(
                task=task, response=item.response, witness=item.key_fact, wit_token=h.get("wit_token", ""),
                fact_noun=h.get("fact_noun", ""), form=h.get("form", ""), query=item.request,
            )
            before = (h.get("cascade"), h.get("auto_label"), h.get("flagged"))
            if "cascade" in h and "cascade_rule" not in h:
                h["cascade_released"] = h["cascade"]  # a label that came with the file (e.g. the battery's)
            h["cascade"], h["cascade_rule"] = decision.label, decision.rule
            _gate(h, task)
            counts[decision.label] = counts.get(decision.label, 0) + 1
            if (h.get("cascade"), h.get("auto_label"), h.get("flagged")) != before:
                changed.append(item)
        Item.objects.bulk_update(changed, ["hidden"], batch_size=500)
    return {"item_set": item_set.name, "scored": sum(counts.values()), "changed": len(changed), "by_label": dict(sorted(counts.items()))}


def lapse_output_judge(*, item_id: int, member_id: int) -> str:
    """One judge call for one behaviour output (a Celery task calls this). The member sees only the
    request, the response and the key fact. Raises council.client.TransientCallError for retries."""
    from council.client import chat  # the one place Goldkey talks to an OpenAI-compatible endpoint

    item = Item.objects.get(pk=item_id)
    member = CouncilMember.objects.get(pk=member_id)
    reply = chat(member, lapse_judge.judge_messages(request=item.request, response=item.response, key_fact=item.key_fact))
    label = lapse_judge.judge_parse(reply)
    with transaction.atomic():
        # Lock the row: the cascade pass and other judge calls rewrite the same hidden JSON.
        item = Item.objects.select_for_update().get(pk=item_id)
        item.hidden.update(
            judge=label, judge_member=member.name, judge_prompt_version=lapse_judge.PROMPT_VERSION, judge_raw=reply[:2000]
        )
        _gate(item.hidden, task_of(item))
        item.save(update_fields=["hidden"])
    return label


def lapse_outputs_judge(*, item_set_name: str, member_name: str, asynchronous: bool = False, redo: bool = False) -> dict:
    """Judge every behaviour output of the set that this member has not judged under the current
    prompt version. Synchronous by default (explicit retries on 429/5xx/timeouts); with
    `asynchronous` one Celery task per item is enqueued after commit."""
    from council.client import TransientCallError

    item_set = _item_set(item_set_name)
    try:
        member = CouncilMember.objects.get(name=member_name)
    except CouncilMember.DoesNotExist:
        raise NotFound(f"no council member '{member_name}'") from None
    todo = [
        item.pk
        for item in _outputs(item_set).only("id", "hidden")
        if task_of(item) == BEHAVIOUR
        and (redo or item.hidden.get("judge_member") != member.name or item.hidden.get("judge_prompt_version") != lapse_judge.PROMPT_VERSION)
    ]
    if asynchronous:
        from council.tasks import lapse_judge_output

        for item_id in todo:
            transaction.on_commit(lambda item_id=item_id: lapse_judge_output.delay(item_id, member.pk))
        return {"item_set": item_set.name, "member": member.name, "queued": len(todo), "judged": 0, "errors": []}
    errors, labels = [], {}
    for item_id in todo:
        for attempt in range(JUDGE_ATTEMPTS):
            try:
                label = lapse_output_judge(item_id=item_id, member_id=member.pk)
                labels[label] = labels.get(label, 0) + 1
                break
            except TransientCallError as exc:
                if attempt + 1 == JUDGE_ATTEMPTS:
                    errors.append(f"item {item_id}: {exc}")
                else:
                    time.sleep(min(8.0, (exc.retry_after or 0.5 * 2**attempt)))
    return {"item_set": item_set.name, "member": member.name, "queued": 0, "judged": sum(labels.values()), "by_label": labels, "errors": errors}


# ---------------------------------------------------------------------------------------------
# Generating outputs: a council member as the model under test


def lapse_output_generate(*, stimulus_id: int, member_id: int, item_set_name: str = "Lapse outputs") -> Item:
    """One model call for one stimulus (a Celery task calls this): the stimulus' system prompt (its
    dated history) and its query go to the member; the reply becomes an output item linked to the
    stimulus. Idempotent: an output that already exists is returned without a call."""
    from council.client import chat
    from lapse.outputs import output_external_id, output_item

    stimulus = Item.objects.select_related("item_set").get(pk=stimulus_id)
    member = CouncilMember.objects.get(pk=member_id)
    external_id = output_external_id(stimulus.external_id, member.name)
    existing = Item.objects.filter(item_set__name=item_set_name, external_id=external_id).first()
    if existing is not None:
        return existing
    messages = [{"role": "system", "content": stimulus.hidden["system"]}, {"role": "user", "content": stimulus.request}]
    reply = chat(member, messages)
    with transaction.atomic():
        lapse_items_create(
            item_set_name=item_set_name, items=[output_item(stimulus=stimulus, model=member.name, response=reply)],
            source=f"generated by {member.name}",
        )
    return Item.objects.get(item_set__name=item_set_name, external_id=external_id)


def lapse_outputs_generate(
    *, stimuli_item_set: str, member_name: str, components: list[str] | None = None,
    item_set_name: str = "Lapse outputs", asynchronous: bool = False,
) -> dict:
    """Have a council member answer every stimulus of a set (optionally only some components),
    synchronously with explicit retries, or as one Celery task per stimulus after commit."""
    from council.client import TransientCallError

    stimuli = _item_set(stimuli_item_set)
    try:
        member = CouncilMember.objects.get(name=member_name)
    except CouncilMember.DoesNotExist:
        raise NotFound(f"no council member '{member_name}'") from None
    todo = Item.objects.filter(item_set=stimuli, hidden__has_key="history").order_by("external_id")
    if components:
        todo = todo.filter(hidden__component__in=components)
    ids = list(todo.values_list("id", flat=True))
    if asynchronous:
        from council.tasks import lapse_generate_output

        for stimulus_id in ids:
            transaction.on_commit(
                lambda stimulus_id=stimulus_id: lapse_generate_output.delay(stimulus_id, member.pk, item_set_name)
            )
        return {"member": member.name, "queued": len(ids), "generated": 0, "created": 0, "errors": []}
    errors, generated = [], 0
    before = Item.objects.filter(item_set__name=item_set_name).count()
    for stimulus_id in ids:
        for attempt in range(JUDGE_ATTEMPTS):
            try:
                lapse_output_generate(stimulus_id=stimulus_id, member_id=member.pk, item_set_name=item_set_name)
                generated += 1
                break
            except TransientCallError as exc:
                if attempt + 1 == JUDGE_ATTEMPTS:
                    errors.append(f"stimulus {stimulus_id}: {exc}")
                else:
                    time.sleep(min(8.0, (exc.retry_after or 0.5 * 2**attempt)))
    created = Item.objects.filter(item_set__name=item_set_name).count() - before
    return {"member": member.name, "queued": 0, "generated": generated, "created": created, "errors": errors}


# ---------------------------------------------------------------------------------------------
# Gold sample


def _unit(item: Item) -> dict:
    h = item.hidden
    return {
        "id": item.external_id,
        "task": h.get("arm", ""),
        "frame": h.get("frame", ""),
        "form": h.get("form", ""),
        "gap": h.get("gap", ""),
        "cascade": h.get("cascade", ""),
        "judge": h.get("judge", ""),
        "response_sha": hashlib.sha256(item.response.encode("utf-8")).hexdigest()[:16],
    }


def manifest_path(slug: str) -> Path:
    return Path(settings.VAR_DIR) / "lapse_samples" / f"{slug}.manifest.json"


def lapse_sample_create(
    *,
    item_set_name: str,
    slug: str,
    annotators: list[str],
    size: int,
    seed: int,
    judge_member: str = "",
    manifest: Path | None = None,
    user=None,
) -> dict:
    """Draw the seeded, stratified gold sample from the scored behaviour outputs of a set, copy the
    sampled items into a new item set under opaque ids (g001, g002, … in a seeded order), create a
    blinded two-annotator Lapse campaign over it, record the judge's labels as council votes of that
    campaign (hidden from annotators, shown in adjudication), and save the manifest."""
    source = _item_set(item_set_name)
    if Campaign.objects.filter(slug=slug).exists():
        raise ApplicationError(f"campaign '{slug}' already exists")
    users = list(get_user_model().objects.filter(username__in=annotators))
    missing = sorted(set(annotators) - {u.username for u in users})
    if missing:
        raise NotFound(f"no user(s) {', '.join(missing)}")
    users.sort(key=lambda u: annotators.index(u.username))
    outputs = [item for item in _outputs(source) if task_of(item) == BEHAVIOUR]
    unscored = [item.external_id for item in outputs if not item.hidden.get("cascade")]
    if unscored:
        raise ApplicationError(f"{len(unscored)} output(s) have no cascade label yet (run lapse_score first)")
    if not outputs:
        raise ApplicationError(f"'{source.name}' has no behaviour outputs to sample")
    units = [_unit(item) for item in outputs]
    plan = sample_plan(units, size=size, seed=seed)
    by_id = {item.external_id: item for item in outputs}
    width = max(3, len(str(len(plan["selected"]))))
    gid_of = {ext: f"g{n:0{width}d}" for n, (ext, _) in enumerate(plan["selected"], start=1)}
    judge = CouncilMember.objects.filter(name=judge_member).first() if judge_member else None
    sample_set_name = f"Lapse gold sample ({slug})"
    manifest_data = plan["manifest"] | {
        "campaign": slug,
        "item_set": sample_set_name,
        "sources": {source.name: {"n_outputs": len(outputs), "sha16": plan["manifest"]["pool_sha256"][:16]}},
        "judge_member": judge.name if judge else None,
        "judge_prompt_version": lapse_judge.PROMPT_VERSION if judge else None,
        "items": [{"gid": gid_of[ext], "source": ext, "tier": tier} for ext, tier in plan["selected"]],
    }
    with transaction.atomic():
        parsed = []
        for line, (ext, tier) in enumerate(plan["selected"], start=1):
            item = by_id[ext]
            hidden = dict(item.hidden) | {"source_item_id": item.pk, "source_external_id": ext, "sample_tier": tier}
            hidden.pop("judge_raw", None)
            parsed.append(ParsedLapseItem(line, gid_of[ext], item.request, item.response, item.key_fact, hidden))
        lapse_items_create(item_set_name=sample_set_name, items=parsed, source=f"lapse_sample {slug}")
        sample_set = item_set_get_or_create(name=sample_set_name, kind=ItemKind.LAPSE)
        sample_set.description = f"Seeded stratified Lapse gold sample (seed {seed}) of '{source.name}'."
        sample_set.save(update_fields=["description"])
        campaign = campaign_create(
            slug=slug, item_set=sample_set, annotators=users, per_item=2, seed=seed,
            name=f"Lapse gold sample of {source.name}", created_by=user,
        )
        votes = 0
        if judge is not None:
            items = Item.objects.filter(item_set=sample_set)
            fresh = [
                CouncilVote(
                    campaign=campaign, member=judge, item=item, prompt_version=lapse_judge.PROMPT_VERSION,
                    values={"label": item.hidden["judge"]},
                )
                for item in items
                if item.hidden.get("judge") in lapse_judge.LABELS and item.hidden.get("judge_member") == judge.name
            ]
            votes = len(CouncilVote.objects.bulk_create(fresh))
    path = Path(manifest) if manifest else manifest_path(slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest_data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {
        "campaign": campaign.slug,
        "item_set": sample_set_name,
        "n": len(parsed),
        "annotators": [u.username for u in users],
        "judge_votes": votes,
        "manifest_path": str(path),
        "manifest": {k: v for k, v in manifest_data.items() if k != "items"},
    }
