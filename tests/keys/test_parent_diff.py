"""A derived key's per-item diff from its parent: dropped, added, relabelled, re-quoted and re-evidenced
items, each with its erratum, in the release, on the key page and in the API."""

import json

import pytest
from rest_framework.test import APIClient

from items.models import Conversation, Session, Turn
from keys.canonical import parent_diff
from keys.releases import release_files
from keys.selectors import key_canonical_bytes, key_parent_diff
from keys.serializers import KeyDetailSerializer
from keys.services import erratum_decide, erratum_file, key_derive, key_publish, key_verify

pytestmark = pytest.mark.django_db


def _records(key) -> dict[str, dict]:
    return {r["id"]: {k: v for k, v in r.items() if k not in ("key_version", "provenance")}
            for r in map(json.loads, key_canonical_bytes(key).decode().splitlines())}


@pytest.fixture
def every_change(frozen_key, author, outsider):
    """TWIST-test-v1.1 from the small key with one change of every kind (and one item changed twice)."""
    conversation = Conversation.objects.get(external_id="conv-small")
    Turn.objects.create(conversation=conversation, session=Session.objects.get(conversation=conversation),
                        dia_id="D1:2", speaker="Ana", text="I moved to Lyon.", order=1)
    filed = [
        ("s-0007", "drop", ""),  # aligned, in v1.0
        ("s-0002", "relabel", "aligned"),  # hard_negative in v1.0
        ("s-0003", "fix-quote", "she really said so"),
        ("s-0005", "fix-evidence", "D1:1,D1:2"),
        ("s-0001", "relabel", "aligned"),  # dropped in adjudication: added by the relabel
        ("s-0004", "relabel", "contradicting"),  # aligned, and now quoted
        ("s-0004", "fix-quote", "she said so"),
    ]
    errata = {}
    for item, kind, value in filed:
        erratum = erratum_file(key=frozen_key, item_external_id=item, kind=kind, value=value,
                               description=f"{kind} {item}", user=outsider)
        errata[item, kind] = erratum_decide(erratum=erratum, accept=True, note=f"agreed on {item}", user=author)
    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    key_publish(key=child, user=author)
    return frozen_key, child, errata


def test_the_diff_names_every_kind_of_change_with_its_errata(every_change):
    parent, child, errata = every_change
    rows = {row["item"]: row for row in key_parent_diff(child)}
    assert list(rows) == sorted(rows)
    assert {item: row["changes"] for item, row in rows.items()} == {
        "s-0001": ["added"],
        "s-0002": ["relabelled"],
        "s-0003": ["re-quoted"],
        "s-0004": ["relabelled", "re-quoted"],
        "s-0005": ["re-evidenced"],
        "s-0007": ["dropped"],
    }
    assert rows["s-0002"]["fields"] == {"type": ["hard_negative", "aligned"]}  # both consistent: the verdict stays
    assert rows["s-0003"]["fields"] == {"contradicted_quote": ["she said so", "she really said so"]}
    assert rows["s-0005"]["fields"] == {"evidence": [["D1:1"], ["D1:1", "D1:2"]]}
    assert rows["s-0004"]["fields"]["type"] == ["aligned", "contradicting"]
    assert rows["s-0004"]["fields"]["contradicted_quote"] == ["", "she said so"]
    assert rows["s-0007"]["after"] is None and rows["s-0007"]["before"]["type"] == "aligned"
    assert rows["s-0001"]["before"] is None and rows["s-0001"]["after"]["type"] == "aligned"
    # Each with the errata that made it, in the order they were applied.
    assert [e["id"] for e in rows["s-0004"]["errata"]] == [errata["s-0004", "relabel"].pk, errata["s-0004", "fix-quote"].pk]
    assert rows["s-0005"]["errata"] == [{"id": errata["s-0005", "fix-evidence"].pk, "kind": "fix-evidence",
                                         "reason": "fix-evidence s-0005", "decision_note": "agreed on s-0005"}]


def test_the_diff_is_exactly_what_differs_between_the_two_keys_records(every_change):
    parent, child, _ = every_change
    before, after = _records(parent), _records(child)
    differing = {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
    rows = key_parent_diff(child)
    assert {row["item"] for row in rows} == differing
    for row in rows:
        if row["before"] is not None and row["after"] is not None:
            moved = {f: [before[row["item"]][f], after[row["item"]][f]] for f in after[row["item"]]
                     if before[row["item"]][f] != after[row["item"]][f]}
            assert row["fields"] == moved


def test_the_release_carries_the_diff_as_a_manifest_covered_file(every_change):
    parent, child, _ = every_change
    files = release_files(child)
    shipped = [json.loads(line) for line in files["changes_from_parent.jsonl"].decode().splitlines()]
    assert shipped == key_parent_diff(child)
    assert any(line.endswith("  changes_from_parent.jsonl") for line in files["MANIFEST.sha256"].decode().splitlines())
    assert "changes_from_parent.jsonl" not in release_files(parent)  # a first version has no parent
    datasheet = files["datasheet.md"].decode()
    assert "### Changes from TWIST-test-v1.0" in datasheet and "- `s-0007`: dropped;" in datasheet
    assert '- `s-0005`: re-evidenced (evidence: ["D1:1"] → ["D1:1", "D1:2"]); erratum ' in datasheet
    assert key_verify(version=child.version)["ok"] and key_verify(version=parent.version)["ok"]


def test_the_key_page_shows_the_diff_from_the_parent(client, every_change):
    parent, child, errata = every_change
    page = client.get(f"/keys/{child.version}/").content.decode()
    assert "Changes from TWIST-test-v1.0" in page
    assert 'data-testid="parent-diff"' in page
    assert "relabelled, re-quoted" in page and "re-evidenced" in page
    assert f"#{errata['s-0003', 'fix-quote'].pk} (fix-quote): fix-quote s-0003" in page
    assert "aligned → dropped" in page and "added as aligned" in page
    assert "contradicted_quote: &quot;she said so&quot; → &quot;she really said so&quot;" in page
    assert 'data-testid="parent-diff"' not in client.get(f"/keys/{parent.version}/").content.decode()


def test_the_api_answers_the_diff_in_its_declared_shape(every_change):
    parent, child, _ = every_change
    detail = APIClient().get(f"/api/keys/{child.version}/").json()
    assert detail["changes_from_parent"] == key_parent_diff(child)
    row_serializer = KeyDetailSerializer().fields["changes_from_parent"].child.__class__
    for row in detail["changes_from_parent"]:
        checked = row_serializer(data=row)
        assert checked.is_valid(), checked.errors
    assert APIClient().get(f"/api/keys/{parent.version}/").json()["changes_from_parent"] is None


def test_an_item_changed_twice_is_compared_from_the_parent_to_the_last_change():
    record = {"id": "x", "type": "aligned", "verdict": "consistent", "contradicted_quote": "", "evidence": ["D1:1"],
              "family": "F", "history_turns": 3, "provenance": "kept_unanimous"}
    relabelled = {**record, "type": "contradicting", "verdict": "contradicts", "provenance": "changed_by_erratum"}
    quoted = {**relabelled, "contradicted_quote": "q"}
    changelog = [
        {"item": "x", "erratum": 1, "kind": "relabel", "before": record, "after": relabelled, "reason": "r", "decision_note": ""},
        {"item": "x", "erratum": 2, "kind": "fix-quote", "before": relabelled, "after": quoted, "reason": "q", "decision_note": ""},
    ]
    (row,) = parent_diff("twist", changelog)
    assert row["before"] == record and row["after"] == quoted
    assert row["changes"] == ["relabelled", "re-quoted"]
    assert row["fields"] == {"type": ["aligned", "contradicting"], "verdict": ["consistent", "contradicts"],
                             "contradicted_quote": ["", "q"]}
