from pathlib import Path

from django.db import transaction

from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand, user_named
from scoring import services as score_services
from scoring.models import SystemRun


def parse_metadata(pairs: list[str]) -> dict:
    metadata = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ApplicationError(f"--meta: expected NAME=VALUE, got {pair!r}")
        metadata[name.strip()] = value
    return metadata


class Command(GoldkeyCommand):
    help = (
        "Import a system's run against a frozen key version: a predictions JSONL (one line per key item: "
        '{"item_id", "aligned", "evidence": [cited ids, best first]}) or, with --format results, the released '
        "per-item results JSON (one run per configuration), or with --format scores a score-level-only results "
        'JSON ({"note", "scores": {system: {"contradicting_acc", ...}}}: one score-level ingest per system). '
        "Refused with FILE:LINE when an item is missing, "
        "unknown, duplicated or malformed, or when the key's hash does not verify; nothing is stored then."
    )
    dry_run_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="the key version the run is scored against, e.g. TWIST-v1.0")
        parser.add_argument("file", help="the run file")
        parser.add_argument("--system", default="", help="system name (required for predictions; for results: "
                            "only that system's configurations, e.g. flatrag)")
        parser.add_argument("--configuration", default="", help="configuration of the system (predictions only)")
        parser.add_argument("--ingest", type=int, default=1, help="ingest number for multi-ingest runs (default 1)")
        parser.add_argument("--format", dest="fmt", choices=score_services.FORMATS, default=score_services.PREDICTIONS)
        parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                            help="free metadata (model, date, commit); repeatable")
        parser.add_argument("--produced-by", dest="produced_by", choices=SystemRun.ProducedBy.values,
                            default=SystemRun.ProducedBy.UNSTATED,
                            help="who ran the system: system_authors (its own authors, independent of the key's; TWIST "
                            "§8 counts these), key_authors, or unstated (default)")
        parser.add_argument("--by", default=None, help="username recorded as the importer")

    def run(self, **options) -> dict:
        user = user_named(options["by"]) if options["by"] else None
        common = {"version": options["version"], "path": Path(options["file"]), "system": options["system"],
                  "ingest": options["ingest"], "metadata": parse_metadata(options["meta"]), "user": user}
        with transaction.atomic():
            if options["fmt"] == score_services.SCORES:
                if options["configuration"]:
                    raise ApplicationError("--configuration: a score-level file names its configurations (flatrag:openai)")
                ingests = score_services.score_level_import(**common)
                runs, score_level = [], [{"id": i.pk, "name": i.name, "scores": i.scores} for i in ingests]
                sources = ingests
            else:
                imported = score_services.score_import(fmt=options["fmt"], configuration=options["configuration"],
                                                       produced_by=options["produced_by"], **common)
                runs = [{"id": run.pk, "name": run.name, "predictions": run.predictions.count()} for run in imported]
                score_level, sources = [], imported
            result = {
                "key": options["version"],
                "runs": runs,
                "score_level": score_level,
                "source_sha256": sources[0].source_sha256 if sources else None,
                "dry_run": options["dry_run"],
            }
            if options["dry_run"]:
                transaction.set_rollback(True)
        return result

    def summary(self, result: dict) -> str:
        verb = "would be imported" if result["dry_run"] else "imported"
        if result["score_level"]:
            lines = [f"{len(result['score_level'])} score-level ingest(s) {verb} against {result['key']} "
                     f"(file sha256 {result['source_sha256']}):"]
            lines += [f"  {i['name']}: " + ", ".join(f"{m} {v}" for m, v in i["scores"].items()) for i in result["score_level"]]
            return "\n".join(lines)
        lines = [f"{len(result['runs'])} run(s) {verb} against {result['key']} (file sha256 {result['source_sha256']}):"]
        lines += [f"  {run['name']}: {run['predictions']} predictions" for run in result["runs"]]
        return "\n".join(lines)
