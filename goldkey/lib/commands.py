"""Shared plumbing for Goldkey management commands: --json output and clean error reporting."""

import argparse
import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldkey.errors import ApplicationError
from goldkey.lib.error_records import error_records


def user_named(username: str | None):
    if not username:
        raise ApplicationError("give --by USERNAME (who does this; recorded)")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ApplicationError(f"no user '{username}'")
    return user


def acting_user(username: str | None):
    """The one rule for who a command acts as: --by USERNAME, or the first admin when the option is
    left out. Either way the user is recorded on what the command writes."""
    if username:
        return user_named(username)
    user = get_user_model().objects.filter(is_superuser=True).order_by("id").first()
    if user is None:
        raise ApplicationError("give --by USERNAME (no admin user exists)")
    return user


def _key_version_arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments of a command that name a key version (its `version` or a VERSION metavar)."""
    return [a for a in parser._actions
            if (a.dest == "version" or a.metavar == "VERSION") and not isinstance(a, RefuseVersion)]


class RefuseVersion(argparse.Action):
    """`--version` on a Goldkey command: Django's flag prints Django's version and exits 0, so
    `key_freeze --version TWIST-v1.0` (a natural guess) froze nothing and looked like it worked. Refused,
    saying where the key version goes."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="refused: not Django's version flag here (python -m django --version prints that)")

    def __call__(self, parser, namespace, values, option_string=None):
        named = _key_version_arguments(parser)
        if not named:
            parser.error("--version is not an option of this command (python -m django --version prints Django's)")
        where = named[0]
        if where.option_strings:
            pointer = f"name the key version with {where.option_strings[0]}, e.g. {where.option_strings[0]} TWIST-v1.0"
        else:
            pointer = f"give the key version as the argument {where.dest.upper()}, e.g. {parser.prog} TWIST-v1.0"
        parser.error(f"--version is not a key version: {pointer}")


class GoldkeyCommand(BaseCommand):
    """Subclasses implement run(**options) -> dict and summary(result) -> str."""

    # Django's system checks import the URLconf, every view and the API schema (~0.45 s of each command's
    # start-up, as much as a 100,000-item export's work): the web server, `migrate` and `check` run them,
    # and Goldkey registers none of its own that a data command would need.
    requires_system_checks = []

    json_option = True
    dry_run_option = False
    acting_user_option = False  # adds --by USERNAME; read it with self.acting_user(options)

    def add_base_argument(self, parser, *args, **kwargs):
        if args == ("--version",):
            kwargs = {"action": RefuseVersion}
        super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser):
        if self.json_option:
            parser.add_argument("--json", action="store_true", help="print the result as JSON")
        if self.dry_run_option:
            parser.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")
        if self.acting_user_option:
            parser.add_argument("--by", default=None, help="username of the person doing this (default: the first admin)")
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
            hint = f" ({exc.operator_hint})" if exc.operator_hint else ""
            raise CommandError(exc.message + hint) from exc
        except CommandError as exc:
            if options.get("json"):
                self.stdout.write(json.dumps({"errors": error_records([str(exc)])}, indent=2))
            raise
        if options.get("json"):
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True, default=str))
        else:
            self.stdout.write(self.summary(result))

    def acting_user(self, options: dict):
        return acting_user(options.get("by"))

    def run(self, **options) -> dict:
        raise NotImplementedError

    def summary(self, result: dict) -> str:
        return json.dumps(result, indent=2, default=str)
