"""The released TWIST trail -> TWIST-v1.0 -> release bundle -> erratum -> TWIST-v1.1."""

import hashlib
import io
import json
import subprocess
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command

from keys import bundle
from keys.canonical import sha256_hex
from keys.selectors import bundle_data, key_canonical_bytes
from keys.services import erratum_decide, erratum_file, key_derive, key_freeze, key_publish, key_verify

pytestmark = [pytest.mark.django_db, pytest.mark.realdata]

EXPECTED_FILES = {
    "key.jsonl", "candidates.jsonl", "generation_rejects.jsonl", "annotation/answers_A.json",
    "annotation/answers_B.json", "annotation/adjudication_queue.jsonl", "annotation/adjudication_decisions.json",
    "annotation/council/anthropic-claude-sonnet-4-6.json", "annotation/council/gemini-gemini-3.5-flash.json",
    "annotation/council/openai-gpt-4o.json", "errata.jsonl", "CHANGELOG.md", "stats.json", "datasheet.md",
    "hf/README.md", "hf/test.jsonl", "MANIFEST.sha256", "croissant.json", "CITATION.cff",
    "annotation/tables/answers.jsonl", "annotation/tables/council_votes.jsonl", "annotation/tables/decisions.jsonl",
    "leakage.json",
}


@pytest.fixture
def v1(twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    key_publish(key=key, user=author)  # the released key: public
    return key


def export(version: str, out) -> dict[str, bytes]:
    call_command("key_export", version, "--out", str(out), stdout=StringIO())
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def jsonl(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


@pytest.mark.programs("sha256sum")
def test_released_trail_freezes_to_the_published_key_and_exports_reproducibly(v1, shared_data, tmp_path):
    counts = v1.manifest["counts_by_gold"]
    assert (v1.entries.count(), counts["contradicting"], counts["aligned"], counts["hard_negative"]) == (161, 38, 61, 62)
    agreement = v1.manifest["agreement"]
    assert round(agreement["kappa_all_candidates"]["kappa"], 3) == 0.565
    assert round(agreement["kappa_kept_set"]["kappa"], 3) == 0.851
    assert key_verify(version="TWIST-v1.0")["ok"]

    first = export("TWIST-v1.0", tmp_path / "one")
    second = export("TWIST-v1.0", tmp_path / "two")
    assert set(first) == EXPECTED_FILES
    assert first == second  # byte-identical
    check = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=tmp_path / "one", capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": OK") == len(EXPECTED_FILES) - 1

    key_records = jsonl(first["key.jsonl"])
    assert len(key_records) == 161 and {r["key_version"] for r in key_records} == {"TWIST-v1.0"}
    assert hashlib.sha256(first["key.jsonl"]).hexdigest() == v1.sha256
    assert len(jsonl(first["hf/test.jsonl"])) == 161
    # The items' licence, then LoCoMo's: the candidates carry its turn ids and verbatim quotes.
    assert b"\nlicense:\n- cc-by-4.0\n- cc-by-nc-4.0\n" in first["hf/README.md"]


def test_the_bundle_carries_the_released_trail_unchanged(v1, shared_data, tmp_path):
    files = export("TWIST-v1.0", tmp_path)
    twist = shared_data("twist-v1")
    released_candidates = jsonl((twist / "track_b_items_v1_candidates.jsonl").read_bytes())
    assert sorted(jsonl(files["candidates.jsonl"]), key=lambda r: r["id"]) == sorted(released_candidates, key=lambda r: r["id"])
    released_rejects = jsonl((twist / "track_b_v1_generation_rejects.jsonl").read_bytes())
    assert len(jsonl(files["generation_rejects.jsonl"])) == len(released_rejects)
    for who in ("A", "B"):
        released = json.loads((twist / "annotation" / f"twist_v1_answers_{who}.json").read_text())
        assert json.loads(files[f"annotation/answers_{who}.json"])["answers"] == released["answers"]
    released = json.loads((twist / "annotation" / "adjudication_decisions.json").read_text())
    assert json.loads(files["annotation/adjudication_decisions.json"])["decisions"] == {
        k: {f: v for f, v in d.items() if v} for k, d in released["decisions"].items()
    }
    council = json.loads((twist / "annotation" / "council" / "twist_v1_answers_openai-gpt-4o.json").read_text())
    assert json.loads(files["annotation/council/openai-gpt-4o.json"])["answers"] == council["answers"]
    queue = jsonl(files["annotation/adjudication_queue.jsonl"])
    # The human queue is exactly the released decisions; the council's triage flags ride along undecided.
    assert {r["id"] for r in queue if r["decision"]} == set(released["decisions"])
    assert all(r["reasons"] == ["council_majority_against"] for r in queue if not r["decision"])
    datasheet = files["datasheet.md"].decode()
    assert "The adjudicator was also an annotator** (annotator A)" in datasheet
    # The answers came from the authors' files: no order seed is credited with the order they saw.
    assert v1.manifest["annotation_order"] == {p: {"source": "imported", "seed": None} for p in ("A", "B")}
    assert "A in an order that is not recorded (the answers were imported from a file" in datasheet
    assert "openai-gpt-4o also generated the items" in datasheet
    assert "161 items" in datasheet and "39 of 200 candidates dropped" in datasheet


def test_the_zip_download_is_deterministic_and_holds_the_bundle(client, v1):
    first = client.get("/keys/TWIST-v1.0/download.zip")
    second = client.get("/keys/TWIST-v1.0/download.zip")
    assert first.status_code == 200 and first["Content-Type"] == "application/zip"
    assert first.content == second.content
    files = bundle.render(bundle_data(v1))
    with zipfile.ZipFile(io.BytesIO(first.content)) as archive:
        assert {n.removeprefix("TWIST-v1.0/"): archive.read(n) for n in archive.namelist()} == files


def test_an_accepted_erratum_gives_v1_1_which_differs_exactly_as_its_changelog_says(v1, outsider, author, tmp_path):
    parent_bytes = key_canonical_bytes(v1)
    target = next(e for e in v1.entries.order_by("external_id") if e.gold == "hard_negative")
    erratum = erratum_file(key=v1, item_external_id=target.external_id, kind="relabel", value="aligned",
                           description="the draft asks a question; aligned, not a hard negative", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="agreed in review", user=author)
    child = key_derive(parent=v1, version="TWIST-v1.1", user=author)

    assert sha256_hex(key_canonical_bytes(v1)) == sha256_hex(parent_bytes) == v1.sha256
    before = {r["id"]: {k: v for k, v in r.items() if k != "key_version"} for r in jsonl(parent_bytes)}
    after = {r["id"]: {k: v for k, v in r.items() if k != "key_version"} for r in jsonl(key_canonical_bytes(child))}
    replayed = dict(before)
    for change in child.changelog:
        assert replayed.get(change["item"]) == change["before"]
        if change["after"] is None:
            replayed.pop(change["item"])
        else:
            replayed[change["item"]] = change["after"]
    assert replayed == after and before != after
    assert [c["erratum"] for c in child.changelog] == [erratum.pk]

    files = export("TWIST-v1.1", tmp_path)
    assert f"`{target.external_id}` (relabel, erratum {erratum.pk})" in files["CHANGELOG.md"].decode()
    assert json.loads(files["stats.json"])["changelog"] == child.changelog
    assert jsonl(files["errata.jsonl"])[0]["applied_in"] == "TWIST-v1.1"
    # The per-item diff from v1.0: the one relabelled item, with its erratum.
    (row,) = jsonl(files["changes_from_parent.jsonl"])
    assert row["item"] == target.external_id and row["changes"] == ["relabelled"]
    assert row["fields"]["type"] == ["hard_negative", "aligned"]
    assert [e["id"] for e in row["errata"]] == [erratum.pk] and row["errata"][0]["decision_note"] == "agreed in review"
    assert "changes_from_parent.jsonl" not in export("TWIST-v1.0", tmp_path / "parent")
