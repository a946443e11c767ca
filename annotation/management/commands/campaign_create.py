from django.db import transaction

from annotation.services import campaign_create_from_names
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    dry_run_option = True
    help = "Create an annotation campaign: every item of the item set goes to --per-item distinct annotators, each in a seeded order."

    def add_command_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--item-set", required=True, help="name of the item set to annotate")
        parser.add_argument("--annotators", required=True, help="comma-separated usernames")
        parser.add_argument("--per-item", type=int, default=2)
        parser.add_argument("--seed", type=int, help="order seed (default: random, recorded)")
        parser.add_argument("--name", default="")
        parser.add_argument("--crisis-block", action="store_true", help="present crisis items as a separate declinable block")
        parser.add_argument("--pseudonyms", help="comma-separated names for the answer files (default A, B, …)")

    def run(self, *, slug, item_set, annotators, per_item, seed, name, crisis_block, pseudonyms=None, dry_run=False, **_):
        with transaction.atomic():
            result = self._create(slug, item_set, annotators, per_item, seed, name, crisis_block, pseudonyms)
            result["dry_run"] = dry_run
            if dry_run:
                transaction.set_rollback(True)
        return result

    def _create(self, slug, item_set, annotators, per_item, seed, name, crisis_block, pseudonyms):
        campaign = campaign_create_from_names(
            slug=slug,
            item_set_name=item_set,
            usernames=[u.strip() for u in annotators.split(",") if u.strip()],
            per_item=per_item,
            seed=seed,
            name=name,
            crisis_block=crisis_block,
            pseudonyms=[p.strip() for p in pseudonyms.split(",")] if pseudonyms else None,
        )
        enrollments = list(campaign.enrollments.select_related("annotator"))
        return {
            "campaign": campaign.slug,
            "protocol": campaign.protocol,
            "seed": campaign.seed,
            "per_item": campaign.per_item,
            "annotators": {e.pseudonym: e.annotator.username for e in enrollments},
            "assignments": sum(e.assigned_count for e in enrollments),
        }

    def summary(self, r):
        who = ", ".join(f"{p}={u}" for p, u in r["annotators"].items())
        prefix = "(dry run, nothing written) Would have created" if r.get("dry_run") else "Created"
        return f"{prefix} campaign '{r['campaign']}' ({r['protocol']}, seed {r['seed']}): {r['assignments']} assignments for {who}."
