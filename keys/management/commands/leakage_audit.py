from django.core.management.base import CommandError

from annotation.access import get_campaign
from council.leakage import TOP_TOKENS, leakage_audit
from goldkey.lib.commands import GoldkeyCommand
from keys.leakage import key_leakage_audit
from keys.selectors import key_get


class Command(GoldkeyCommand):
    help = (
        "Draft-only Naive Bayes under leave-one-conversation-out CV: does the draft text leak its gold? "
        "--key VERSION audits a key's own items (the benchmark's figure); CAMPAIGN audits its candidates."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", nargs="?", help="audit this campaign's candidates (a candidate-level figure)")
        parser.add_argument("--key", metavar="VERSION", help="audit this key version's items, e.g. TWIST-v1.0")
        parser.add_argument("--top", type=int, default=TOP_TOKENS, help="how many predictive tokens per side")

    def run(self, **o) -> dict:
        if bool(o["campaign"]) == bool(o["key"]):
            raise CommandError("name either a campaign (candidate-level audit) or --key VERSION (key-level audit)")
        if o["key"]:
            return key_leakage_audit(key=key_get(o["key"]), top=o["top"])
        return leakage_audit(campaign=get_campaign(o["campaign"]), top=o["top"])

    def summary(self, r: dict) -> str:
        scope = f"key {r['key']['version']}" if r["scope"] == "key" else f"the candidates of {r['campaign']}"
        return (
            f"leakage audit on {scope} ({r['items']} items, {r['folds']} conversation folds): balanced accuracy "
            f"{r['balanced_accuracy']:.3f} (0.5 = no signal), contradicting recall {r['contradicting_recall']:.3f}, "
            f"other recall {r['other_recall']:.3f}, majority baseline {r['majority_baseline']:.3f}\n"
            f"  mean draft words: {r['draft_words_mean']}\n"
            f"  tokens → contradicting: {', '.join(r['tokens_for_contradicting'])}\n"
            f"  tokens → other: {', '.join(r['tokens_for_other'])}"
        )
