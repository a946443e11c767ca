"""Sealed releases: rendered once at the freeze, the same bytes forever; key_verify names any drift."""

import hashlib
import json
import zlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction

from adjudication.models import Decision
from annotation.models import Answer
from items.models import Item
from keys import bundle, triggers
from keys.models import Release, ReleaseFile
from keys.releases import release_files
from keys.selectors import bundle_data
from keys.services import erratum_decide, erratum_file, key_build, key_derive, key_freeze, key_freeze_draft

pytestmark = pytest.mark.django_db


def export(version, out) -> dict[str, bytes]:
    call_command("key_export", version, "--out", str(out), stdout=StringIO())
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def verify(version) -> tuple[int, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("key_verify", version, stdout=out, stderr=err)
    except CommandError as exc:
        return 1, str(exc)
    return 0, out.getvalue()


def behind_goldkeys_back(sql, params):
    """What only a database superuser can do: lift the triggers, write, put them back."""
    triggers.uninstall(connection)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    finally:
        triggers.install(connection)


def test_freezing_seals_a_release_whose_hash_is_its_manifests(frozen_key):
    release = Release.objects.get(key=frozen_key)
    files = release_files(frozen_key)
    assert release.sha256 == hashlib.sha256(files["MANIFEST.sha256"]).hexdigest()
    listed = dict(reversed(line.split("  ")) for line in files["MANIFEST.sha256"].decode().splitlines())
    assert set(listed) == set(files) - {"MANIFEST.sha256"}
    assert all(listed[path] == hashlib.sha256(content).hexdigest() for path, content in files.items() if path in listed)


def test_a_download_is_the_sealed_bytes_with_the_release_hash_as_etag(client, frozen_key):
    first = client.get(f"/keys/{frozen_key.version}/download.zip")
    second = client.get(f"/keys/{frozen_key.version}/download.zip")
    release = Release.objects.get(key=frozen_key)
    assert first.status_code == 200 and first.content == second.content
    assert first["ETag"] == f'"{release.sha256}"' and "immutable" in first["Cache-Control"]
    assert "no-store" not in first["Cache-Control"]  # its own header, not the site's default for other answers
    assert client.get(f"/keys/{frozen_key.version}/download.zip", HTTP_IF_NONE_MATCH=f'"{release.sha256}"').status_code == 304


def test_an_erratum_filed_later_leaves_the_release_alone_and_joins_the_line_feed(client, frozen_key, outsider, tmp_path):
    before = export(frozen_key.version, tmp_path / "before")
    erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="not self-contained", user=outsider)
    assert export(frozen_key.version, tmp_path / "after") == before
    feed = [json.loads(line) for line in client.get(f"/keys/{frozen_key.version}/errata.jsonl").content.splitlines()]
    assert [(e["item"], e["status"]) for e in feed] == [("s-0000", "filed")]
    assert verify(frozen_key.version)[0] == 0


def test_a_derived_version_chains_to_its_parents_hash_and_the_parent_stays_byte_identical(frozen_key, outsider, author, tmp_path):
    before = export(frozen_key.version, tmp_path / "before")
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    assert export(frozen_key.version, tmp_path / "after") == before
    stats = json.loads(release_files(child)["stats.json"])
    assert stats["parent"] == frozen_key.version and stats["parent_sha256"] == frozen_key.sha256
    assert [json.loads(line)["id"] for line in release_files(child)["errata.jsonl"].splitlines()] == [erratum.pk]
    assert verify(child.version)[0] == 0


def test_release_rows_cannot_be_changed_or_deleted(frozen_key):
    release = Release.objects.get(key=frozen_key)
    for write in (
        lambda: ReleaseFile.objects.filter(release=release).update(content=b"x"),
        lambda: ReleaseFile.objects.filter(release=release).delete(),
        lambda: Release.objects.filter(pk=release.pk).update(sha256="0" * 64),
    ):
        with pytest.raises(IntegrityError, match="sealed releases never change"), transaction.atomic():
            write()


def test_a_raw_edit_of_an_items_draft_makes_key_verify_fail_naming_it(frozen_key):
    item = Item.objects.get(external_id="s-0002")
    content = json.dumps({**item.content, "draft": "a quietly different draft"})
    behind_goldkeys_back("UPDATE items_item SET content = %s WHERE id = %s", [content, item.pk])
    code, message = verify(frozen_key.version)
    assert code == 1
    assert "live: candidates.jsonl: 1 record(s) differ from the sealed copy: s-0002" in message
    assert "live: hf/test.jsonl" in message


def test_a_raw_edit_of_an_answer_makes_key_verify_fail_naming_the_file_and_item(frozen_key):
    answer = Answer.objects.filter(
        assignment__enrollment__campaign=frozen_key.campaign, assignment__enrollment__pseudonym="B",
        assignment__item__external_id="s-0003",
    ).get()
    behind_goldkeys_back('UPDATE annotation_answer SET "values" = %s WHERE id = %s', ['{"q1": "cannot-tell"}', answer.pk])
    code, message = verify(frozen_key.version)
    assert code == 1 and "live: annotation/answers_B.json: 1 record(s) differ from the sealed copy: s-0003" in message
    assert "live: annotation/tables/answers.jsonl: 1 record(s) differ from the sealed copy: B:s-0003" in message


def test_a_raw_edit_of_a_decision_note_makes_key_verify_fail_naming_it(frozen_key):
    decision = Decision.objects.get(campaign=frozen_key.campaign, item__external_id="s-0001")
    behind_goldkeys_back("UPDATE adjudication_decision SET note = %s WHERE id = %s", ["rewritten later", decision.pk])
    code, message = verify(frozen_key.version)
    assert code == 1
    assert "live: annotation/adjudication_decisions.json: 1 record(s) differ from the sealed copy: s-0001" in message
    assert "live: annotation/tables/decisions.jsonl: 1 record(s) differ from the sealed copy: s-0001" in message


def test_a_tampered_stored_file_fails_against_the_manifest(frozen_key):
    import zlib

    release = Release.objects.get(key=frozen_key)
    behind_goldkeys_back(
        "UPDATE keys_releasefile SET content = %s WHERE release_id = %s AND path = %s",
        [zlib.compress(b"{}"), release.pk, "stats.json"],
    )
    code, message = verify(frozen_key.version)
    assert code == 1 and "release: stats.json: stored bytes do not match MANIFEST.sha256" in message


@pytest.mark.realdata
def test_two_exports_of_twist_v1_0_before_and_after_deriving_v1_1_are_byte_identical(twist_decided, author, outsider, tmp_path):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    assert key.entries.count() == 161
    before = export("TWIST-v1.0", tmp_path / "before")
    erratum = erratum_file(key=key, item_external_id=key.entries.order_by("external_id").first().external_id,
                           kind="drop", description="an erratum filed after the freeze", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
    key_derive(parent=key, version="TWIST-v1.1", user=author)
    assert export("TWIST-v1.0", tmp_path / "after") == before
    assert verify("TWIST-v1.0")[0] == 0 and verify("TWIST-v1.1")[0] == 0


def reseal_behind_goldkeys_back(key, files: dict[str, bytes], fmt) -> None:
    """Replace a release's stored files as a database sealed by older code would hold them."""
    triggers.uninstall(connection)
    try:
        release = Release.objects.get(key=key)
        ReleaseFile.objects.filter(release=release).delete()
        ReleaseFile.objects.bulk_create(
            ReleaseFile(release=release, path=path, sha256=hashlib.sha256(content).hexdigest(), size=len(content),
                        content=zlib.compress(content))
            for path, content in files.items()
        )
        Release.objects.filter(pk=release.pk).update(sha256=hashlib.sha256(files["MANIFEST.sha256"]).hexdigest(), format=fmt)
    finally:
        triggers.install(connection)


def test_a_release_sealed_in_the_first_format_still_verifies_against_that_format(frozen_key):
    first = bundle.render(bundle_data(frozen_key), fmt=1)
    assert "croissant.json" not in first and "CITATION.cff" not in first
    assert first["hf/README.md"].startswith(b"---\nlicense: cc-by-4.0\n")  # the header as it was written then
    reseal_behind_goldkeys_back(frozen_key, first, None)  # sealed before the format was recorded
    assert release_files(frozen_key) == first
    code, message = verify(frozen_key.version)
    assert code == 0, message
    # Checked against the current format instead, the same release would look drifted: the format matters.
    reseal_behind_goldkeys_back(frozen_key, first, 2)
    code, message = verify(frozen_key.version)
    assert code == 1 and "live: croissant.json: produced from the live rows but not in the sealed release" in message


def test_a_release_stored_as_zlib_streams_stays_readable_verifiable_and_exportable(frozen_key, tmp_path):
    from keys.releases import ZSTD_MAGIC

    sealed = release_files(frozen_key)
    stored = dict(ReleaseFile.objects.filter(release__key=frozen_key).values_list("path", "content"))
    assert stored and all(bytes(content)[:4] == ZSTD_MAGIC for content in stored.values())  # a new release
    # As releases sealed before the Zstandard frames hold their files: zlib streams at level 1.
    triggers.uninstall(connection)
    try:
        for path, content in sealed.items():
            ReleaseFile.objects.filter(release__key=frozen_key, path=path).update(content=zlib.compress(content, 1))
    finally:
        triggers.install(connection)
    stored = dict(ReleaseFile.objects.filter(release__key=frozen_key).values_list("path", "content"))
    assert all(bytes(content)[:1] == b"\x78" and bytes(content) == zlib.compress(sealed[path], 1) for path, content in stored.items())
    assert release_files(frozen_key) == sealed
    code, message = verify(frozen_key.version)
    assert code == 0, message
    assert export(frozen_key.version, tmp_path / "out") == sealed


def test_a_new_release_records_the_current_format(frozen_key):
    assert Release.objects.get(key=frozen_key).format == bundle.FORMAT == 3
    with pytest.raises(ValueError, match="unknown release format 4"):
        bundle.render(bundle_data(frozen_key), fmt=4)


def test_a_release_sealed_in_the_second_format_still_verifies_without_the_content_descriptions(frozen_key):
    second, third = bundle.render(bundle_data(frozen_key), fmt=2), bundle.render(bundle_data(frozen_key), fmt=3)
    assert b'"description": "The generated message' not in second["croissant.json"]
    assert b'"description": "The generated message' in third["croissant.json"]
    # Beside croissant.json (and the manifest that lists its hash), format 3 adds the leakage audit's file
    # and its datasheet section; nothing else differs between the two formats.
    assert {path for path in third if second.get(path) != third[path]} == {
        "croissant.json", "MANIFEST.sha256", "leakage.json", "datasheet.md"}
    reseal_behind_goldkeys_back(frozen_key, second, 2)  # as a key frozen before the descriptions was sealed
    code, message = verify(frozen_key.version)
    assert code == 0, message
    reseal_behind_goldkeys_back(frozen_key, second, 3)  # checked against the current format, it would drift
    code, message = verify(frozen_key.version)
    assert code == 1 and "live: croissant.json" in message


def _plain(key) -> dict[str, bytes]:
    """The release rendered from the key's rows alone, as key_verify re-renders it."""
    return bundle.render(bundle_data(key))


def test_a_release_sealed_from_the_freezes_own_data_is_the_release_the_rows_give(frozen_key, outsider, author):
    # key_freeze seals from what it wrote the rows from (entry records, key bytes, evidence), key_derive
    # from its derived entries: both must be the plain path's bytes, file by file.
    assert release_files(frozen_key) == _plain(frozen_key)
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    assert release_files(child) == _plain(child)
    assert release_files(child)["key.jsonl"] != release_files(frozen_key)["key.jsonl"]


def test_a_draft_frozen_as_reviewed_seals_the_release_the_rows_give(key_campaign, author):
    from tests.adjudication.conftest import decide

    decide(key_campaign, "s-0001", "relabel", author, new_gold="aligned")
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    key = key_freeze_draft(key=draft, user=author)
    files = release_files(key)
    assert files == _plain(key)
    relabelled = [json.loads(line) for line in files["key.jsonl"].splitlines() if b'"s-0001"' in line]
    assert [(r["type"], r["provenance"]) for r in relabelled] == [("aligned", "relabelled")]


def test_a_release_rendered_with_its_large_part_in_a_forked_process_is_the_release_rendered_in_one(frozen_key, monkeypatch, caplog, settings):
    from goldkey.lib import forked

    forks = []

    class Recorded(forked.in_fork):
        def __init__(self, function, *, fork=True):
            super().__init__(function, fork=fork)
            forks.append(self.pid)

    monkeypatch.setattr(bundle, "in_fork", Recorded)
    settings.GOLDKEY_FORK_FROM_ROWS = 10**9
    data = bundle_data(frozen_key)
    alone_digests: dict[str, str] = {}
    alone = bundle.render(data, digests=alone_digests)
    settings.GOLDKEY_FORK_FROM_ROWS = 0
    forked_digests: dict[str, str] = {}
    seen = []
    beside = bundle.render(data, digests=forked_digests, on_file=lambda path, content: seen.append(path))
    assert forks[0] is None and forks[1] is not None  # the second render forked
    assert beside == alone == release_files(frozen_key)
    assert forked_digests == alone_digests == {path: hashlib.sha256(content).hexdigest() for path, content in alone.items()}
    assert sorted(seen) == sorted(alone)  # every file handed on once
    # In the first format too (no Croissant columns come back).
    first_forked = bundle.render(data, fmt=1)
    settings.GOLDKEY_FORK_FROM_ROWS = 10**9
    assert first_forked == bundle.render(data, fmt=1)
    assert [pid is not None for pid in forks] == [False, True, True, False]
    assert not [r for r in caplog.records if r.name == "goldkey.lib.forked"]  # the children's values, not the parent's
