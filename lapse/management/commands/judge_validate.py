from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from lapse.validation import judge_battery_validate, judged_battery_read


class Command(GoldkeyCommand):
    help = (
        "Check the Lapse LLM judge on the battery: read a judged battery file (JSONL with battery_id, tier, gold, "
        "cascade, judge; e.g. gold_battery.judged.*.jsonl) and report judge-gold and cascade-gold kappa overall and "
        "per battery tier, five-way and binary, against the 0.75 pass / 0.65 revise bars."
    )

    def add_command_arguments(self, parser):
        parser.add_argument(
            "path", type=Path,
            help="judged battery JSONL, e.g. ../shared/data/lapse-gold/gold_battery.judged.local-seed-oss-36b-instruct-pv2.jsonl",
        )

    def run(self, *, path, **_):
        return judge_battery_validate(judged_battery_read(path), source=path.name)

    def summary(self, r):
        bars = r["bars"]
        lines = [f"{r['source']}: {r['n']} judged battery item(s); bars: kappa >= {bars['passes']} passes, < {bars['revise']} revise."]
        sections = [("overall", r["overall"])] + [(tier, figures) for tier, figures in r["by_tier"].items()]
        for name, figures in sections:
            lines.append(f"{name} (n {figures['n']}):")
            for detector in ("judge", "cascade"):
                parts = []
                for kind in ("binary", "five_way"):
                    f = figures[detector][kind]
                    kappa = "—" if f["kappa"] is None else f"{f['kappa']:.3f}"
                    verdict = f" {f['verdict']}" if f["verdict"] else ""
                    parts.append(f"{kind.replace('_', '-')} kappa {kappa}{verdict} ({f['agree']}/{f['n']}, {f['excluded']} excluded)")
                lines.append(f"  {detector:<8} " + "; ".join(parts))
        return "\n".join(lines)
