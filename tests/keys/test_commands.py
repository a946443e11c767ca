"""The key commands, as spelled in the issue, including their exit codes."""

import json
from io import StringIO
from unittest import mock

import pytest
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from keys.models import Erratum, GoldKey, KeyEntry

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def exit_code(*args) -> int:
    """Run a command as `manage.py` does (CommandError -> exit status), in-process on the test database.
    run_from_argv closes every connection when done; keep the test transaction open."""
    with mock.patch.object(connections, "close_all"):
        try:
            ManagementUtility(["manage.py", *args]).execute()
        except SystemExit as exc:
            return exc.code
    return 0


def test_key_freeze_refuses_and_lists_undecided_items(key_campaign, author):
    with pytest.raises(CommandError, match="s-0001, s-0004"):
        run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author")


def test_key_freeze_dry_run_writes_nothing(decided, author):
    result = json.loads(run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", "--dry-run", "--json"))
    assert result["entries"] == 8 and result["dry_run"]
    assert not GoldKey.objects.exists()


def test_key_freeze_freezes_and_reports_the_hash(decided, author):
    out = run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author")
    key = GoldKey.objects.get(version="K-v1.0")
    assert key.is_frozen and key.sha256 in out and "8 items" in out


def test_key_verify_exits_zero_on_a_match_and_non_zero_on_a_mismatch(decided, author, capsys):
    run("key_freeze", "small", "--key-version", "K-draft", "--by", "author", "--draft")
    assert exit_code("key_verify", "K-draft") == 0
    KeyEntry.objects.filter(key__version="K-draft", external_id="s-0002").update(family="tampered")
    assert exit_code("key_verify", "K-draft") == 1
    assert "the entries hash to" in capsys.readouterr().err


def test_erratum_file_prints_the_id_and_erratum_decide_records_the_decision(frozen_key, outsider, author):
    out = run("erratum_file", frozen_key.version, "--item", "s-0000", "--kind", "relabel", "--value", "aligned",
              "--description", "the draft asks, it does not claim", "--by", "outsider")
    erratum = Erratum.objects.get()
    assert out.strip() == str(erratum.pk)
    run("erratum_decide", str(erratum.pk), "--accept", "--note", "agreed", "--by", "author")
    erratum.refresh_from_db()
    assert erratum.status == "accepted" and erratum.decision_note == "agreed" and erratum.decided_by == author


def test_erratum_decide_refuses_non_authors(frozen_key, outsider):
    erratum_id = run("erratum_file", frozen_key.version, "--item", "s-0000", "--kind", "drop",
                     "--description", "x", "--by", "outsider").strip()
    with pytest.raises(CommandError, match="only authors"):
        run("erratum_decide", erratum_id, "--reject", "--note", "no", "--by", "outsider")


def test_key_derive_creates_the_next_version_with_its_changelog(frozen_key, outsider, author):
    erratum_id = run("erratum_file", frozen_key.version, "--item", "s-0000", "--kind", "drop",
                     "--description", "x", "--by", "outsider").strip()
    run("erratum_decide", erratum_id, "--accept", "--note", "ok", "--by", "author")
    out = run("key_derive", frozen_key.version, "--key-version", "TWIST-test-v1.1", "--by", "author")
    assert "1 change(s)" in out and "s-0000: drop" in out
    assert GoldKey.objects.get(version="TWIST-test-v1.1").entries.count() == 7


def test_key_export_refuses_drafts(decided, author, tmp_path):
    run("key_freeze", "small", "--key-version", "K-draft", "--by", "author", "--draft")
    with pytest.raises(CommandError, match="draft"):
        run("key_export", "K-draft", "--out", str(tmp_path))


def test_key_export_refuses_a_key_whose_entries_no_longer_match_its_hash(frozen_key, tmp_path):
    from keys import triggers as key_triggers

    key_triggers.uninstall(connection)  # what only a database superuser could do
    try:
        KeyEntry.objects.filter(key=frozen_key, external_id="s-0002").update(gold="aligned")
    finally:
        key_triggers.install(connection)
    assert exit_code("key_verify", frozen_key.version) == 1
    # The files are written while the entries are checked: on a failed check none of them is left,
    # neither in the output folder nor in a temporary folder beside it.
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "key.jsonl").write_bytes(b"an earlier export\n")
    for out in (tmp_path / "new", tmp_path / "earlier"):
        with pytest.raises(CommandError, match="do not match the recorded hash"):
            run("key_export", frozen_key.version, "--out", str(out))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["earlier", "earlier/key.jsonl"]
    assert (tmp_path / "earlier" / "key.jsonl").read_bytes() == b"an earlier export\n"


def test_key_export_writes_the_sealed_files_into_a_new_or_an_existing_folder(frozen_key, tmp_path):
    from keys.releases import release_files

    sealed = release_files(frozen_key)
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "key.jsonl").write_bytes(b"an earlier export\n")
    (tmp_path / "earlier" / "notes.txt").write_bytes(b"not the bundle's\n")
    (tmp_path / "empty").mkdir()
    for name in ("new/deeper", "earlier", "empty"):
        run("key_export", frozen_key.version, "--out", str(tmp_path / name))
        written = {p.relative_to(tmp_path / name).as_posix(): p.read_bytes()
                   for p in (tmp_path / name).rglob("*") if p.is_file()}
        assert written == sealed | ({"notes.txt": b"not the bundle's\n"} if name == "earlier" else {})
    # No temporary folder left beside them, and the new folder as open as a folder made by mkdir.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier", "empty", "new"]
    (tmp_path / "made").mkdir()
    assert (tmp_path / "new" / "deeper").stat().st_mode == (tmp_path / "made").stat().st_mode
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["deeper"]


def _folder(path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_key_freeze_with_out_writes_the_release_key_export_writes_byte_for_byte(decided, author, tmp_path):
    from keys.releases import release_files

    out = run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", "--out", str(tmp_path / "freeze"))
    key = GoldKey.objects.get(version="K-v1.0")
    assert key.is_frozen and f"files written to {tmp_path / 'freeze'}" in out
    run("key_export", "K-v1.0", "--out", str(tmp_path / "export"))
    written = _folder(tmp_path / "freeze")
    assert written == _folder(tmp_path / "export") == release_files(key)
    assert len(written) > 10 and "MANIFEST.sha256" in written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "freeze"]  # no staging folder left


def test_key_freeze_with_out_reports_the_files_in_its_json(decided, author, tmp_path):
    result = json.loads(run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author",
                            "--out", str(tmp_path / "r"), "--json"))
    assert result["files"] == len(_folder(tmp_path / "r")) and result["out"] == str(tmp_path / "r")


def test_key_freeze_with_out_is_refused_with_draft_or_dry_run_and_writes_nothing(decided, author, tmp_path):
    for flag in ("--draft", "--dry-run"):
        with pytest.raises(CommandError, match="not with --draft or --dry-run"):
            run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", flag, "--out", str(tmp_path / "r"))
    assert not GoldKey.objects.exists() and not any(tmp_path.iterdir())


def test_a_refused_freeze_with_out_writes_no_folder(key_campaign, author, tmp_path):
    with pytest.raises(CommandError, match="s-0001, s-0004"):
        run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", "--out", str(tmp_path / "r"))
    assert not any(tmp_path.iterdir())


def test_a_freeze_into_a_folder_that_cannot_be_made_is_refused_before_anything_is_frozen(decided, author, tmp_path):
    (tmp_path / "taken").write_bytes(b"a file, not a folder\n")
    with pytest.raises(CommandError, match=r"cannot write the release into .*taken/r .*nothing was frozen"):
        run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", "--out", str(tmp_path / "taken" / "r"))
    assert not GoldKey.objects.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_a_release_that_cannot_be_moved_into_place_says_the_key_is_frozen_and_how_to_export_it(decided, author, tmp_path):
    (tmp_path / "r" / "key.jsonl" / "in the way").mkdir(parents=True)  # a folder where a file goes
    with pytest.raises(CommandError, match=r"K-v1.0 is frozen and its release sealed, but writing it to .* failed .*key_export K-v1.0"):
        run("key_freeze", "small", "--key-version", "K-v1.0", "--by", "author", "--out", str(tmp_path / "r"))
    assert GoldKey.objects.get(version="K-v1.0").is_frozen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary folder left beside it


def test_the_files_a_freeze_hands_out_are_written_as_they_are_rendered_and_are_the_stored_release(decided, author):
    from annotation.models import Campaign
    from keys.releases import release_files
    from keys.services import key_freeze

    handed = []
    key = key_freeze(campaign=Campaign.objects.get(slug="small"), version="K-v1.0", user=author,
                     on_sealed_file=lambda path, content: handed.append((path, content)))
    assert dict(handed) == release_files(key) and len(handed) == len(dict(handed))  # each file once
    assert handed[0][0] == "key.jsonl" and handed[-1][0] == "MANIFEST.sha256"  # in the order they were final
