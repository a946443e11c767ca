"""The leakage audit of a key version runs on the key's own items (PROTOCOL §6), and ships with the key."""

import functools
import json
from io import StringIO

import pytest
from django.core.management import call_command

from keys import bundle
from keys import services as key_services
from keys.leakage import key_leakage_audit
from keys.releases import release_files
from keys.selectors import bundle_data
from keys.serializers import LeakageSerializer
from keys.services import erratum_decide, erratum_file, key_derive, key_freeze, key_publish, key_verify
from tests.council.test_leakage import authors_naive_bayes

# The paper's figures (TWIST §6 / §4.4: balanced accuracy 0.651, 34% of contradicting items recovered),
# as the paper prints them: what the audit of the released key must round to.
PAPER_BALANCED_ACCURACY, PAPER_CONTRADICTING_RECALL = 0.651, 0.342


@pytest.mark.django_db
@pytest.mark.realdata
def test_the_released_key_reproduces_the_papers_leakage_figures(twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    out = StringIO()
    call_command("leakage_audit", "--key", "TWIST-v1.0", "--json", stdout=out)
    result = json.loads(out.getvalue())

    assert result["scope"] == "key"
    assert result["key"] == {"version": "TWIST-v1.0", "sha256": key.sha256}
    assert result["items"] == 161 and result["folds"] == 10 and result["contradicting"] == 38
    assert round(result["balanced_accuracy"], 3) == PAPER_BALANCED_ACCURACY
    assert round(result["contradicting_recall"], 3) == PAPER_CONTRADICTING_RECALL
    # ... and the same predictions as the method written out by hand, over the key's own entries.
    rows = [
        (e.item.draft, e.gold == "contradicting", e.item.conversation.external_id)
        for e in key.entries.select_related("item__conversation").order_by("external_id")
    ]
    predicted = authors_naive_bayes(rows)
    recovered = sum(p and y for p, (_, y, _) in zip(predicted, rows, strict=True))
    assert result["contradicting_recall"] == round(recovered / 38, 4)


@pytest.mark.django_db
@pytest.mark.realdata
def test_the_freeze_ships_the_leakage_figures_in_the_manifest_release_datasheet_and_card(twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    leakage = key.manifest["leakage"]
    assert leakage["computed"] and leakage["field"] == "draft" and leakage["positive"] == "contradicting"
    assert round(leakage["balanced_accuracy"], 3) == PAPER_BALANCED_ACCURACY
    assert round(leakage["contradicting_recall"], 3) == PAPER_CONTRADICTING_RECALL
    audit = key_leakage_audit(key=key)
    assert {k: leakage[k] for k in audit if k not in ("scope", "key")} == {k: v for k, v in audit.items() if k not in ("scope", "key")}

    files = release_files(key)
    shipped = json.loads(files["leakage.json"])
    assert shipped["key_version"] == "TWIST-v1.0" and shipped["sha256"] == key.sha256
    assert shipped["balanced_accuracy"] == leakage["balanced_accuracy"]
    assert "leakage.json" in files["MANIFEST.sha256"].decode()
    assert json.loads(files["stats.json"])["manifest"]["leakage"] == leakage
    datasheet = files["datasheet.md"].decode()
    assert f"balanced accuracy **{PAPER_BALANCED_ACCURACY:.3f}**" in datasheet
    assert f"contradicting recall {PAPER_CONTRADICTING_RECALL:.3f}" in datasheet
    assert f"balanced accuracy of\n{PAPER_BALANCED_ACCURACY:.3f}" in files["hf/README.md"].decode()
    assert key_verify(version="TWIST-v1.0")["ok"]
    # The API hands the manifest out as stored: the audit in its declared shape.
    assert set(leakage) <= set(LeakageSerializer().fields)
    checked = LeakageSerializer(data=leakage)
    assert checked.is_valid(), checked.errors


@pytest.mark.django_db
@pytest.mark.realdata
def test_the_key_page_shows_the_leakage_figures(client, twist_decided, author):
    key_publish(key=key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author), user=author)
    page = client.get("/keys/TWIST-v1.0/").content.decode()
    assert "Shortcut leakage" in page
    assert f"balanced accuracy <strong>{PAPER_BALANCED_ACCURACY:.3f}</strong>" in page
    assert f"contradicting recall <strong>{PAPER_CONTRADICTING_RECALL:.3f}</strong>" in page


@pytest.mark.django_db
@pytest.mark.realdata
def test_a_derived_version_carries_the_audit_of_its_own_items(twist_decided, author, outsider):
    parent = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    dropped = parent.entries.filter(gold="contradicting").order_by("external_id")[:3]
    for entry in dropped:
        erratum = erratum_file(key=parent, item_external_id=entry.external_id, kind="drop",
                               description="not a contradiction on a second reading", user=outsider)
        erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
    child = key_derive(parent=parent, version="TWIST-v1.1", user=author)

    leakage = child.manifest["leakage"]
    assert leakage["items"] == 158 and leakage["contradicting"] == 35  # its own entries, not its parent's
    audit = key_leakage_audit(key=child)
    assert (leakage["balanced_accuracy"], leakage["contradicting_recall"]) == (audit["balanced_accuracy"], audit["contradicting_recall"])
    assert json.loads(release_files(child)["leakage.json"])["items"] == 158
    assert parent.manifest["leakage"]["items"] == 161


@pytest.mark.django_db
def test_a_key_too_small_for_the_audit_still_freezes_and_says_why(decided, author):
    key = key_freeze(campaign=decided, version="TWIST-small", user=author)
    leakage = key.manifest["leakage"]
    assert leakage["computed"] is False and "leakage audit needs" in leakage["reason"]
    files = release_files(key)
    assert "Not computed for this key: a leakage audit needs" in files["datasheet.md"].decode()
    assert json.loads(files["leakage.json"])["computed"] is False
    assert key_verify(version="TWIST-small")["ok"]


@pytest.mark.django_db
def test_the_key_page_says_why_a_key_has_no_leakage_figures(client, frozen_key, author):
    assert "Not computed for this version: a leakage audit needs" in client.get(f"/keys/{frozen_key.version}/").content.decode()


@pytest.mark.django_db
def test_a_key_frozen_before_the_audit_shipped_still_verifies_byte_for_byte(decided, author, outsider, monkeypatch):
    # Frozen and derived as the code before this step did: no audit, the release in format 2.
    with monkeypatch.context() as before:
        before.setattr(key_services, "key_leakage_record", lambda *, key: None)
        before.setattr(bundle, "render", functools.partial(bundle.render, fmt=2))
        before.setattr(bundle, "FORMAT", 2)
        parent = key_freeze(campaign=decided, version="TWIST-old", user=author)
        entry = parent.entries.order_by("external_id").first()
        erratum = erratum_file(key=parent, item_external_id=entry.external_id, kind="drop", description="wrong", user=outsider)
        erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
        child = key_derive(parent=parent, version="TWIST-old.1", user=author)
        sealed = {key.version: release_files(key) for key in (parent, child)}
    for key in (parent, child):
        assert "leakage" not in key.manifest
        files = release_files(key)
        assert files == sealed[key.version]
        assert "leakage.json" not in files and "changes_from_parent.jsonl" not in files
        assert b"leakage" not in files["datasheet.md"] and b"Changes from" not in files["datasheet.md"]
        assert bundle.render(bundle_data(key), fmt=2) == files  # what key_verify re-renders, byte for byte
        report = key_verify(version=key.version)
        assert report["ok"], report["drift"]
