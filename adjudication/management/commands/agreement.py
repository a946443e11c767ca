from adjudication.agreement import campaign_agreement
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand


def _k(section: dict | None) -> str:
    if not section or section.get("kappa") is None:
        return "kappa n/a"
    ci = section.get("ci95") or [None, None]
    ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else ""
    return f"kappa {section['kappa']:.3f}{ci_text}, {section['agree']}/{section['n']} agree"


class Command(GoldkeyCommand):
    help = "Agreement for a campaign: TWIST q1 kappa (all items and retained set), per gold type, q2, strata, queue; Lapse five-way and binary kappa, judge-gold."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")

    def run(self, *, campaign, **_):
        return campaign_agreement(get_campaign(campaign))

    def summary(self, r):
        lines = [f"Campaign '{r['campaign']}' ({r['protocol']}), {r['n_items']} items, annotators {', '.join(r['annotators'])}"]
        if r["protocol"] == "lapse":
            lines.append(f"  five-way: {_k(r['five_way'])}")
            lines.append(f"  binary PROCEED vs HEDGE/TEMPLATE: {_k(r['binary'])} (eligible n {r['binary']['n']})")
            judge = r.get("judge_gold")
            if judge:
                lines.append(f"  judge {judge['judge']} vs gold: binary {_k(judge['binary'])}; five-way {_k(judge['five_way'])}")
        else:
            lines.append(f"  q1 all items: {_k(r['q1'])} ({r['q1']['left_out']} left out: missing q1)")
            for gold_type, s in r["q1"]["by_gold_type"].items():
                lines.append(f"    {gold_type}: {s['agree']}/{s['n']} agree")
            lines.append(f"  q2 (contradicting): {r['q2']['agree']}/{r['q2']['n']} agree; both not self-contained: {r['not_self_contained']['n']}")
            ret = r["retained"]
            if ret["complete"]:
                verdict = "passes" if ret["passes"] else "FAILS"
                lines.append(f"  retained {ret['n']} {ret['by_type']}, dropped {ret['dropped']['n']} {ret['dropped']['by_type']}")
                lines.append(f"  retained-set kappa {ret['kappa']:.3f}: {verdict} the bar {ret['bar']}")
            else:
                lines.append(f"  retained set: {ret['undecided']} queued item(s) still undecided")
        queue = r["queue"]
        lines.append(f"  queue {queue['n']} ({queue['decided']} decided): {queue['by_reason']}")
        return "\n".join(lines)
