"""Freezing, verifying, errata and derived keys on small synthetic campaigns."""

import json

import pytest

from adjudication.selectors import campaign_is_frozen
from goldkey.errors import ApplicationError, NotAllowed
from keys.canonical import sha256_hex
from keys.models import Erratum, GoldKey, KeyEntry, Provenance
from keys.selectors import key_canonical_bytes
from keys.services import (
    erratum_decide,
    erratum_file,
    key_build,
    key_derive,
    key_derive_preview,
    key_freeze,
    key_verify,
    next_version,
)
from tests.adjudication.conftest import decide, make_campaign
from tests.conftest import close_campaign

pytestmark = pytest.mark.django_db


def test_freeze_refuses_while_the_queue_has_undecided_items_and_lists_them(key_campaign, author):
    with pytest.raises(ApplicationError) as refused:
        key_freeze(campaign=key_campaign, version="K-v1.0", user=author)
    assert refused.value.extra["undecided"] == ["s-0001", "s-0004"]
    assert "s-0001, s-0004" in refused.value.message
    assert not GoldKey.objects.exists()


def test_freeze_keeps_the_retained_items_with_their_provenance(frozen_key):
    entries = {e.external_id: e for e in frozen_key.entries.all()}
    assert sorted(entries) == [f"s-{i:04d}" for i in range(9) if i != 1]
    assert entries["s-0004"].provenance == Provenance.KEPT_AFTER_ADJUDICATION
    assert entries["s-0000"].provenance == Provenance.KEPT_UNANIMOUS
    assert entries["s-0000"].quote == "she said so" and entries["s-0003"].gold == "contradicting"
    assert frozen_key.manifest["counts_by_gold"] == {"aligned": 2, "contradicting": 3, "hard_negative": 3}


def test_a_relabel_decision_becomes_the_final_gold(key_campaign, author):
    decide(key_campaign, "s-0001", "relabel", author, new_gold="hard_negative")
    decide(key_campaign, "s-0004", "keep", author)
    key = key_freeze(campaign=key_campaign, version="K-v1.0", user=author)
    entry = key.entries.get(external_id="s-0001")
    assert (entry.gold, entry.provenance) == ("hard_negative", Provenance.RELABELLED)


def test_the_canonical_key_is_sorted_one_record_a_line_with_sorted_keys_and_the_version(frozen_key):
    lines = key_canonical_bytes(frozen_key).decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == sorted(r["id"] for r in records)
    for line, record in zip(lines, records, strict=True):
        assert list(record) == sorted(record)
        assert record["key_version"] == "TWIST-test-v1.0"
        assert line == json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert frozen_key.sha256 == sha256_hex(key_canonical_bytes(frozen_key))


def test_the_manifest_records_seed_protocol_annotators_and_both_kappas(frozen_key):
    manifest = frozen_key.manifest
    assert manifest["campaign_seed"] == 7
    assert manifest["protocol_version"] == "twist-b-two-phase/1"
    assert manifest["annotators"] == ["A", "B"]
    assert manifest["adjudicator_also_annotator"] == ["A"]  # the author annotated and decided
    assert manifest["agreement"]["kappa_all_candidates"]["n"] == 9
    assert manifest["agreement"]["kappa_kept_set"]["n"] == 8
    assert len(manifest["agreement"]["kappa_all_candidates"]["ci95"]) == 2


def test_decisions_whose_adjudicator_is_unknown_are_disclosed_as_such(key_campaign, author):
    from keys.releases import release_files

    decide(key_campaign, "s-0001", "drop", None)  # as imported with --adjudicator-unknown
    decide(key_campaign, "s-0004", "keep", None)
    key = key_freeze(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    assert key.manifest["decisions_adjudicator_unknown"] == 2 and key.manifest["adjudicator_also_annotator"] == []
    datasheet = release_files(key)["datasheet.md"].decode()
    assert "Who took 2 of the decisions is not recorded" in datasheet
    assert "The adjudicator was not one of the annotators" not in datasheet


def test_a_campaign_with_a_frozen_key_counts_as_frozen(key_campaign, frozen_key):
    assert campaign_is_frozen(key_campaign)


def test_a_version_can_be_frozen_only_once(frozen_key, key_campaign, author):
    with pytest.raises(ApplicationError, match="already frozen"):
        key_freeze(campaign=key_campaign, version=frozen_key.version, user=author)


def test_only_authors_freeze_keys(key_campaign, annotator_b):
    with pytest.raises(NotAllowed):
        key_freeze(campaign=key_campaign, version="K-v1.0", user=annotator_b)


def test_verify_passes_on_a_frozen_key(frozen_key):
    result = key_verify(version=frozen_key.version)
    assert result["ok"] and result["computed"] == frozen_key.sha256


def test_verify_reports_a_mismatch_when_the_entries_no_longer_match_the_hash(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="K-draft", user=author)
    assert key_verify(version="K-draft")["ok"]
    KeyEntry.objects.filter(key=draft, external_id="s-0000").update(gold="aligned")  # drafts are writable
    result = key_verify(version="K-draft")
    assert not result["ok"] and result["computed"] != result["recorded"]


def test_errata_are_filed_only_against_frozen_keys_with_a_valid_item_and_value(frozen_key, key_campaign, outsider, author):
    with pytest.raises(ApplicationError, match="not an item"):
        erratum_file(key=frozen_key, item_external_id="s-0001", kind="drop", description="x", user=outsider)
    with pytest.raises(ApplicationError, match="a relabel erratum needs the new gold label"):
        erratum_file(key=frozen_key, item_external_id="s-0000", kind="relabel", value="bogus", description="x", user=outsider)
    with pytest.raises(ApplicationError, match="description"):
        erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description=" ", user=outsider)
    with pytest.raises(ApplicationError, match="a fix-quote erratum needs the corrected verbatim quote"):
        erratum_file(key=frozen_key, item_external_id="s-0000", kind="fix-quote", description="x", user=outsider)
    other = make_campaign(slug="other", n=3, annotators=[author, outsider])
    draft = key_build(campaign=other, version="K-draft", user=author)
    with pytest.raises(ApplicationError, match="draft"):
        erratum_file(key=draft, item_external_id="s-0000", kind="drop", description="x", user=outsider)


def test_any_signed_in_user_may_file_an_erratum(frozen_key, outsider):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="not self-contained", user=outsider)
    assert erratum.status == Erratum.Status.FILED and erratum.filed_by == outsider


def test_only_authors_decide_errata_and_only_once(frozen_key, outsider, author):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="bad", user=outsider)
    with pytest.raises(NotAllowed):
        erratum_decide(erratum=erratum, accept=True, note="mine", user=outsider)
    decided = erratum_decide(erratum=erratum, accept=False, note="the quote is in D3:1", user=author)
    assert decided.status == Erratum.Status.REJECTED and decided.decided_by == author
    with pytest.raises(ApplicationError, match="already rejected"):
        erratum_decide(erratum=erratum, accept=True, note="again", user=author)


def test_derive_applies_accepted_errata_only_and_logs_each_change(frozen_key, outsider, author):
    drop = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="absence-based", user=outsider)
    relabel = erratum_file(key=frozen_key, item_external_id="s-0002", kind="relabel", value="aligned",
                           description="not a hard negative", user=outsider)
    quote = erratum_file(key=frozen_key, item_external_id="s-0003", kind="fix-quote", value="she really said so",
                         description="quote truncated", user=outsider)
    added = erratum_file(key=frozen_key, item_external_id="s-0001", kind="relabel", value="aligned",
                         description="dropped by mistake", user=outsider)
    rejected = erratum_file(key=frozen_key, item_external_id="s-0005", kind="drop", description="meh", user=outsider)
    for e in (drop, relabel, quote, added):
        erratum_decide(erratum=e, accept=True, note="agreed", user=author)
    erratum_decide(erratum=rejected, accept=False, note="no", user=author)

    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)

    entries = {e.external_id: e for e in child.entries.all()}
    assert "s-0000" not in entries
    assert (entries["s-0002"].gold, entries["s-0002"].provenance) == ("aligned", Provenance.CHANGED_BY_ERRATUM)
    assert entries["s-0003"].quote == "she really said so"
    assert (entries["s-0001"].gold, entries["s-0001"].provenance) == ("aligned", Provenance.ADDED_BY_ERRATUM)
    assert "s-0005" in entries
    assert [c["erratum"] for c in child.changelog] == [drop.pk, relabel.pk, quote.pk, added.pk]
    assert child.changelog[0]["after"] is None and child.changelog[3]["before"] is None
    assert child.is_frozen and child.parent == frozen_key and key_verify(version=child.version)["ok"]
    assert set(Erratum.objects.filter(applied_in=child).values_list("pk", flat=True)) == {drop.pk, relabel.pk, quote.pk, added.pk}


def _accepted(key, author, outsider, *errata):
    for item, kind, value in errata:
        filed = erratum_file(key=key, item_external_id=item, kind=kind, value=value, description="seen", user=outsider)
        erratum_decide(erratum=filed, accept=True, note="agreed", user=author)


def test_the_preview_shows_what_the_derive_then_makes_and_writes_nothing(frozen_key, outsider, author):
    _accepted(frozen_key, author, outsider, ("s-0000", "drop", ""), ("s-0002", "relabel", "aligned"),
              ("s-0003", "fix-quote", "she really said so"), ("s-0001", "relabel", "aligned"),
              ("s-0005", "relabel", "contradicting"), ("s-0005", "fix-quote", "she said so"))
    rows = (GoldKey.objects.count(), KeyEntry.objects.count(), Erratum.objects.filter(applied_in__isnull=False).count())
    preview = key_derive_preview(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    assert (GoldKey.objects.count(), KeyEntry.objects.count(),
            Erratum.objects.filter(applied_in__isnull=False).count()) == rows
    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    assert preview["problems"] == []
    assert preview["changelog"] == child.changelog and len(child.changelog) == 6
    assert preview["counts"] == child.manifest["counts_by_gold"] == {"aligned": 4, "contradicting": 3, "hard_negative": 1}
    assert preview["entries"] == child.manifest["entries"] == child.entries.count() == 8


def test_the_preview_writes_nothing_and_its_queries_do_not_grow_with_the_key(frozen_key, outsider, author, annotator_b):
    """A page view of the derive costs what its errata cost, whatever the key's size."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    big = make_campaign(slug="big", n=120, annotators=[author, annotator_b])
    big_key = key_freeze(campaign=big, version="BIG-v1.0", user=author)
    counted = []
    for key in (frozen_key, big_key):
        _accepted(key, author, outsider, ("s-0000", "drop", ""), ("s-0002", "relabel", "aligned"))
        with CaptureQueriesContext(connection) as queries:
            preview = key_derive_preview(parent=key, version=f"{key.version}-next", user=author)
        assert preview["problems"] == [] and preview["entries"] == key.entries.count() - 1
        # Nothing written and rolled back: a derive made in full to be thrown away cost a freeze per view.
        assert not [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
        counted.append(len(queries))
    assert counted[0] == counted[1]


def test_the_preview_names_what_would_refuse_the_derive(frozen_key, outsider, author):
    assert key_derive_preview(parent=frozen_key, version="TWIST-test-v1.1", user=author)["problems"] == [
        "TWIST-test-v1.0 has no accepted errata waiting to be applied"]
    _accepted(frozen_key, author, outsider, ("s-0002", "relabel", "contradicting"))  # a quoted gold without a quote
    problems = key_derive_preview(parent=frozen_key, version="TWIST-test-v1.1", user=author)["problems"]
    assert len(problems) == 1 and problems[0].startswith("s-0002 (erratum ")
    assert not GoldKey.objects.filter(version="TWIST-test-v1.1").exists()


def test_deriving_leaves_the_parent_byte_identical(frozen_key, outsider, author):
    before = sha256_hex(key_canonical_bytes(frozen_key))
    erratum = erratum_file(key=frozen_key, item_external_id="s-0000", kind="drop", description="x", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
    key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    frozen_key.refresh_from_db()
    assert sha256_hex(key_canonical_bytes(frozen_key)) == before == frozen_key.sha256


def test_derive_refuses_without_accepted_errata(frozen_key, author):
    with pytest.raises(ApplicationError, match="no accepted errata"):
        key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)


def test_next_version_counts_up_the_minor_number():
    assert next_version("TWIST-v1.0") == "TWIST-v1.1"
    assert next_version("TWIST-v1.9") == "TWIST-v1.10"


def test_a_lapse_campaign_freezes_to_labels_and_exports(author, annotator_b, tmp_path):
    from annotation.models import Assignment
    from annotation.services import answer_save, campaign_create
    from items.models import Item
    from items.services import item_set_get_or_create
    from keys import bundle
    from keys.selectors import bundle_data

    item_set = item_set_get_or_create(name="lapse synthetic", kind="lapse")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="lapse", external_id=f"g{i:03d}", request="Write the invite", response=f"r{i}",
             key_fact="the Marbury Residences", hidden={"gap": i})
        for i in range(4)
    )
    campaign = campaign_create(slug="lapse", item_set=item_set, annotators=[author, annotator_b], seed=3)
    labels = {"g000": ("PROCEED", "PROCEED"), "g001": ("HEDGE", "HEDGE"), "g002": ("TEMPLATE", "TEMPLATE"),
              "g003": ("PROCEED", "HEDGE")}
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment__campaign"):
        a, b = labels[assignment.item.external_id]
        answer_save(assignment=assignment, values={"label": a if assignment.enrollment.pseudonym == "A" else b})
    with pytest.raises(ApplicationError, match="still being annotated"):
        key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)
    close_campaign(campaign)
    with pytest.raises(ApplicationError, match="g003"):
        key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)
    decide(campaign, "g003", "relabel", author, new_gold="HEDGE")
    key = key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)
    assert dict(key.entries.values_list("external_id", "gold")) == {
        "g000": "PROCEED", "g001": "HEDGE", "g002": "TEMPLATE", "g003": "HEDGE"
    }
    files = bundle.render(bundle_data(key))
    records = [json.loads(line) for line in files["key.jsonl"].decode().splitlines()]
    assert records[3] == {"id": "g003", "key_version": "LAPSE-v1.0", "label": "HEDGE", "provenance": "relabelled"}
    assert json.loads(files["annotation/answers_B.json"])["answers"]["g003"] == {"label": "HEDGE"}
    # Candidate and test records have the Lapse spec's fields (JSON and booleans decoded as such).
    candidates = [json.loads(line) for line in files["candidates.jsonl"].decode().splitlines()]
    assert candidates[0] == {"id": "g000", "request": "Write the invite", "response": "r0",
                             "key_fact": "the Marbury Residences", "text_released": True, "hidden": {"gap": 0}}
    test_record = json.loads(files["hf/test.jsonl"].decode().splitlines()[3])
    assert test_record == {**candidates[3], "label": "HEDGE", "key_version": "LAPSE-v1.0"}
    assert key.manifest["protocol_version"] == "lapse-behaviour-labels/1"
    assert key.manifest["agreement"]["question"] == "label" and "kappa_binary" in key.manifest["agreement"]


def test_decisions_of_a_campaign_with_a_frozen_key_are_final(key_campaign, frozen_key, author):
    from adjudication.services import decision_save
    from items.models import Item

    item = Item.objects.get(item_set=key_campaign.item_set, external_id="s-0004")
    with pytest.raises(ApplicationError, match="frozen"):
        decision_save(campaign=key_campaign, item=item, action="drop", note="too late", user=author)


def test_freezing_loads_the_campaign_once_and_builds_its_queue_and_agreement_once(key_campaign, author):
    from unittest import mock

    from adjudication import agreement, selectors

    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    figures = mock.Mock(wraps=agreement.gold_verdict_agreement)
    with (
        mock.patch.object(selectors, "_campaign_data", wraps=selectors._campaign_data) as load,
        mock.patch.object(selectors, "_build_queue", wraps=selectors._build_queue) as queue,
        mock.patch.dict(agreement.FIGURES, {"gold_verdict": figures}),
    ):
        key = key_freeze(campaign=key_campaign, version="K-v1.0", user=author)
    assert (load.call_count, queue.call_count, figures.call_count) == (1, 1, 1)
    assert key.manifest["agreement"]["full"]["queue"]["n"] == len(key.manifest["queue"]) == 2


def _recording_forks(monkeypatch) -> list[tuple[str, bool]]:
    """(function name, forked?) of every part the key services start."""
    from goldkey.lib import forked
    from keys import services

    forks = []

    class Recorded(forked.in_fork):
        def __init__(self, function, *, fork=True):
            super().__init__(function, fork=fork)
            forks.append((getattr(function, "func", function).__name__, self.pid is not None))

    monkeypatch.setattr(services, "in_fork", Recorded)
    return forks


def test_the_agreement_figures_computed_in_a_forked_process_are_the_drafts(key_campaign, author, monkeypatch, caplog, settings):

    forks = _recording_forks(monkeypatch)
    decide(key_campaign, "s-0001", "relabel", author, new_gold="aligned")
    decide(key_campaign, "s-0004", "keep", author)
    settings.GOLDKEY_FORK_FROM_ROWS = 0
    beside = key_build(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    settings.GOLDKEY_FORK_FROM_ROWS = 10**9
    alone = key_build(campaign=key_campaign, version="TWIST-test-v1.0", user=author)  # the draft rebuilt
    assert forks == [("_figures_and_trail", True), ("_figures_and_trail", False)]
    assert not [r for r in caplog.records if r.name == "goldkey.lib.forked"]  # the child's value, not the parent's
    assert beside.manifest == alone.manifest and beside.manifest["agreement"]["full"]["q1"]["n"] > 0
    assert beside.sha256 == alone.sha256 == sha256_hex(key_canonical_bytes(alone))


def test_the_answer_files_a_freeze_renders_in_a_forked_process_are_the_releases_files(key_campaign, author, monkeypatch, caplog, settings):
    from keys import bundle
    from keys.releases import release_files
    from keys.selectors import bundle_data

    forks = _recording_forks(monkeypatch)
    settings.GOLDKEY_FORK_FROM_ROWS = 0
    decide(key_campaign, "s-0001", "relabel", author, new_gold="aligned")
    decide(key_campaign, "s-0004", "keep", author)
    key = key_freeze(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    assert forks == [("_figures_and_trail", True)]
    assert not [r for r in caplog.records if r.name == "goldkey.lib.forked"]
    sealed = release_files(key)
    plain = bundle.render(bundle_data(key))  # the answers read back from the rows, rendered here
    assert sealed == plain
    assert json.loads(sealed["annotation/answers_A.json"])["answers"] and sealed["annotation/tables/answers.jsonl"]


def test_the_collector_stays_paused_from_the_freezes_first_read_until_it_returns(key_campaign, author, monkeypatch):
    # Re-enabled between stages, it walked the freeze's few hundred thousand live objects at each end;
    # paused throughout, they are freed before its next pass.
    import gc

    from keys import services

    enabled = []
    for name in ("campaign_mark_frozen", "release_seal"):
        real = getattr(services, name)

        def recording(*args, _real=real, **kwargs):
            enabled.append(gc.isenabled())
            return _real(*args, **kwargs)

        monkeypatch.setattr(services, name, recording)
    decide(key_campaign, "s-0001", "keep", author)
    decide(key_campaign, "s-0004", "keep", author)
    assert gc.isenabled()
    key_freeze(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    assert enabled == [False, False]
    assert gc.isenabled()  # on again once the freeze has returned
