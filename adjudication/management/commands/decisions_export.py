import json
from pathlib import Path

from adjudication.services import decisions_export
from annotation.access import get_campaign
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Export a campaign's adjudication decisions in the released format (to stdout or --output)."
    json_option = False

    def add_command_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")
        parser.add_argument("--exported", help="the 'exported' timestamp to write (default: now, ISO-8601 UTC)")

    def run(self, *, campaign, output=None, exported=None, **_):
        payload = decisions_export(campaign=get_campaign(campaign), exported=exported)
        text = json.dumps(payload, indent=1, ensure_ascii=False) + "\n"
        if output:
            Path(output).write_text(text, encoding="utf-8")
            return {"text": f"Wrote {len(payload['decisions'])} decisions to {output}."}
        return {"text": text.rstrip("\n")}

    def summary(self, r):
        return r["text"]
