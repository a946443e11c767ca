from goldkey.errors import ApplicationError
from goldkey.lib import statistics
from goldkey.lib.commands import GoldkeyCommand
from keys import selectors as key_selectors
from keys import services as key_services
from scoring import formats, metrics
from scoring import selectors as score_selectors

REPORT_FIELDS = ("key", "runs", "mcnemar", "family", "family_size", "multi_ingest", "unscorable", "outside_key")


class Command(GoldkeyCommand):
    help = (
        "Score every run imported against a key version and print the report, citing the key version and its "
        "SHA-256: CR, AS, HNS (Wilson and conversation-clustered bootstrap), Attr, GCR, fact-only citations, "
        "the 620-turn strata and the pairwise exact McNemar tests with Holm over the stated family. Computed "
        "from the stored predictions each time."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="key version, e.g. TWIST-v1.0")
        output = parser.add_mutually_exclusive_group()
        output.add_argument("--markdown", action="store_true", help="print the report as Markdown tables")
        output.add_argument("--csv", action="store_true", help="print one CSV row per run and metric")
        parser.add_argument("--replicates", type=int, default=statistics.BOOTSTRAP_REPLICATES)
        parser.add_argument("--seed", type=int, default=statistics.BOOTSTRAP_SEED)
        parser.add_argument("--family", default="all", help=f"the Holm family of McNemar tests: {metrics.FAMILY_SPECS} "
                            "(default all pairs); the report states it and its size beside every adjusted p")
        parser.add_argument("--classes", default=",".join(metrics.MCNEMAR_CLASSES),
                            help="gold classes tested, comma-separated (default contradicting,hard_negative)")

    def run(self, **options) -> dict:
        key = key_selectors.key_get(options["version"])
        check = key_services.key_verify(version=key.version)
        if not check["ok"]:
            # A report cites the key's hash: it is not printed for a key whose entries no longer match it.
            raise ApplicationError(f"key '{key.version}' does not verify (recorded {check['recorded'] or '-'}, computed {check['computed']})")
        classes = tuple(c.strip() for c in options["classes"].split(",") if c.strip())
        report = score_selectors.score_report(key, replicates=options["replicates"], seed=options["seed"],
                                              family=options["family"], classes=classes)
        self._format = "markdown" if options["markdown"] else "csv" if options["csv"] else "text"
        self._report = report
        if options["json"]:
            return {name: report[name] for name in REPORT_FIELDS}
        return report

    def summary(self, result: dict) -> str:
        if self._format == "markdown":
            return formats.report_markdown(result)
        if self._format == "csv":
            return formats.report_csv(result)
        key = result["key"]
        lines = [f"{key['version']} sha256 {key['sha256']}: {len(result['runs'])} run(s)"]
        for name, run in result["runs"].items():
            lines.append(f"  {name}: " + "  ".join(f"{m} {formats.fraction(run[m])}" for m in formats.HEADLINE))
        lines.append(f"McNemar family: {result['family_size']} tests, {result['family']['description']} on "
                     f"{' and '.join(result['family']['classes'])} items (Holm over all of them)")
        lines += [f"  not scored: {name}: {why}" for name, why in result.get("unscorable", {}).items()]
        lines += [f"  {name}: scored on the key's items; outside the key: {', '.join(ids)}"
                  for name, ids in result.get("outside_key", {}).items()]
        return "\n".join(lines)
