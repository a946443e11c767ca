"""Shared plumbing for Goldkey management commands: --json output and clean error reporting."""

import json

from django.core.management.base import BaseCommand, CommandError

from goldkey.errors import ApplicationError


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
            hint = f" ({exc.operator_hint})" if exc.operator_hint else ""
            raise CommandError(exc.message + hint) from exc
        if options.get("json"):
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True, default=str))
        else:
            self.stdout.write(self.summary(result))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def summary(self, result: dict) -> str:
        return json.dumps(result, indent=2, default=str)
