import time

from annotation.access import get_campaign
from council.models import CouncilRun, PromptVersion
from council.selectors import council_report, run_progress
from council.services import council_run_resume, council_run_start, members_by_names
from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Start a council run over a campaign (one Celery task per member and item); --wait blocks until it ends."

    def add_command_arguments(self, parser):
        parser.add_argument("campaign")
        parser.add_argument("--members", default="", help="comma-separated member names")
        parser.add_argument("--resume", type=int, default=None, metavar="RUN",
                            help="send again the tasks of run RUN that have no vote yet (instead of starting a run)")
        parser.add_argument("--prompt-version", default=None)
        parser.add_argument("--wait", action="store_true", help="wait for the worker to finish and print the report")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds --wait waits at most")

    def run(self, **o) -> dict:
        campaign = get_campaign(o["campaign"])
        if o["resume"] is not None:
            run = CouncilRun.objects.select_related("prompt_version", "campaign").filter(pk=o["resume"], campaign=campaign).first()
            if run is None:
                raise ApplicationError(f"no run {o['resume']} on campaign '{campaign.slug}'")
            council_run_resume(run=run)
            return self._maybe_wait(run, o)
        if not o["members"]:
            raise ApplicationError("give --members a,b,c")
        members = members_by_names([n.strip() for n in o["members"].split(",") if n.strip()])
        prompt = None
        if o["prompt_version"]:
            prompt = PromptVersion.objects.filter(name=o["prompt_version"]).first()
            if prompt is None:
                raise ApplicationError(f"no prompt version '{o['prompt_version']}'")
        run = council_run_start(campaign=campaign, members=members, prompt_version=prompt)
        return self._maybe_wait(run, o)

    def _maybe_wait(self, run, o) -> dict:
        if o["wait"]:
            deadline = time.monotonic() + o["timeout"]
            while True:
                run = CouncilRun.objects.select_related("prompt_version").get(pk=run.pk)
                progress = run_progress(run)
                if progress["finished"] or run.cancelled or run.status == CouncilRun.Status.STALLED:
                    break
                if time.monotonic() > deadline:
                    raise ApplicationError(f"run {run.pk} not finished after {o['timeout']:g}s (is a worker running?)")
                time.sleep(0.5)
        run = CouncilRun.objects.select_related("prompt_version", "campaign").get(pk=run.pk)
        result = run_progress(run)
        if o["wait"]:
            result["report"] = council_report(run.campaign, run.prompt_version.name)
        return result

    def summary(self, r: dict) -> str:
        lines = [f"council run {r['run']} ({r['prompt_version']}): {r['status']}"]
        if r.get("stalled_reason"):
            lines.append(f"  stalled: {r['stalled_reason']}")
        lines += [f"  {m['member']}: {m['done']} done, {m['errors']} errors, {m['remaining']} remaining" for m in r["members"]]
        if "report" in r:
            lines.append("  bands: " + ", ".join(f"{k} {v}" for k, v in r["report"]["bands"].items()))
            lines += [f"  kappa {pair}: {k:.3f}" for pair, k in r["report"]["pairwise_kappa"].items()]
            if r["report"]["circularity"]:
                lines.append("  " + r["report"]["circularity"])
        return "\n".join(lines)
