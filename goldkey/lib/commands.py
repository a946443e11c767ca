"""Shared plumbing for Goldkey management commands: --json output and clean error reporting."""

import json

from django.core.management.base import BaseCommand, CommandError

from goldkey.errors import ApplicationError
from goldkey.lib.error_records import error_records


class GoldkeyCommand(BaseCommand):
    """Subclasses implement run(**options) -> dict and summary(result) -> str."""

    json_option = True
    dry_run_option = False

    def add_arguments(self, parser):
        if self.json_option:
            parser.add_argument("--json", action="store_true", help="print the result as JSON")
        if self.dry_run_option:
            parser.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")
        self.add_command_arguments(parser)

    def add_command_arguments(self, parser):
        pass

    def handle(self, *args, **options):
        try:
            result = self.run(**options)
        except ApplicationError as exc:
            if options.get("json"):
                # A script reads stdout: every problem as a record (an import lists them all in extra["errors"]),
                # while the exit status and stderr still say the command failed.
                messages = exc.extra.get("errors") or [exc.message]
                self.stdout.write(json.dumps({"errors": error_records(messages)}, indent=2))
            raise CommandError(exc.message) from exc
        except CommandError as exc:
            if options.get("json"):
                self.stdout.write(json.dumps({"errors": error_records([str(exc)])}, indent=2))
            raise
        if options.get("json"):
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True, default=str))
        else:
            self.stdout.write(self.summary(result))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def summary(self, result: dict) -> str:
        return json.dumps(result, indent=2, default=str)
