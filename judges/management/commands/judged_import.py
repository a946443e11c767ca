from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from judges.services import judged_import


class Command(GoldkeyCommand):
    help = (
        "Import judged answers in LongMemEval's shapes: a question file (question_id, question_type, question, "
        "answer, question_date; JSON array or JSONL), one system's hypothesis file (question_id, hypothesis) and "
        "optionally the judge's labels (question_id, label yes/no, judge_model). All or nothing; idempotent."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the item set to import into (created on first use)")
        parser.add_argument("--questions", required=True, type=Path)
        parser.add_argument("--hypotheses", required=True, type=Path)
        parser.add_argument("--labels", type=Path, default=None, help="the judge's labels (optional)")
        parser.add_argument("--run", default="", help="the system / run that produced the hypotheses (kept hidden)")
        parser.add_argument("--license", default="", help="licence id of the files (default: LongMemEval's)")

    def run(self, **o) -> dict:
        report = judged_import(
            questions=o["questions"], hypotheses=o["hypotheses"], labels=o["labels"], item_set_name=o["item_set"],
            run=o["run"], license=o["license"], dry_run=o["dry_run"],
        )
        return report.as_dict()

    def summary(self, r: dict) -> str:
        prefix = "Dry run (nothing written): would import" if r["dry_run"] else "Imported"
        return f"{prefix} {r['created']} judged answer(s) into '{r['item_set']}' ({r['unchanged']} already present)."
