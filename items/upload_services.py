"""Imports from uploaded files (the admin's "Import items…" page).

An upload is saved to a private temporary folder and the same importers as the commands run on it,
so it is validated, refused and written exactly alike."""

import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.utils.module_loading import import_string

import protocols
from goldkey.lib.jsonio import ImportFailed
from items.parsing import LOCOMO_FILE
from items.services import ImportReport, corpus_import_locomo

# The corpus, then one kind per protocol (each spec names the service that imports its items).
CORPUS = "locomo"
UPLOAD_KINDS = (CORPUS, *(spec.item_kind for spec in protocols.specs()))
MAX_ARCHIVE_BYTES = 500 * 1024 * 1024


@dataclass
class Upload:
    """An uploaded file as the service needs it: the user's file name and its bytes in chunks."""

    name: str
    chunks: Iterable[bytes]


def _save_upload(upload: Upload, folder: Path) -> Path:
    # Only the base name: a browser may send a path, and errors should name the file the user chose.
    name = Path(upload.name.replace("\\", "/")).name or "upload"
    target = folder / name
    with target.open("wb") as out:
        for chunk in upload.chunks:
            out.write(chunk)
    return target


def _extract_locomo_archive(archive: Path, folder: Path) -> Path:
    """The conversation files of a LoCoMo zip (any folder depth), flattened into `folder`."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [
                m for m in zipped.infolist()
                if not m.is_dir() and "__MACOSX" not in m.filename and Path(m.filename).suffix == ".json"
            ]
            if sum(m.file_size for m in members) > MAX_ARCHIVE_BYTES:
                raise ImportFailed([f"{archive.name}: the archive unpacks to more than {MAX_ARCHIVE_BYTES >> 20} MB"])
            conversations = [m for m in members if LOCOMO_FILE.match(Path(m.filename).name)]
            chosen = conversations or members
            if not chosen:
                raise ImportFailed([f"{archive.name}: no .json conversation files in this archive"])
            if not conversations and len(chosen) > 1:
                names = ", ".join(Path(m.filename).name for m in chosen)
                raise ImportFailed([f"{archive.name}: expected 26.json-style files or one locomo10.json, found {names}"])
            seen: set[str] = set()
            for member in chosen:
                name = Path(member.filename).name
                if name in seen:
                    raise ImportFailed([f"{archive.name}: {name} appears twice in the archive"])
                seen.add(name)
                (folder / name).write_bytes(zipped.read(member))
    except zipfile.BadZipFile as exc:
        raise ImportFailed([f"{archive.name}: not a zip archive ({exc})"]) from exc
    return folder if conversations else folder / Path(chosen[0].filename).name


def upload_import(
    *, kind: str, upload: Upload, item_set_name: str = "", rejects: Upload | None = None, license: str = "",
    dry_run: bool = False,
) -> ImportReport:
    """Import an uploaded file: LoCoMo (zip of conversation files, one 26.json, or locomo10.json), or
    one protocol's items file through the importer its spec names (TWIST Track B JSONL with optional
    generation rejects, Lapse JSONL), recorded under `license` (blank: the corpus's or benchmark's own)."""
    if kind not in UPLOAD_KINDS:
        raise ImportFailed([f"unknown import kind '{kind}'"])
    if kind != CORPUS and not item_set_name.strip():
        raise ImportFailed([f"an item set name is required for {protocols.for_kind(kind).item_kind_label} items"])
    with tempfile.TemporaryDirectory(prefix="goldkey-upload-") as tmp:
        folder = Path(tmp)
        saved = _save_upload(upload, folder)
        if kind == CORPUS:
            if saved.suffix.lower() == ".zip":
                extracted = folder / "conversations"
                extracted.mkdir()
                saved = _extract_locomo_archive(saved, extracted)
            return corpus_import_locomo(path=saved, license=license, dry_run=dry_run)
        spec = protocols.for_kind(kind)
        options = {}
        if spec.accepts_rejects:
            options["rejects_path"] = None
            if rejects is not None:
                (folder / "rejects").mkdir()
                options["rejects_path"] = _save_upload(rejects, folder / "rejects")
        importer = import_string(spec.importer)
        return importer(path=saved, item_set_name=item_set_name.strip(), license=license, dry_run=dry_run, **options)
