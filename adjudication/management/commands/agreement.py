import protocols
from adjudication.agreement import campaign_agreement
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Agreement for a campaign, as its protocol reports it: TWIST q1 kappa (all items and retained set), per gold type, q2, strata, queue; Lapse five-way and binary kappa, judge-gold."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")

    def run(self, *, campaign, **_):
        return campaign_agreement(get_campaign(campaign))

    def summary(self, r):
        lines = [f"Campaign '{r['campaign']}' ({r['protocol']}), {r['n_items']} items, annotators {', '.join(r['annotators'])}"]
        lines += protocols.get(r["protocol"]).agreement_summary(r)
        raters = r.get("raters")  # more than two annotators
        if raters:
            alpha = raters["krippendorff_alpha"]["alpha"]
            lines.append(f"  {raters['annotators']} annotators: Fleiss' kappa {_fmt(raters['fleiss']['kappa'])} on "
                         f"{raters['fleiss']['n']} items, Krippendorff's alpha {_fmt(alpha)}")
            lines += [f"    pair {p['raters'][0]}-{p['raters'][1]}: kappa {_fmt(p['kappa'])} on {p['n']} shared items"
                      for p in raters["pairs"]]
            if raters["gold"]["complete"]:
                lines += [f"    {g['rater']} vs gold: {g['agree']}/{g['n']} agree, kappa {_fmt(g['kappa'])}"
                          for g in raters["gold"]["by_annotator"]]
        queue = r["queue"]
        lines.append(f"  queue {queue['n']} ({queue['decided']} decided): {queue['by_reason']}")
        return "\n".join(lines)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
