"""The command base: --json failures as records a script can read, and no command hiding a Django flag."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class

from goldkey.lib.commands import GoldkeyCommand, RefuseVersion
from goldkey.lib.error_records import error_record
from tests.processes import fresh_process_says_ok

pytestmark = pytest.mark.django_db


def failing(*args) -> tuple[dict, str]:
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(*args, stdout=out)
    return json.loads(out.getvalue()), str(caught.value)


def test_a_refusal_without_a_file_under_json_is_one_record_with_only_a_message():
    printed, _ = failing("campaign_create", "c1", "--item-set", "nothing", "--annotators", "x", "--json")
    assert printed == {"errors": [{"file": None, "line": None, "field": None, "message": "no item set named 'nothing'"}]}


@pytest.mark.parametrize(("text", "record"), [
    ("1.json:40: session_1[2]: field 'dia_id': 'D9' is not of the form D<session>:<turn>",
     {"file": "1.json", "line": 40, "field": "session_1[2].dia_id", "message": "'D9' is not of the form D<session>:<turn>"}),
    ("t.jsonl:3: missing field 'draft'", {"file": "t.jsonl", "line": 3, "field": "draft", "message": "missing field 'draft'"}),
    ("t.jsonl:3: invalid JSON: Expecting value (column 1)",
     {"file": "t.jsonl", "line": 3, "field": None, "message": "invalid JSON: Expecting value (column 1)"}),
    ("a.zip: not a zip archive (File is not a zip file)",
     {"file": "a.zip", "line": None, "field": None, "message": "not a zip archive (File is not a zip file)"}),
    ("an item set name is required for TWIST and Lapse items",
     {"file": None, "line": None, "field": None, "message": "an item set name is required for TWIST and Lapse items"}),
])
def test_an_import_message_splits_into_file_line_field_and_message(text, record):
    assert error_record(text) == record


def _goldkey_commands():
    for name, app in sorted(get_commands().items()):
        if app.startswith("django") or app in ("rest_framework", "drf_spectacular", "rest_framework.authtoken"):
            continue
        command = load_command_class(app, name)
        if isinstance(command, GoldkeyCommand):
            yield name, command


def test_goldkey_commands_exist_to_be_checked():
    assert {"key_freeze", "key_derive", "import_twist"} <= {name for name, _ in _goldkey_commands()}


def test_no_goldkey_command_runs_the_system_checks_at_start_up(monkeypatch, capsys):
    """They import every view and the API schema, ~0.45 s of each command; the server and `check` run them."""
    assert [name for name, command in _goldkey_commands() if command.requires_system_checks] == []

    def checked(*args, **kwargs):
        raise AssertionError("system checks ran")

    monkeypatch.setattr("django.core.management.base.checks.run_checks", checked)
    with pytest.raises(SystemExit):  # as from the shell: the key is refused, no check ran first
        load_command_class("keys", "key_verify").run_from_argv(["manage.py", "key_verify", "NOPE"])
    assert "NOPE" in capsys.readouterr().err


def test_no_command_overrides_a_django_flag():
    for name, command in _goldkey_commands():
        parser = command.create_parser("manage.py", name)
        version = next(a for a in parser._actions if "--version" in a.option_strings)
        # The base's refusal (below), not an argument of the command's own in the flag's place.
        assert type(version) is RefuseVersion, f"{name} redefines --version"
        assert parser.conflict_handler == "error", f"{name} resolves option conflicts by overriding"


def _takes_a_key_version(parser) -> bool:
    return any(a.dest == "version" or a.metavar == "VERSION" or "key version" in (a.help or "")
               for a in parser._actions if "--version" not in a.option_strings)


KEY_VERSION_COMMANDS = {"key_freeze", "key_derive", "key_export", "key_verify", "key_publish", "erratum_file",
                        "reliability_pass", "score_import", "score_report", "leakage_audit", "chain_score"}


def test_the_commands_that_take_a_key_version_are_all_found():
    found = {name for name, command in _goldkey_commands() if _takes_a_key_version(command.create_parser("manage.py", name))}
    assert found == KEY_VERSION_COMMANDS


@pytest.mark.parametrize("name", sorted(KEY_VERSION_COMMANDS))
def test_version_given_as_a_key_version_is_refused_with_where_the_key_version_goes(name, capsys):
    """Django's --version printed Django's version and exited 0: `key_freeze --version TWIST-v1.0` froze nothing."""
    command = load_command_class(get_commands()[name], name)
    with pytest.raises(SystemExit) as exited:  # from the shell, as an operator types it
        command.run_from_argv(["manage.py", name, "--version", "TWIST-v1.0"])
    assert exited.value.code != 0
    err = capsys.readouterr().err
    assert "--version is not a key version" in err
    parser = command.create_parser("manage.py", name)
    option = next(a for a in parser._actions if (a.dest == "version" or a.metavar == "VERSION")
                  and "--version" not in a.option_strings)
    assert (option.option_strings[0] if option.option_strings else "argument VERSION") in err
    with pytest.raises(CommandError, match="not a key version"):  # and from code
        call_command(name, "--version", "TWIST-v1.0")


def test_version_on_a_command_without_a_key_version_is_refused_too():
    with pytest.raises(CommandError, match="not an option of this command"):
        call_command("import_twist", "--version")


def test_a_command_error_raised_by_a_command_is_a_record_under_json_too():
    printed, message = failing("lapse_build", "--eval-date", "someday", "--json")
    assert printed == {"errors": [{"file": None, "line": None, "field": None, "message": message}]}
    assert "--eval-date must be YYYY-MM-DD" in message


def test_a_management_command_does_not_load_the_admin_and_a_served_page_does(tmp_path):
    """The admin's modules import every app's services and the council's leakage check (scikit-learn):
    about a second of CPU that a command's process no longer pays (settings: SimpleAdminConfig); the
    URLconf registers them, so the admin's pages keep every model."""
    script = (
        "import sys, django; django.setup(); "
        "from django.contrib import admin; import items.management.commands.import_twist; "
        "assert not admin.site._registry and 'keys.jobs' not in sys.modules and 'sklearn' not in sys.modules, "
        "sorted(m for m in sys.modules if m.endswith('.admin')); "
        "import goldkey.urls; assert len(admin.site._registry) >= 20; print('ok')"
    )
    fresh_process_says_ok(script, tmp_path)
