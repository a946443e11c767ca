from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand, user_named
from keys import selectors as key_selectors
from keys import services as key_services


class Command(GoldkeyCommand):
    help = (
        "A third-annotator pass over a frozen key: a campaign over the key's items for annotators who were "
        "not in its campaign (--annotators), or with --report, their kappa against the key and against each "
        "original annotator (the independent reliability estimate for that key version)."
    )
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="frozen key version, e.g. TWIST-v1.0")
        parser.add_argument("--slug", help="slug of the new campaign (with --annotators)")
        parser.add_argument("--annotators", help="comma-separated usernames, none of them in the key's campaign")
        parser.add_argument("--seed", type=int, default=None, help="order seed (default: a recorded random secret)")
        parser.add_argument(
            "--key-was-public", action="store_true",
            help="start the pass on a published key, acknowledging that its annotators could read the gold (recorded)",
        )
        parser.add_argument("--report", action="store_true", help="print the passes' kappa figures")

    def run(self, **o) -> dict:
        key = key_selectors.key_get(o["version"])
        if o["report"]:
            return {"key": key.version, "passes": key_selectors.reliability_report(key)}
        if not o["slug"] or not o["annotators"]:
            raise ApplicationError("give --slug and --annotators to create a pass, or --report to read them")
        annotators = [user_named(name.strip()) for name in o["annotators"].split(",") if name.strip()]
        made = key_services.reliability_pass_create(
            key=key, annotators=annotators, slug=o["slug"], seed=o["seed"], user=self.acting_user(o),
            key_public_acknowledged=o["key_was_public"],
        )
        return {"key": key.version, "campaign": made.campaign.slug, "items": made.campaign.enrollments.first().assigned_count}

    def summary(self, r: dict) -> str:
        if "passes" not in r:
            return f"Reliability pass '{r['campaign']}' over {r['key']}: {r['items']} items for each annotator."
        if not r["passes"]:
            return f"{r['key']}: no reliability pass yet."
        lines = []
        for p in r["passes"]:
            against = ", ".join(f"{o} {f['kappa']:.3f}" for o, f in p["vs_annotators"].items() if f and f["kappa"] is not None)
            public = "; the key was public during the pass" if p["key_public_during_pass"] else ""
            lines.append(f"{p['label']} — {p['annotator']} ({p['campaign']}, {p['answered']}/{p['items']} answered{public}): "
                         f"kappa vs the key {p['vs_key']['kappa']:.3f}; vs {against}")
        return "\n".join(lines)
