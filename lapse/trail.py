"""The released Lapse gold trail: its judge labels and its labels-only gold folder, loaded into a campaign.

Every write goes through the services of the apps that own the rows (items, campaigns, answers,
decisions), so the trail is held to the same rules as work done in Goldkey.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from adjudication.models import Action
from adjudication.services import decision_save
from annotation.models import Answer, Campaign, Enrollment
from annotation.services import campaign_close, campaign_create
from annotation.transfer import answers_import
from council.models import CouncilMember
from council.services import ImportedVote, imported_votes_save
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    check_lengths,
    clipped,
    column_length,
    read_json,
    read_jsonl,
)
from items.models import Item, ItemSet
from items.parsing import ParsedLapseItem
from items.services import lapse_items_create
from lapse.selectors import campaign_items_by_external_id
from protocols.lapse import LABELS, SPEC

JUDGE_LABELS = (*LABELS, "RESIDUAL")


def judge_import(*, campaign: Campaign, path: Path, dry_run: bool = False) -> dict:
    """LLM-judge labels in the released judged-items format `{"gid", "judge", "judge_model"}` (JSONL),
    stored as council votes `{"label": …}` of a member named after `judge_model`, prompt version
    'imported'. All-or-nothing, under the one policy for imported votes (`imported_votes_save`):
    re-importing the same file changes nothing; a file that changes an imported label is refused,
    naming FILE:LINE and the item."""
    if campaign.protocol != SPEC.name:
        raise ApplicationError(f"judge labels belong to a Lapse campaign; '{campaign.slug}' is {campaign.protocol}")
    path = Path(path)
    items = campaign_items_by_external_id(campaign)
    log = ErrorLog()
    by_model: dict[str, dict[str, ImportedVote]] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        gid, label, model = record.get("gid"), record.get("judge"), record.get("judge_model")
        if not isinstance(gid, str) or not gid:
            log.add(where, "missing field 'gid'")
            continue
        if not isinstance(model, str) or not model:
            log.add(where, f"{gid}: missing field 'judge_model'")
            continue
        # The judge model names the council member its labels are stored under.
        if not check_lengths(record, {"judge_model": column_length(CouncilMember, "name")}, where, log):
            continue
        if label not in JUDGE_LABELS:
            log.add(where, f"{gid}: judge label '{label}' is not one of {', '.join(JUDGE_LABELS)}")
            continue
        if gid not in items:
            log.add(where, f"no item '{gid}' in campaign '{campaign.slug}'")
            continue
        if gid in by_model.get(model, {}):
            log.add(where, f"duplicate judge label for '{gid}'")
            continue
        by_model.setdefault(model, {})[gid] = ImportedVote(where, items[gid], {"label": label})
    if not by_model and not log.errors:
        log.add(f"{path.name}:1", "no judge labels in file")
    log.raise_if_any()
    models = sorted(by_model)
    labels = sum(len(votes) for votes in by_model.values())
    if dry_run:
        return {"judges": models, "labels": labels, "changed": 0, "created": 0, "unchanged": 0, "dry_run": True}
    created = unchanged = 0
    with transaction.atomic():
        for model in models:
            member, _ = CouncilMember.objects.get_or_create(name=model, defaults={"model": model})
            saved = imported_votes_save(campaign=campaign, member=member, votes=list(by_model[model].values()))
            created, unchanged = created + saved["created"], unchanged + saved["unchanged"]
    # "changed": votes written by this import — only new ones, since an imported vote is never rewritten.
    return {"judges": models, "labels": labels, "changed": created, "created": created, "unchanged": unchanged, "dry_run": False}


LAPSE_GOLD_FILES = {
    "annotators": ("gold_annotations_annotator1.jsonl", "gold_annotations_annotator2.jsonl"),
    "adjudicated": "gold_adjudicated.jsonl",
    "judge": "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl",
    "manifest": "gold_manifest_v1.json",
}


def _annotator_name(path: Path) -> tuple[str, list[str]]:
    log = ErrorLog()
    names, gids = set(), []
    # The annotator's name is the enrollment's pseudonym; a gid names an item.
    limits = {"annotator": column_length(Enrollment, "pseudonym"), "gid": column_length(Item, "external_id")}
    for line, record in read_jsonl(path, log):
        if not isinstance(record.get("annotator"), str) or not record["annotator"]:
            log.add(f"{path.name}:{line}", "missing field 'annotator'")
            continue
        if not check_lengths(record, limits, f"{path.name}:{line}", log):
            continue
        names.add(record["annotator"])
        if isinstance(record.get("gid"), str):
            gids.append(record["gid"])
    log.raise_if_any()
    if len(names) != 1:
        raise ImportFailed([f"{path.name}:1: expected one annotator per file, found {sorted(names) or 'none'}"])
    return names.pop(), gids


def lapse_gold_import(
    *, directory: Path, slug: str, user=None, judge_file: str | None = None, with_decisions: bool = True
) -> dict:
    """Load the released Lapse gold trail (labels only) into a new campaign: placeholder items (gid
    only, text not released), the two annotators (accounts with unusable passwords, pseudonyms = the
    files' annotator names) and their labels, the adjudicated labels as relabel decisions, and the
    judge's labels as council votes. All-or-nothing. Without `with_decisions` the adjudicated file is
    checked but not applied: the campaign stands as it did before adjudication, its disagreements
    queued and undecided (and so its detector labels sealed), for adjudicating again in Goldkey."""
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
        elif label not in LABELS:
            log.add(f"{adjudicated_path.name}:{line}", f"{gid}: label '{label}' is not one of {', '.join(LABELS)}")
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
        item_set = ItemSet.objects.get(name=item_set_name)
        users = []
        for name in names:
            account, _ = get_user_model().objects.get_or_create(username=f"{slug}-{name}"[:150])
            account.set_unusable_password()
            account.save(update_fields=["password"])
            users.append(account)
        campaign = campaign_create(
            slug=slug, item_set=item_set, annotators=users, per_item=2, seed=seed,
            name=clipped(f"Lapse gold trail ({directory.name})", column_length(Campaign, "name")), created_by=user, pseudonyms=list(names),
        )
        labels = [answers_import(campaign=campaign, path=p, annotator=name, user=user) for p, name in zip(paths, names, strict=True)]
        campaign_close(campaign=campaign, user=user)
        items = campaign_items_by_external_id(campaign)
        for gid, label in sorted(adjudicated.items() if with_decisions else ()):
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
        "adjudicated": len(adjudicated) if with_decisions else 0,
        "judge": judge,
        "answers_total": Answer.objects.filter(assignment__enrollment__campaign=campaign).count(),
    }
