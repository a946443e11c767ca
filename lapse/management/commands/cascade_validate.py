from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from lapse.validation import battery_read, cascade_validate


class Command(GoldkeyCommand):
    help = (
        "Run the Lapse rule cascade over a battery of constructed outputs (JSONL with arm, response, gold, "
        "tier, …) and report accuracy and per-label precision/recall per tier."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("path", type=Path, help="battery JSONL, e.g. ../shared/data/lapse-gold/gold_battery.jsonl")

    def run(self, *, path, **_):
        return cascade_validate(battery_read(path))

    def summary(self, result):
        lines = []
        for tier, figures in result.items():
            lines.append(
                f"{tier}: {figures['correct']}/{figures['n']} right (accuracy {figures['accuracy']:.3f})"
            )
            for label, scores in figures["per_label"].items():
                lines.append(
                    f"  {label:<22} precision {scores['precision']:.3f}  recall {scores['recall']:.3f}  n={scores['n']}"
                )
            for miss in figures["misses"][:20]:
                lines.append(f"  miss {miss['id']}: gold {miss['gold']}, cascade {miss['cascade']}")
        return "\n".join(lines)
