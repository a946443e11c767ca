from pathlib import Path

from chains.scores import chain_run_import, chain_run_report
from chains.selectors import chain_run_reports
from council.services import members_by_names
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Score a TWIST Track C run: a system's free-text answers (JSON Lines {\"item_id\", \"answer\"}) to a frozen "
        "Track C key, graded by --judge (a council member admissible on Track C decoys). Stores the judge's grades as "
        "the run of --system, shown on the key's Track C score page; --dry-run grades and prints without storing. "
        "Prints each metric with its interval beside the judge's model, prompt version and per-class calibration."
    )
    dry_run_option = True
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="the frozen Track C key version")
        parser.add_argument("answers", type=Path, help="the run's answers (JSON Lines)")
        parser.add_argument("--judge", required=True, help="the council member that grades the answers")
        parser.add_argument("--system", default="", help="the run's system, as its authors name it (required unless --dry-run)")

    def run(self, **o) -> dict:
        (member,) = members_by_names([o["judge"]])
        if o["dry_run"]:
            return {"stored": False, **chain_run_report(version=o["version"], path=o["answers"], member=member)}
        run = chain_run_import(version=o["version"], path=o["answers"], member=member, system=o["system"],
                               user=self.acting_user(o))
        (report,) = [r for r in chain_run_reports(run.key) if r["id"] == run.pk]
        return {"stored": True, **report}

    def summary(self, r: dict) -> str:
        judge = r["judge"]
        stored = f"stored as {r['system']}" if r["stored"] else "not stored (dry run)"
        lines = [f"{r['key']}: {r['answered']}/{r['items']} items answered, {stored}; judged by {judge['member']} "
                 f"({judge['model']}, {judge['judge_prompt_version']}), calibrated on {judge['calibration']['decoys']} "
                 f"({judge['calibration']['created_at'][:10]}):"]
        for name, c in judge["calibration"]["classes"].items():
            lines.append(f"  calibration {name}: " + ("not applicable" if c.get("not_applicable")
                                                    else f"{c['rejected']}/{c['n']} rejected"))
        for name, m in r["metrics"].items():
            if name == "resolution_responsiveness":
                if m["rate"] is None:
                    lines.append(f"  {m['label']}: n/a (no post-resolution answers)")
                else:
                    lo, hi = m["newcombe"]
                    lines.append(f"  {m['label']}: {m['rate']:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            elif m["n"]:
                lines.append(f"  {m['label']}: {m['k']}/{m['n']} = {m['rate']:.3f} [{m['wilson'][0]:.3f}, {m['wilson'][1]:.3f}]")
            else:
                lines.append(f"  {m['label']}: n/a")
        return "\n".join(lines)
