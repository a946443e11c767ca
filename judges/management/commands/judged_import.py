from pathlib import Path

from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from judges.services import judged_import, judged_release_import


class Command(GoldkeyCommand):
    help = (
        "Import judged answers. LongMemEval's released files as they are: --questions (a question file: the "
        "official longmemeval_oracle/_s/_m shape, whose dated sessions and evidence ids are kept, or the "
        "question-only subset) and --eval-results with one or more '*.eval-results-*' runs (question_id, "
        "hypothesis, autoeval_label {model, label}); each run is named by its file name up to '.jsonl', each "
        "question stored once and cited by every run's answer. Or one system's --hypotheses file with "
        "optional --labels (question_id, label yes/no, judge_model). All or nothing (FILE:LINE: field); "
        "idempotent; progress on stderr."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the item set to import into (created on first use)")
        parser.add_argument("--questions", required=True, type=Path)
        runs = parser.add_mutually_exclusive_group(required=True)
        runs.add_argument("--eval-results", nargs="+", type=Path, metavar="FILE",
                          help="LongMemEval judged runs (*.eval-results-*), several in one call")
        runs.add_argument("--hypotheses", type=Path, help="one system's hypothesis file (question_id, hypothesis)")
        parser.add_argument("--labels", type=Path, default=None, help="the judge's labels (with --hypotheses)")
        parser.add_argument("--run", default="", help="with --hypotheses: the system / run that produced them (kept hidden)")
        parser.add_argument("--license", default="", help="licence id of the files (default: LongMemEval's)")

    def run(self, **o) -> dict:
        if o["eval_results"]:
            if o["labels"] or o["run"]:
                raise ApplicationError("--labels and --run go with --hypotheses; an eval-results run carries its "
                                       "labels and is named by its file")
            report = judged_release_import(
                questions=o["questions"], runs=o["eval_results"], item_set_name=o["item_set"], license=o["license"],
                dry_run=o["dry_run"], progress=lambda message: self.stderr.write(message),
            )
        else:
            report = judged_import(
                questions=o["questions"], hypotheses=o["hypotheses"], labels=o["labels"], item_set_name=o["item_set"],
                run=o["run"], license=o["license"], dry_run=o["dry_run"],
            )
        return report.as_dict()

    def summary(self, r: dict) -> str:
        prefix = "Dry run (nothing written): would import" if r["dry_run"] else "Imported"
        return f"{prefix} {r['created']} judged answer(s) into '{r['item_set']}' ({r['unchanged']} already present)."
