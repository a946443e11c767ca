from datetime import date

from django.core.management.base import CommandError

from goldkey.lib.commands import GoldkeyCommand
from lapse.corpus import lapse_stimuli_create


class Command(GoldkeyCommand):
    help = (
        "Build Goldkey's Lapse stimuli for an evaluation date (deterministic), gate every matched pair, "
        "and store them as Lapse items. Reports counts per component, arm, frame, form, gap and carrier."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("--eval-date", required=True, help="absolute evaluation date, YYYY-MM-DD")
        parser.add_argument("--item-set", default="", help="item set name (default: 'Lapse stimuli <date>')")

    def run(self, *, eval_date, item_set="", dry_run=False, **_):
        try:
            parsed = date.fromisoformat(eval_date)
        except ValueError as exc:
            raise CommandError(f"--eval-date must be YYYY-MM-DD, got '{eval_date}'") from exc
        return lapse_stimuli_create(eval_date=parsed, item_set_name=item_set, dry_run=dry_run)

    def summary(self, r):
        verb = "Would create" if r["dry_run"] else "Created"
        lines = [
            f"{verb} {r['created']} stimuli in '{r['item_set']}' ({r['unchanged']} already present); "
            f"{r['pairs_checked']} matched pairs gated, {r['pairs_rejected']} rejected.",
            f"sha256 {r['stimuli_sha256']}",
        ]
        for key in ("per_component", "per_frame", "per_form", "per_gap"):
            lines.append(f"{key[4:]}: " + ", ".join(f"{k} {v}" for k, v in r[key].items()))
        return "\n".join(lines)
