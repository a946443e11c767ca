from annotation.access import get_campaign
from council.leakage import leakage_audit
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Draft-only Naive Bayes under leave-one-conversation-out CV: does the draft text leak its gold verdict?"

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--top", type=int, default=10, help="how many predictive tokens per side")

    def run(self, **o) -> dict:
        return leakage_audit(campaign=get_campaign(o["campaign"]), top=o["top"])

    def summary(self, r: dict) -> str:
        return (
            f"leakage audit on {r['campaign']} ({r['items']} items, {r['conversations']} conversations): "
            f"balanced accuracy {r['balanced_accuracy']:.3f} (0.5 = no signal), contradicting recall "
            f"{r['contradicting_recall']:.3f}\n  mean draft words: {r['draft_words_mean']}\n"
            f"  tokens → contradicts: {', '.join(r['tokens_for_contradicts'])}\n"
            f"  tokens → consistent: {', '.join(r['tokens_for_consistent'])}"
        )
