from annotation.access import get_campaign
from council.selectors import council_report
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Council triage bands, flags and pairwise kappa for a campaign."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--prompt-version", default=None, help="only votes under this prompt version")

    def run(self, **o) -> dict:
        return council_report(get_campaign(o["campaign"]), o["prompt_version"])

    def summary(self, r: dict) -> str:
        lines = [f"council on {r['campaign']}: " + ", ".join(f"{k} {v}" for k, v in r["bands"].items())]
        lines += [f"  kappa {pair}: {k:.3f} (n={r['pairwise_n'][pair]})" for pair, k in r["pairwise_kappa"].items()]
        lines.append(f"  triage candidates: {r['triage_candidates']}")
        if r["circularity"]:
            lines.append("  " + r["circularity"])
        return "\n".join(lines)
