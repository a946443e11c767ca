"""A sealed release is written and served only whole and only inside its folder: a stored file row
changed behind Goldkey's back (a name that climbs out, a file removed, cut short or stored in another
encoding) makes key_export exit non-zero writing nothing, the zip refuse, and key_verify name it."""

import hashlib
import zlib
from io import StringIO

import pytest
import zstandard
from django.core.management import call_command
from django.core.management.base import CommandError

from keys.models import Release, ReleaseFile
from keys.releases import release_files
from tests.keys.test_releases import behind_goldkeys_back, verify

pytestmark = pytest.mark.django_db

HOSTILE_NAMES = ["../../escaped.txt", "/tmp/goldkey-absolute.txt", "annotation/../../up.txt", "hf/deeper/x.json",
                 "elsewhere/x.json", "annotation\\..\\..\\win.txt", "a\x01b.txt"]


def _add_file(key, path: str, content: bytes = b"planted\n") -> None:
    release = Release.objects.get(key=key)
    behind_goldkeys_back(
        "INSERT INTO keys_releasefile (release_id, path, sha256, size, content) VALUES (%s, %s, %s, %s, %s)",
        [release.pk, path, hashlib.sha256(content).hexdigest(), len(content), zstandard.ZstdCompressor().compress(content)],
    )


def _replace_content(key, path: str, stored: bytes) -> None:
    behind_goldkeys_back("UPDATE keys_releasefile SET content = %s WHERE release_id = %s AND path = %s",
                         [stored, Release.objects.get(key=key).pk, path])


def _export_refused(key, out, match: str) -> str:
    with pytest.raises(CommandError, match=match) as refused:
        call_command("key_export", key.version, "--out", str(out), stdout=StringIO())
    return str(refused.value)


def _nothing_written(tmp_path) -> None:
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == []


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_stored_file_named_outside_the_layout_is_refused_by_export_and_zip_and_named_by_verify(
        frozen_key, tmp_path, client, name):
    _add_file(frozen_key, name)
    work = tmp_path / "work"
    work.mkdir()
    _export_refused(frozen_key, work / "out" / "release", "nothing is written")
    _nothing_written(work)
    assert not (tmp_path / "escaped.txt").exists() and not (work / "up.txt").exists()
    response = client.get(f"/keys/{frozen_key.version}/download.zip")
    assert response.status_code == 400 and b"PK" not in response.content[:2]
    code, message = verify(frozen_key.version)
    assert code == 1 and f"release: {name!r}: a stored file's name" in message


def test_the_layouts_own_names_are_all_written(frozen_key, tmp_path):
    out = tmp_path / "out"
    call_command("key_export", frozen_key.version, "--out", str(out), stdout=StringIO())
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert written == set(release_files(frozen_key)) and any("/" in path for path in written)


def test_an_export_with_a_listed_file_missing_exits_non_zero_and_writes_nothing(frozen_key, tmp_path):
    behind_goldkeys_back("DELETE FROM keys_releasefile WHERE release_id = %s AND path = %s",
                         [Release.objects.get(key=frozen_key).pk, "stats.json"])
    message = _export_refused(frozen_key, tmp_path / "out", "not whole")
    assert "stats.json: listed in MANIFEST.sha256 but missing" in message
    _nothing_written(tmp_path)
    code, message = verify(frozen_key.version)
    assert code == 1 and "release: stats.json: listed in MANIFEST.sha256 but missing" in message


def test_an_export_with_a_file_cut_short_exits_non_zero_and_writes_nothing(frozen_key, tmp_path):
    sealed = release_files(frozen_key)["candidates.jsonl"]
    _replace_content(frozen_key, "candidates.jsonl", zstandard.ZstdCompressor().compress(sealed[: len(sealed) // 2]))
    message = _export_refused(frozen_key, tmp_path / "out", "not whole")
    assert "candidates.jsonl: stored bytes do not match MANIFEST.sha256" in message
    _nothing_written(tmp_path)


def test_an_export_with_a_file_the_manifest_does_not_list_exits_non_zero(frozen_key, tmp_path):
    _add_file(frozen_key, "annotation/planted.json")
    message = _export_refused(frozen_key, tmp_path / "out", "not whole")
    assert "annotation/planted.json: stored but not listed in MANIFEST.sha256" in message
    _nothing_written(tmp_path)


def test_an_export_without_its_manifest_exits_non_zero_and_writes_nothing(frozen_key, tmp_path):
    behind_goldkeys_back("DELETE FROM keys_releasefile WHERE release_id = %s AND path = %s",
                         [Release.objects.get(key=frozen_key).pk, "MANIFEST.sha256"])
    assert "MANIFEST.sha256: missing" in _export_refused(frozen_key, tmp_path / "out", "not whole")
    _nothing_written(tmp_path)


@pytest.mark.parametrize("stored", [b"neither zstd nor zlib", zlib.compress(b"{}")[:-3], b"\x28\xb5\x2f\xfd garbage"])
def test_a_stored_file_in_an_unexpected_encoding_is_reported_by_verify_and_refused_by_export(frozen_key, tmp_path, client, stored):
    _replace_content(frozen_key, "stats.json", stored)
    code, message = verify(frozen_key.version)  # a report, not a zlib.error traceback
    assert code == 1 and "release: stats.json: the stored file is neither a Zstandard frame nor a zlib stream" in message
    _export_refused(frozen_key, tmp_path / "out", "stats.json: the stored file is neither")
    _nothing_written(tmp_path)
    assert client.get(f"/keys/{frozen_key.version}/download.zip").status_code == 400


def test_the_zip_of_an_untouched_release_holds_only_the_layouts_names_under_its_folder(frozen_key, client):
    import io
    import zipfile

    response = client.get(f"/keys/{frozen_key.version}/download.zip")
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert names and all(n.startswith(f"{frozen_key.version}/") and ".." not in n.split("/") for n in names)
    assert ReleaseFile.objects.filter(release__key=frozen_key).count() == len(names)
