from goldkey.lib.commands import GoldkeyCommand
from lapse.selectors import scoring_summary
from lapse.services import lapse_outputs_cascade, lapse_outputs_judge


class Command(GoldkeyCommand):
    help = (
        "Score Lapse model outputs: the rule cascade on every output, then (with --judge) the LLM judge on "
        "behaviour outputs through a council member. An automatic label holds only where both agree; the "
        "rest are flagged for people."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the outputs' item set (e.g. 'Lapse outputs')")
        parser.add_argument("--judge", default="", help="council member name to use as the judge")
        parser.add_argument("--async", dest="asynchronous", action="store_true", help="enqueue judge calls on Celery")
        parser.add_argument("--redo", action="store_true", help="judge again even where this member already did")

    def run(self, *, item_set, judge="", asynchronous=False, redo=False, **_):
        result = {"cascade": lapse_outputs_cascade(item_set_name=item_set)}
        if judge:
            result["judge"] = lapse_outputs_judge(item_set_name=item_set, member_name=judge, asynchronous=asynchronous, redo=redo)
        result["summary"] = scoring_summary(item_set_name=item_set)
        return result

    def summary(self, r):
        s = r["summary"]
        lines = [f"Cascade labelled {r['cascade']['scored']} output(s): " + ", ".join(f"{k} {v}" for k, v in r["cascade"]["by_label"].items())]
        if "judge" in r:
            j = r["judge"]
            lines.append(f"Judge {j['member']}: {j['judged']} judged, {j['queued']} queued, {len(j['errors'])} error(s).")
        lines.append(f"Automatic labels: {s['auto_labelled']} of {s['outputs']}; flagged for people: {s['flagged']}.")
        return "\n".join(lines)
