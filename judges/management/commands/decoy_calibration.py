import json
from pathlib import Path

from council.services import members_by_names
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from items.models import ItemSet
from judges.services import calibration_set_of, judge_calibration_run


class Command(GoldkeyCommand):
    help = (
        "Decoy calibration of an LLM judge (TWIST Appendix C): one decoy per wrong-answer class built from each "
        "judged-answer item (or from each TWIST Track C chain), mixed with the gold answers in a seeded order, graded by --judge (a council member) "
        "blind to provenance. Prints per class n, rejected, rate and Wilson interval, and whether the judge is "
        "admissible (every class rejected at >= 95%). --export writes the decoy set as JSONL."
    )
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the judged-answer item set the decoys are built from")
        parser.add_argument("--judge", default="", help="the council member that grades (omit: only --export)")
        parser.add_argument("--seed", type=int, default=1, help="the order of the mixed set")
        parser.add_argument("--export", type=Path, default=None, help="write the mixed decoy set here (JSONL)")

    def run(self, **o) -> dict:
        item_set = ItemSet.objects.filter(name=o["item_set"]).first()
        if item_set is None:
            raise ApplicationError(f"no item set '{o['item_set']}'")
        if not o["judge"] and o["export"] is None:
            raise ApplicationError("give --judge MEMBER to calibrate, or --export PATH to write the decoy set")
        calibration = calibration_set_of(item_set=item_set, seed=o["seed"])
        records = calibration.records
        result = {"item_set": item_set.name, "template_version": calibration.version, "seed": o["seed"],
                  "records": len(records), "not_built": calibration.not_built}
        if o["export"] is not None:
            try:
                o["export"].write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")
            except OSError as exc:
                raise ApplicationError(f"{o['export']}: cannot be written: {exc.strerror or exc}") from exc
            result["exported"] = str(o["export"])
        if o["judge"]:
            (member,) = members_by_names([o["judge"]])
            calibration = judge_calibration_run(
                item_set=item_set, member=member, seed=o["seed"], user=self.acting_user(o)
            )
            result.update({"calibration": calibration.pk, "judge": member.name, "judge_model": member.model,
                           **calibration.results})
        return result

    def summary(self, r: dict) -> str:
        lines = [f"{r['records']} responses (gold answers and decoys, {r['template_version']}, seed {r['seed']}) "
                 f"from '{r['item_set']}'" + (f"; written to {r['exported']}" if "exported" in r else "")]
        if "classes" in r:
            lines.append(f"judge {r['judge']} ({r['judge_model'] or 'no model'}): "
                         + ("ADMISSIBLE" if r["admissible"] else "NOT admissible")
                         + f" (every class >= {r['bar']:.0%} rejected)")
            for name, c in r["classes"].items():
                if c.get("not_applicable"):
                    lines.append(f"  {name:<22} not applicable to this set")
                    continue
                rate = "n/a" if c["rate"] is None else f"{c['rate']:.1%}"
                lines.append(f"  {name:<22} {c['rejected']}/{c['n']} rejected, {rate} "
                             f"[{c['wilson'][0]:.3f}, {c['wilson'][1]:.3f}]" + ("" if c["clears"] else "  below the bar"))
            g = r["gold"]
            lines.append(f"  gold answers accepted: {g['accepted']}/{g['n']}")
        return "\n".join(lines)
