"""Sealed releases: a frozen key's bundle is rendered once, at the freeze, and stored; every download and
export serves those bytes. Verification compares the stored bundle with its manifest, and the live rows
it was rendered from with the sealed copy, so that a change made behind Goldkey's back shows.
"""

import hashlib
import json
import os
import secrets
import shutil
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import zstandard
from django.db import transaction

from adjudication.selectors import collector_paused
from goldkey.errors import ApplicationError
from goldkey.lib.batchdb import batch_reads
from goldkey.lib.bulk import bulk_insert
from keys import bundle
from keys.models import GoldKey, Release, ReleaseFile
from keys.selectors import Sealing, bundle_data

MANIFEST = "MANIFEST.sha256"


# Zstandard, zlib and file writes release the GIL: the sealed files are compressed beside the rendering, and
# decompressed and written beside the export's hash check, in this many threads (the machine's cores
# do the rest).
THREADS = 2


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


# How a sealed file is stored: a Zstandard frame at level 1 (bundles are repetitive JSON: 240 MB of
# files take a third of zlib level 1's time to compress and half to decompress, and are stored
# smaller). Releases sealed before hold zlib streams, which never begin with the Zstandard magic
# number (a zlib stream's first byte is 0x78), so each stored file says how to read it and an old
# release stays readable and verifiable byte for byte.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _deflate(content: bytes) -> bytes:
    # A compressor per call: they are not shared between threads. The frame records the content size.
    return zstandard.ZstdCompressor(level=1).compress(content)


def _inflate(content, path: str = "") -> bytes:
    try:
        if bytes(content[:4]) == ZSTD_MAGIC:
            return zstandard.ZstdDecompressor().decompress(content)
        return zlib.decompress(content)  # sealed before the files were stored as Zstandard frames
    except (zstandard.ZstdError, zlib.error) as exc:
        # Only a write behind Goldkey's back stores anything else: a refusal that names the file, not a traceback.
        raise UnreadableFile(path, exc) from exc


class UnreadableFile(ApplicationError):
    def __init__(self, path: str, exc: Exception):
        super().__init__(f"{path}: the stored file is neither a Zstandard frame nor a zlib stream ({exc})")
        self.path = path


@transaction.atomic
def release_seal(*, key: GoldKey, sealing: Sealing | None = None,
                 on_file: Callable[[str, bytes], None] | None = None) -> Release:
    """Render and store the release of a key that has just been frozen (called by the freezing service
    in the same transaction, so a key is never frozen without its release). `sealing`: what the
    freezing service wrote the key's rows from and hashed, in this transaction (otherwise the rows are
    read back and hashed again). `on_file(path, content)`: given each file as soon as it is final (the
    bytes that are compressed and stored), while the next ones are rendered; the files are the release
    only once the freeze commits (a ReleaseFolder stages them until then)."""
    if not key.is_frozen:
        raise ApplicationError(f"key '{key.version}' is a draft; only frozen keys are released")
    if Release.objects.filter(key=key).exists():
        raise ApplicationError(f"key '{key.version}' is already released")
    digests: dict[str, str] = {}
    with ThreadPoolExecutor(THREADS) as pool:
        compressed = {}

        def done(path: str, content: bytes) -> None:  # a file is final: compress it while the next is rendered
            compressed[path] = pool.submit(_deflate, content)
            if on_file is not None:
                on_file(path, content)

        with collector_paused():  # the bundle's data and files are a few hundred thousand acyclic objects
            files = bundle.render(bundle_data(key, sealing=sealing), fmt=bundle.FORMAT, digests=digests, on_file=done)
        release = Release.objects.create(key=key, sha256=digests[MANIFEST], format=bundle.FORMAT)
        # The bulk inserter (COPY on PostgreSQL): tens of megabytes of sealed files as literals in an INSERT
        # cost twice as long there, to quote and to parse.
        bulk_insert(ReleaseFile, (
            {"release_id": release.pk, "path": path, "sha256": digests[path], "size": len(content),
             "content": compressed[path].result()}
            for path, content in files.items()
        ))
    return release


def release_get(key: GoldKey) -> Release:
    release = Release.objects.filter(key=key).first()
    if release is None:
        raise ApplicationError(f"key '{key.version}' has no sealed release")
    return release


def release_format(release: Release) -> int:
    return release.format or 1  # sealed before the format was recorded


def _sealed_rows(key: GoldKey) -> list[tuple[str, bytes]]:
    """(path, stored content) of the key's sealed files, in path order."""
    release = release_get(key)
    with batch_reads():  # a few hundred megabytes of sealed files
        return [
            (path, bytes(content))
            for path, content in ReleaseFile.objects.filter(release=release).order_by("path").values_list("path", "content")
        ]


def _refuse_misplaced(key: GoldKey, paths) -> None:
    """Every sealed file's name is one of the bundle's layout, or nothing is written or served."""
    for path in paths:
        problem = bundle.path_problem(path)
        if problem:
            raise ApplicationError(f"{key.version}: the sealed release holds a file named {path!r}, {problem}: "
                                   "nothing is written or served (run key_verify)")


def _inflate_hashed(content, path: str) -> tuple[bytes, str]:
    data = _inflate(content, path)
    return data, _sha(data)


def release_files(key: GoldKey) -> dict[str, bytes]:
    """The sealed files, byte for byte as they were rendered at the freeze: served only whole (every
    file the sealed manifest lists, with the bytes it lists) and with the bundle's names, else refused."""
    rows = _sealed_rows(key)
    _refuse_misplaced(key, (path for path, _ in rows))
    paths = [path for path, _ in rows]
    with ThreadPoolExecutor(THREADS) as pool:
        read = dict(zip(paths, pool.map(_inflate_hashed, (content for _, content in rows), paths), strict=True))
    _refuse_unless_whole(key, read.get(MANIFEST, (None,))[0], {path: digest for path, (_, digest) in read.items()})
    return {path: data for path, (data, _) in read.items()}


def _refuse_unless_whole(key: GoldKey, manifest: bytes | None, digests: dict[str, str]) -> None:
    drift = manifest_drift(release=release_get(key), manifest=manifest, digests=digests)
    if drift:
        raise ApplicationError(f"{key.version}: the stored release is not whole, nothing is written or served: "
                               + "; ".join(map(str, drift)) + " (run key_verify)")


def release_write(*, key: GoldKey, out: Path, check: Callable[[], None]) -> int:
    """Write the key's sealed files into the folder `out` (created; files already there are replaced),
    and return how many. `check()` runs while the files are decompressed and written in threads, into
    a temporary folder beside `out`: if it raises, that folder is removed and nothing is written into
    `out`; otherwise the files are moved into `out` (a rename, on the same file system)."""
    rows = _sealed_rows(key)  # read here: a thread's database connection would not see this transaction
    _refuse_misplaced(key, (path for path, _ in rows))
    with ReleaseFolder(out) as folder:
        # The largest first, so that the threads finish together.
        for path, content in sorted(rows, key=lambda row: -len(row[1])):
            folder.write(path, content, inflate=True)
        check()
        # Only the whole release: every file the sealed manifest lists, each with the bytes it lists.
        manifest = next((content for path, content in rows if path == MANIFEST), None)
        _refuse_unless_whole(key, None if manifest is None else _inflate(manifest, MANIFEST), folder.digests())
        return folder.publish()


class ReleaseFolder:
    """A release's files written into the folder `out` (created; files already there are replaced):
    `write()` writes each file in a thread into a temporary folder beside `out`, `publish()` waits for
    them and moves them into `out` and returns how many — a new or empty `out` appears whole (one
    rename), into a folder holding files each file is moved by a rename.
    Leaving the `with` block without publishing (an exception: a failed check, a refused freeze)
    removes the temporary folder, and `out` is untouched. `key_freeze --out` writes the files the
    freeze seals as they are rendered, and publishes them once the freeze has committed: the files
    in `out` always belong to a frozen key, and they are the sealed bytes (the objects compressed and
    stored). The threads start with the first write (render's fork comes before it)."""

    def __init__(self, out: Path):
        self.out = Path(out).resolve()  # its parent is a real folder, also for "."
        self.paths: list[str] = []
        self.jobs: list = []

    def __enter__(self) -> "ReleaseFolder":
        self.out.parent.mkdir(parents=True, exist_ok=True)
        # Not tempfile.mkdtemp: its folder is private (0700), and it becomes `out`. os.mkdir takes the
        # umask, as the folders the files go in do, and refuses a name that exists.
        self.staging = self.out.parent / f".{self.out.name}.{os.getpid()}-{secrets.token_hex(4)}.partial"
        self.staging.mkdir()
        self.pool = ThreadPoolExecutor(THREADS)
        return self

    def write(self, path: str, content: bytes, *, inflate: bool = False) -> None:
        """Write `content` (stored, with `inflate`: decompressed first) as the file `path`, in a thread.
        A name outside the bundle's layout is refused: it would be written outside the folder."""
        problem = bundle.path_problem(path)
        if problem:
            raise ApplicationError(f"a release file named {path!r} is not written: {problem}")
        self.paths.append(path)
        self.jobs.append(self.pool.submit(self._write, path, content, inflate))

    def _write(self, path: str, content: bytes, inflate: bool) -> str | None:
        target = self.staging / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = _inflate(content, path) if inflate else content
        target.write_bytes(data)
        # A stored file is hashed as it is written, for the check against the manifest (digests()).
        return _sha(data) if inflate else None

    def digests(self) -> dict[str, str | None]:
        """Each written file's SHA-256 (stored files only: a rendered file is the manifest's source)."""
        return {path: job.result() for path, job in zip(self.paths, self.jobs, strict=True)}

    def publish(self) -> int:
        for job in self.jobs:
            job.result()
        _move_into(self.staging, self.out, self.paths)
        return len(self.paths)

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(cancel_futures=exc[0] is not None)
        shutil.rmtree(self.staging, ignore_errors=True)


def _move_into(staging: Path, out: Path, paths: list[str]) -> None:
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        if out.exists():
            out.rmdir()
        staging.rename(out)  # one rename: the folder appears whole
        return
    for path in paths:  # a folder that already holds files: each file replaced by a rename
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / path, target)


@dataclass
class Drift:
    where: str  # "release" (the stored bundle), "entries" (the key rows) or "live" (rows the release came from)
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.path}: {self.detail}"


def _records(path: str, content: bytes) -> dict[str, str] | None:
    """A file's records by id, for naming what changed (None: not a record file)."""
    text = content.decode("utf-8", errors="replace")
    if path.endswith(".jsonl"):
        out = {}
        for n, line in enumerate(text.splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:
                return None
            if not isinstance(record, dict):
                out[str(n)] = line
                continue
            name = str(record.get("id", record.get("item", n)))
            # The trail's tables hold one row per annotator (or council member) and item.
            who = record.get("annotator", record.get("member"))
            out[f"{who}:{name}" if who is not None else name] = line
        return out
    if path.endswith(".json"):
        try:
            document = json.loads(text)
        except ValueError:
            return None
        for field in ("answers", "decisions"):
            if isinstance(document, dict) and isinstance(document.get(field), dict):
                return {k: json.dumps(v, sort_keys=True) for k, v in document[field].items()}
    return None


def _what_changed(path: str, sealed: bytes, live: bytes) -> str:
    before, after = _records(path, sealed), _records(path, live)
    if before is None or after is None:
        return "content differs from the sealed copy"
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
    return f"{len(changed)} record(s) differ from the sealed copy: {shown}"


def manifest_drift(*, release: Release, manifest: bytes | None, digests: dict[str, str],
                   recorded: dict[str, str] | None = None) -> list[Drift]:
    """Stored files against the sealed manifest: `digests` is each stored file's SHA-256 (MANIFEST.sha256
    itself is checked against the release's hash); `recorded`, the hashes the file rows record, if read."""
    drift: list[Drift] = []
    if manifest is None:
        drift.append(Drift("release", MANIFEST, "missing"))
    elif _sha(manifest) != release.sha256:
        drift.append(Drift("release", MANIFEST, "does not match the release hash recorded at the freeze"))
    listed = {}
    for line in (manifest or b"").decode("utf-8", errors="replace").splitlines():
        digest, _, path = line.partition("  ")
        listed[path] = digest
    for path, digest in digests.items():
        if path == MANIFEST:
            continue
        if path not in listed:
            drift.append(Drift("release", path, "stored but not listed in MANIFEST.sha256"))
        elif listed[path] != digest or (recorded is not None and recorded.get(path) != digest):
            drift.append(Drift("release", path, "stored bytes do not match MANIFEST.sha256"))
    for path in sorted(set(listed) - set(digests)):
        drift.append(Drift("release", path, "listed in MANIFEST.sha256 but missing"))
    return drift


def release_drift(*, key: GoldKey, render_live: bool = True) -> list[Drift]:
    """Everything that no longer matches the sealed release: stored files against their manifest (a name
    outside the bundle's layout, a file that cannot be read), and the live rows (items, answers,
    decisions, council votes, entries) re-rendered against the sealed copy (`render_live`: False when
    rows they name are gone, which the renderer cannot read around)."""
    release = release_get(key)
    drift: list[Drift] = []
    files: dict[str, bytes] = {}
    for path, content in _sealed_rows(key):
        problem = bundle.path_problem(path)
        if problem:
            drift.append(Drift("release", repr(path), f"a stored file's name {problem}"))
            continue
        try:
            files[path] = _inflate(content, path)
        except UnreadableFile as exc:
            drift.append(Drift("release", path, exc.message.removeprefix(f"{path}: ")))
    stored = dict(ReleaseFile.objects.filter(release=release).values_list("path", "sha256"))
    readable = {path: _sha(content) for path, content in files.items()}
    # An unreadable or misplaced file was named above, not again as missing.
    drift += [d for d in manifest_drift(release=release, manifest=files.get(MANIFEST), digests=readable, recorded=stored)
              if not (d.detail.startswith("listed in") and d.path in stored)]
    if not render_live:  # the caller found rows the release was rendered from gone, and named them
        return [*drift, Drift("live", "*", "not compared: rows the release was rendered from no longer exist")]
    try:
        live = bundle.render(bundle_data(key), fmt=release_format(release))
    except ApplicationError as exc:  # the entries no longer match the key's hash
        return [*drift, Drift("entries", "key.jsonl", exc.message)]
    except LookupError as exc:  # a row the others name is gone: a report, not a traceback
        return [*drift, Drift("live", "*", f"cannot be re-rendered: a row the release names is gone ({exc!r})")]
    for path in sorted(set(files) | (set(live) - set(stored))):  # an unreadable file is named above
        if path == MANIFEST:
            continue
        if path not in live:
            drift.append(Drift("live", path, "no longer produced from the live rows"))
        elif path not in files:
            drift.append(Drift("live", path, "produced from the live rows but not in the sealed release"))
        elif live[path] != files[path]:
            drift.append(Drift("live", path, _what_changed(path, files[path], live[path])))
    return drift
