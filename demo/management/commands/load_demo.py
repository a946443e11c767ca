"""Load the built-in demo: invented conversations and items, demo accounts and two campaigns.

Everything goes through the same services as a real import (so the demo files are validated like any
other file), and running it again changes nothing.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from annotation.models import Campaign
from annotation.services import campaign_create
from chains.importer import items_import_twist_c
from goldkey import roles
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from items.models import ItemSet
from items.services import corpus_import_locomo, corpus_import_version, items_import_lapse, items_import_twist
from judges.services import judged_import

TWIST_SET = "Demo TWIST Track B"
LAPSE_SET = "Demo Lapse outputs"
JUDGED_SET = "Demo judged answers"
CHAINS_SET = "Demo TWIST Track C chains"
# (username, password, groups, staff/superuser): the passwords are public, hence the production guard.
ACCOUNTS = (
    ("author", "author-demo", (roles.AUTHOR, roles.ADMIN), True),
    ("ann1", "ann1-demo", (roles.ANNOTATOR,), False),
    ("ann2", "ann2-demo", (roles.ANNOTATOR,), False),
)
CAMPAIGNS = (
    # slug, item set, name, seed (fixed so every demo shows the same orders)
    ("demo-twist", TWIST_SET, "Demo TWIST Track B double annotation", 20240303),
    ("demo-lapse", LAPSE_SET, "Demo Lapse behaviour labels", 20230612),
    ("demo-judged", JUDGED_SET, "Demo judge audit (judged answers)", 20241010),
    ("demo-twist-c", CHAINS_SET, "Demo TWIST Track C belief supersession", 20250204),
)


def demo_dir() -> Path:
    return Path(settings.BASE_DIR) / "demo"


def _accounts_ensure() -> tuple[dict, list[str]]:
    roles.ensure_groups()
    User = get_user_model()
    users, created = {}, []
    for username, password, groups, admin in ACCOUNTS:
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(
                username=username, password=password, is_staff=admin, is_superuser=admin
            )
            created.append(username)
        for name in groups:
            user.groups.add(Group.objects.get(name=name))
        users[username] = user
    return users, created


def demo_load() -> dict:
    folder = demo_dir()
    locomo = corpus_import_locomo(path=folder / "locomo")
    twist = items_import_twist(
        path=folder / "twist_items.jsonl", item_set_name=TWIST_SET, rejects_path=folder / "twist_rejects.jsonl"
    )
    lapse = items_import_lapse(path=folder / "lapse_items.jsonl", item_set_name=LAPSE_SET)
    judged = judged_import(
        questions=folder / "judged" / "questions.json", hypotheses=folder / "judged" / "hypotheses.jsonl",
        labels=folder / "judged" / "judge_labels.jsonl", item_set_name=JUDGED_SET, run="demo-memory-system",
    )
    # Track C: an invented conversation, its version with the chain turns injected, and chain queries over it.
    chains_folder = folder / "twist_c"
    chain_conversations = [
        corpus_import_locomo(path=chains_folder / "conv-c.json", external_id="conv-c"),
        corpus_import_version(path=chains_folder / "conv-c.tc1.json", version_of="conv-c"),
    ]
    chains = items_import_twist_c(path=chains_folder / "items.jsonl", item_set_name=CHAINS_SET)
    users, users_created = _accounts_ensure()
    campaigns_created = []
    for slug, set_name, name, seed in CAMPAIGNS:
        if Campaign.objects.filter(slug=slug).exists():
            continue
        campaign_create(
            slug=slug,
            item_set=ItemSet.objects.get(name=set_name),
            annotators=[users["ann1"], users["ann2"]],
            per_item=2,
            seed=seed,
            name=name,
            created_by=users["author"],
        )
        campaigns_created.append(slug)
    return {
        "conversations": {key: getattr(locomo, key) + sum(getattr(c, key) for c in chain_conversations)
                          for key in ("created", "unchanged")},
        "twist_items": twist.as_dict(),
        "lapse_items": lapse.as_dict(),
        "judged_items": judged.as_dict(),
        "chain_items": chains.as_dict(),
        "users_created": users_created,
        "campaigns": [slug for slug, *_ in CAMPAIGNS],
        "campaigns_created": campaigns_created,
        "logins": [{"username": u, "password": p, "roles": list(g)} for u, p, g, _ in ACCOUNTS],
    }


class Command(GoldkeyCommand):
    help = (
        "Load the built-in demo data (demo/: invented LoCoMo-format conversations, 21 TWIST items with "
        "rejects, 20 Lapse items, 14 judged answers, 7 TWIST Track C chain queries over a conversation version), "
        "the demo accounts author/ann1/ann2 and four campaigns. Idempotent."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="load even with GOLDKEY_PRODUCTION=1 (the demo passwords are public: never on a real site)",
        )

    def run(self, *, dry_run=False, allow_production=False, **_):
        if settings.GOLDKEY_PRODUCTION and not allow_production:
            raise ApplicationError(
                "refusing to create demo accounts with public passwords in production (GOLDKEY_PRODUCTION=1); "
                "pass --allow-production if this really is a demo site"
            )
        with transaction.atomic():
            result = demo_load()
            result["dry_run"] = dry_run
            if dry_run:
                transaction.set_rollback(True)
        return result

    def summary(self, r):
        twist, lapse, conv = r["twist_items"], r["lapse_items"], r["conversations"]
        prefix = "Dry run (nothing written): would load" if r["dry_run"] else "Demo loaded"
        lines = [
            f"{prefix}: {conv['created']} new conversation(s) ({conv['unchanged']} already present); "
            f"{twist['created']} new TWIST item(s) ({twist['unchanged']} present) and "
            f"{twist['rejects_created']} new reject(s); {lapse['created']} new Lapse item(s) ({lapse['unchanged']} present); "
            f"{r['judged_items']['created']} new judged answer(s) ({r['judged_items']['unchanged']} present); "
            f"{r['chain_items']['created']} new Track C chain query(ies) ({r['chain_items']['unchanged']} present).",
            f"Campaigns: {', '.join(r['campaigns'])}"
            + (f" (created now: {', '.join(r['campaigns_created'])})" if r["campaigns_created"] else " (already there)"),
            "Demo logins (username / password):",
        ]
        for login in r["logins"]:
            lines.append(f"  {login['username']:<8} / {login['password']:<12} {', '.join(login['roles'])}")
        return "\n".join(lines)
