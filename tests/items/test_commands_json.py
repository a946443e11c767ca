"""Import commands under --json: a refused file is every error as a {file, line, field, message} record."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.items.conftest import twist_record
from tests.test_commands import failing

pytestmark = pytest.mark.django_db


def test_a_refused_import_under_json_prints_every_error_as_a_record_and_fails(small_corpus, twist_file):
    path = twist_file([twist_record(1, conv="conv-99"), twist_record(2, speaker="Cy")])
    printed, message = failing("import_twist", str(path), "--json")
    assert printed == {"errors": [
        {"file": "track_b_test.jsonl", "line": 1, "field": "conv", "message": "unknown conversation 'conv-99' (import it with import_locomo first)"},
        {"file": "track_b_test.jsonl", "line": 2, "field": "speaker", "message": "'Cy' is not a participant of conv-1"},
    ]}
    assert "track_b_test.jsonl:1" in message


def test_a_refusal_without_json_prints_nothing_on_stdout(small_corpus, twist_file):
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("import_twist", str(twist_file([twist_record(1, conv="conv-99")])), stdout=out)
    assert out.getvalue() == ""
