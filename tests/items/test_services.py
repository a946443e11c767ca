"""Import services on real released data and on every kind of bad input: all-or-nothing, idempotent."""

import json
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import protocols
from goldkey.lib.jsonio import MAX_ERRORS, ErrorLog, ImportFailed
from items.models import Conversation, Evidence, GenerationReject, Item, ItemSet, Session, Turn
from items.services import corpus_import_locomo, item_content, items_import_lapse, items_import_twist
from tests.items.conftest import (
    REJECTS,
    V0,
    V1,
    assert_refused,
    locomo_conversation,
    table_counts,
    twist_record,
    write_jsonl,
)


def read_records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- real data -------------------------------------------------------------------------------

pytestmark = pytest.mark.django_db


@pytest.fixture
def real_corpus(shared_data):
    corpus_import_locomo(path=shared_data("locomo10"))
    return shared_data


def test_the_released_locomo_folder_gives_ten_conversations_and_conv_26_has_419_turns(real_corpus):
    folder = real_corpus("locomo10")
    assert Conversation.objects.count() == len(list(folder.glob("*.json"))) == 10
    conv26 = Conversation.objects.get(external_id="conv-26")
    assert conv26.turns.count() == 419
    assert (conv26.speaker_a, conv26.speaker_b) == ("Caroline", "Melanie")
    expected_turns = sum(
        len(v) for f in folder.glob("*.json") for k, v in json.loads(f.read_text()).items() if k.startswith("session_") and isinstance(v, list)
    )
    assert Turn.objects.count() == expected_turns


def test_released_turns_keep_order_session_date_and_image_caption(real_corpus):
    conv26 = Conversation.objects.get(external_id="conv-26")
    first = conv26.turns.select_related("session").order_by("order").first()
    assert (first.order, first.dia_id, first.session.number) == (0, "D1:1", 1)
    assert first.session.date_time_raw == "1:56 pm on 8 May, 2023"
    assert first.session.date_time.isoformat() == "2023-05-08T13:56:00+00:00"
    assert not Session.objects.filter(date_time=None).exists()
    raw = json.loads(real_corpus("locomo10", "26.json").read_text())
    captioned = [t for k, v in raw.items() if k.startswith("session_") and isinstance(v, list) for t in v if t.get("blip_caption")]
    assert conv26.turns.exclude(image_caption="").count() == len(captioned) > 0


def test_the_v1_candidates_give_200_items_74_62_64_by_type(real_corpus):
    path = real_corpus("twist-v1", V1)
    report = items_import_twist(path=path, item_set_name="TWIST Track B v1 candidates")
    from_file = Counter(r["type"] for r in read_records(path))
    stored = Counter(Item.objects.values_list("gold_label", flat=True))
    assert report.created == Item.objects.count() == 200
    assert stored == from_file
    assert (stored["contradicting"], stored["aligned"], stored["hard_negative"]) == (74, 62, 64)


def test_every_imported_evidence_id_resolves_to_a_turn_of_the_items_conversation_in_cited_order(real_corpus):
    path = real_corpus("twist-v1", V1)
    items_import_twist(path=path, item_set_name="v1")
    records = {r["id"]: r for r in read_records(path)}
    stored: dict[str, list] = {}
    for external_id, dia_id, turn_conv, item_conv in Evidence.objects.order_by("item_id", "position").values_list(
        "item__external_id", "turn__dia_id", "turn__conversation_id", "item__conversation_id"
    ):
        assert turn_conv == item_conv
        stored.setdefault(external_id, []).append(dia_id)
    assert stored == {key: r["evidence"] for key, r in records.items()}


def test_v1_items_keep_family_quote_rationale_history_and_batch(real_corpus):
    items_import_twist(path=real_corpus("twist-v1", V1), item_set_name="v1")
    item = Item.objects.get(external_id="conv-26:v1b1")
    assert item.family == "B2 negated-commitment"
    assert item.contradicted_quote == "Woohoo Melanie! I passed the adoption agency interviews last Friday!"
    assert (item.history_turns, item.batch, item.recipient, item.gold_verdict) == (419, "v1b", "Caroline", "contradicts")
    assert set(Item.objects.values_list("batch", flat=True)) <= {"v1b", "v1c", "v1d", "v1e", "v1f"}


def test_the_v0_pilot_gives_153_items_with_batch_and_history_derived(real_corpus):
    path = real_corpus("twist-v1", V0)
    records = read_records(path)
    assert all("history_turns" not in r and "family" not in r for r in records)
    report = items_import_twist(path=path, item_set_name="TWIST Track B v0 pilot")
    assert report.created == len(records) == 153
    turn_counts = {c.external_id: c.turns.count() for c in Conversation.objects.all()}
    for external_id, conv, history, batch in Item.objects.values_list(
        "external_id", "conversation__external_id", "content__history_turns", "batch"
    ):
        assert history == turn_counts[conv], external_id
        assert batch == "b", external_id


def test_the_v1_rejects_give_223_each_with_verdict_and_the_excerpts_the_verifier_saw(real_corpus):
    path = real_corpus("twist-v1", REJECTS)
    report = items_import_twist(path=real_corpus("twist-v1", V1), item_set_name="v1", rejects_path=path)
    records = read_records(path)
    assert report.rejects_created == GenerationReject.objects.count() == len(records) == 223
    for reject in GenerationReject.objects.all():
        assert reject.verdict and reject.dropped_by == "verify"
        assert reject.evidence_text and all(line.startswith("[") for line in reject.evidence_text)
        assert reject.record["id"] == reject.external_id
        assert not any(key.startswith("_") for key in reject.record)


def test_the_lapse_battery_gives_388_items_with_every_non_visible_field_hidden(shared_data):
    path = shared_data("lapse-gold", "gold_battery.jsonl")
    records = read_records(path)
    report = items_import_lapse(path=path, item_set_name="Lapse battery")
    assert report.created == Item.objects.filter(kind="lapse").count() == len(records) == 388
    first = records[0]
    item = Item.objects.get(external_id=first["battery_id"])
    assert (item.request, item.response, item.key_fact) == (first["query"], first["response"], first["witness"])
    assert item.hidden == {k: v for k, v in first.items() if k not in {"battery_id", "query", "response", "witness"}}
    assert {"arm", "gold", "cascade", "tier"} <= set(item.hidden)


def test_reimporting_the_released_files_changes_nothing(real_corpus):
    def import_all():
        corpus_import_locomo(path=real_corpus("locomo10"))
        items_import_twist(path=real_corpus("twist-v1", V1), item_set_name="v1", rejects_path=real_corpus("twist-v1", REJECTS))
        return items_import_lapse(path=real_corpus("lapse-gold", "gold_battery.jsonl"), item_set_name="battery")

    import_all()
    before = table_counts()
    ids = list(Item.objects.order_by("id").values_list("id", "external_id"))
    report = import_all()
    assert table_counts() == before
    assert list(Item.objects.order_by("id").values_list("id", "external_id")) == ids
    assert (report.created, report.unchanged) == (0, 388)


# --- bad input: each refused with FILE:LINE and the field, nothing written -------------------


def test_invalid_json_is_refused_with_its_line(small_corpus, twist_file):
    path = twist_file([twist_record(1), '{"id": "conv-1:v1b2", "conv": ', twist_record(3)])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"), "track_b_test.jsonl:2: invalid JSON")


def test_a_missing_field_is_refused_with_its_line_and_name(small_corpus, twist_file):
    broken = twist_record(2)
    del broken["draft"]
    path = twist_file([twist_record(1), broken])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"), "track_b_test.jsonl:2: missing field 'draft'")


def test_a_mistyped_field_is_refused_with_its_line_and_name(small_corpus, twist_file):
    path = twist_file([twist_record(1), twist_record(2, evidence="D1:1")])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"), "track_b_test.jsonl:2: field 'evidence' must be a list")


def test_an_unknown_conversation_is_refused_with_its_line(small_corpus, twist_file):
    path = twist_file([twist_record(1), twist_record(2, conv="conv-99")])
    assert_refused(
        lambda: items_import_twist(path=path, item_set_name="s"),
        "track_b_test.jsonl:2: field 'conv': unknown conversation 'conv-99'",
    )


def test_a_candidate_citing_a_turn_the_conversation_lacks_is_a_gate_reject_and_the_rest_imports(small_corpus, twist_file):
    records = [twist_record(1), twist_record(2, evidence=["D1:1", "D9:1"]), twist_record(3)]
    path = twist_file(records)
    report = items_import_twist(path=path, item_set_name="s")
    assert (report.created, report.rejects_created) == (2, 1)
    rejected_id = records[1]["id"]
    assert report.gate_rejects == [
        {"line": 2, "id": rejected_id, "gate": "evidence_ids", "verdict": "evidence 'D9:1' is not a turn of conv-1"}
    ]
    assert not Item.objects.filter(external_id=rejected_id).exists()
    reject = GenerationReject.objects.get(external_id=rejected_id)
    assert (reject.dropped_by, reject.record) == ("evidence_ids", records[1])
    again = items_import_twist(path=path, item_set_name="s")  # the same file again changes nothing
    assert (again.created, again.unchanged, again.rejects_created, again.rejects_unchanged) == (0, 2, 0, 1)


def test_a_recipient_who_is_not_in_the_conversation_is_refused(small_corpus, twist_file):
    path = twist_file([twist_record(1, speaker="Cy")])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"), "track_b_test.jsonl:1: field 'speaker': 'Cy'")


def test_a_duplicate_id_is_refused_naming_both_lines(small_corpus, twist_file):
    path = twist_file([twist_record(1), twist_record(2), twist_record(1, draft="other")])
    assert_refused(
        lambda: items_import_twist(path=path, item_set_name="s"),
        "track_b_test.jsonl:3: field 'id': duplicate id 'conv-1:v1b1' (first on line 1)",
    )


def test_a_bad_rejects_file_refuses_the_items_too(small_corpus, twist_file, tmp_path):
    items = twist_file([twist_record(1)])
    rejects = write_jsonl(tmp_path / "rejects.jsonl", [twist_record(5, _dropped_by="verify")])
    assert_refused(
        lambda: items_import_twist(path=items, item_set_name="s", rejects_path=rejects),
        "rejects.jsonl:1: missing field '_verdict'",
    )


def test_a_bad_lapse_file_is_refused_with_its_line(db, tmp_path):
    path = write_jsonl(tmp_path / "lapse.jsonl", [
        {"gid": "g001", "query": "q", "response": "r", "witness": "w"},
        {"gid": "g002", "query": 5, "response": "r", "witness": "w"},
        {"gid": "g001", "query": "q", "response": "r", "witness": "w"},
    ])
    assert_refused(
        lambda: items_import_lapse(path=path, item_set_name="s"),
        "lapse.jsonl:2: field 'query' must be a string, got int",
        "lapse.jsonl:3: field 'id': duplicate id 'g001' (first on line 1)",
    )


def test_a_bad_conversation_file_refuses_the_whole_folder(db, locomo_dir):
    doc = locomo_conversation()
    doc["session_1"][0]["text"] = ["not", "text"]
    (locomo_dir / "3.json").write_text(json.dumps(doc, indent=2))
    assert_refused(lambda: corpus_import_locomo(path=locomo_dir), "3.json:", "session_1[0]: field 'text' must be a string")


def test_every_error_is_reported_not_just_the_first(small_corpus, twist_file):
    missing = twist_record(3)
    del missing["speaker"]
    path = twist_file([
        twist_record(1, type="bogus"),
        "not json",
        missing,
        twist_record(4, conv="conv-99"),
        twist_record(5, speaker="Cy"),
        twist_record(6),
    ])
    error = assert_refused(lambda: items_import_twist(path=path, item_set_name="s"))
    assert [e.split(": ")[0] for e in error.errors] == [f"track_b_test.jsonl:{n}" for n in (1, 2, 3, 4, 5)]
    assert not error.truncated


def test_errors_stop_at_the_limit_and_say_more_were_cut(small_corpus, twist_file):
    path = twist_file([twist_record(n, conv="conv-99") for n in range(MAX_ERRORS + 20)])
    error = assert_refused(lambda: items_import_twist(path=path, item_set_name="s"))
    assert len(error.errors) == MAX_ERRORS and error.truncated
    assert "stopped after" in error.message


def test_an_item_set_of_the_other_kind_is_refused(small_corpus, twist_file, tmp_path):
    items_import_lapse(
        path=write_jsonl(tmp_path / "l.jsonl", [{"gid": "g1", "query": "q", "response": "r", "witness": "w"}]),
        item_set_name="shared name",
    )
    path = twist_file([twist_record(1)])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="shared name"), "not twist")


# --- idempotence, changed content, dry runs --------------------------------------------------


def test_importing_the_same_twist_file_twice_changes_nothing(small_corpus, twist_file, tmp_path):
    path = twist_file([twist_record(1), twist_record(2, evidence=["D1:1", "D2:1"])])
    rejects = write_jsonl(tmp_path / "rejects.jsonl", [twist_record(5, _verdict="v", _dropped_by="verify")])
    items_import_twist(path=path, item_set_name="s", rejects_path=rejects)
    before = table_counts()
    report = items_import_twist(path=path, item_set_name="s", rejects_path=rejects)
    assert table_counts() == before
    assert (report.created, report.unchanged, report.rejects_created, report.rejects_unchanged) == (0, 2, 0, 1)


def test_new_items_in_a_reimported_file_are_added_beside_the_unchanged_ones(small_corpus, twist_file):
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s")
    report = items_import_twist(path=twist_file([twist_record(1), twist_record(2)]), item_set_name="s")
    assert (report.created, report.unchanged) == (1, 1)
    assert Evidence.objects.count() == 2


@pytest.mark.parametrize(
    "change",
    [{"draft": "edited"}, {"type": "aligned"}, {"evidence": ["D1:1", "D1:3"]}, {"history_turns": 9}, {"contradicted_quote": "x"}],
)
def test_reimporting_an_item_with_changed_content_is_refused(small_corpus, twist_file, change):
    items_import_twist(path=twist_file([twist_record(1), twist_record(2)]), item_set_name="s")
    path = twist_file([twist_record(1), twist_record(2, **change), twist_record(3)])
    assert_refused(
        lambda: items_import_twist(path=path, item_set_name="s"),
        "track_b_test.jsonl:2: item 'conv-1:v1b2' is already in 's' with different content",
    )


def test_reimporting_a_reject_with_a_changed_verdict_is_refused(small_corpus, twist_file, tmp_path):
    items = twist_file([twist_record(1)])
    rejects = tmp_path / "rejects.jsonl"
    write_jsonl(rejects, [twist_record(5, _verdict="contradicts=True claim_stated=False", _dropped_by="verify")])
    items_import_twist(path=items, item_set_name="s", rejects_path=rejects)
    write_jsonl(rejects, [twist_record(5, _verdict="contradicts=False claim_stated=False", _dropped_by="verify")])
    assert_refused(
        lambda: items_import_twist(path=items, item_set_name="s", rejects_path=rejects),
        "rejects.jsonl:1: reject 'conv-1:v1b5' is already kept with 's' with different content",
    )


def test_reimporting_a_lapse_item_with_changed_hidden_metadata_is_refused(db, tmp_path):
    path = tmp_path / "lapse.jsonl"
    write_jsonl(path, [{"gid": "g1", "query": "q", "response": "r", "witness": "w", "gap": "7d"}])
    items_import_lapse(path=path, item_set_name="s")
    write_jsonl(path, [{"gid": "g1", "query": "q", "response": "r", "witness": "w", "gap": "30d"}])
    assert_refused(lambda: items_import_lapse(path=path, item_set_name="s"), "lapse.jsonl:1: item 'g1' is already in 's'")


def test_reimporting_the_same_lapse_file_changes_nothing(db, tmp_path):
    path = write_jsonl(tmp_path / "lapse.jsonl", [{"gid": "g1", "query": "q", "response": "r", "witness": "w", "gap": {"days": 7}}])
    items_import_lapse(path=path, item_set_name="s")
    before = table_counts()
    assert items_import_lapse(path=path, item_set_name="s").unchanged == 1
    assert table_counts() == before


def test_reimporting_the_same_conversations_changes_nothing(db, locomo_dir):
    corpus_import_locomo(path=locomo_dir)
    before = table_counts()
    report = corpus_import_locomo(path=locomo_dir)
    assert table_counts() == before and (report.created, report.unchanged) == (0, 2)


def test_the_callers_work_runs_once_while_the_turns_are_written_and_may_not_query(db, locomo_dir):
    """`meanwhile` runs inside the turns' insert (on PostgreSQL while the COPY is open): once, whether or not
    there are turns to write, never for refused files, and a query from it is refused, not hung."""
    from goldkey.lib.bulk import QueryInFlight

    ran = []
    report = corpus_import_locomo(path=locomo_dir, meanwhile=lambda: ran.append("fresh"))
    assert ran == ["fresh"] and report.created == 2
    corpus_import_locomo(path=locomo_dir, meanwhile=lambda: ran.append("unchanged"))
    assert ran == ["fresh", "unchanged"]
    doc = json.loads((locomo_dir / "1.json").read_text())
    doc["session_1"][0]["text"] = "edited"
    (locomo_dir / "1.json").write_text(json.dumps(doc))
    with pytest.raises(ImportFailed):
        corpus_import_locomo(path=locomo_dir, meanwhile=lambda: ran.append("refused"))
    assert ran == ["fresh", "unchanged"]
    Conversation.objects.all().delete()
    with pytest.raises(QueryInFlight):
        corpus_import_locomo(path=locomo_dir, meanwhile=lambda: list(Conversation.objects.all()))
    assert not Turn.objects.exists() and not Conversation.objects.exists()


def test_work_refused_while_the_turns_are_written_leaves_nothing_written(db, locomo_dir):
    def refuse():
        raise ImportFailed(["items.jsonl:3: field 'conv' is empty"])

    with pytest.raises(ImportFailed, match="items.jsonl:3"):
        corpus_import_locomo(path=locomo_dir, meanwhile=refuse)
    assert not Turn.objects.exists() and not Session.objects.exists() and not Conversation.objects.exists()


@pytest.mark.parametrize("field, value", [("text", "edited"), ("date", "4:00 pm on 9 May, 2023"), ("speaker_b", "Rob")])
def test_reimporting_a_conversation_with_changed_content_is_refused(db, locomo_dir, field, value):
    corpus_import_locomo(path=locomo_dir)
    doc = locomo_conversation()
    if field == "text":
        doc["session_2"][1]["text"] = value
    elif field == "date":
        doc["session_1_date_time"] = value
    else:
        doc["speaker_b"] = value
        for session in ("session_1", "session_2"):
            for turn in doc[session]:
                turn["speaker"] = turn["speaker"].replace("Bob", "Rob")
    (locomo_dir / "1.json").write_text(json.dumps(doc, indent=1))
    assert_refused(lambda: corpus_import_locomo(path=locomo_dir), "conversation conv-1 is already imported with different content")


def test_a_dry_run_validates_and_reports_but_writes_nothing(db, locomo_dir, twist_file):
    before = table_counts()
    assert corpus_import_locomo(path=locomo_dir, dry_run=True).created == 2
    assert table_counts() == before
    corpus_import_locomo(path=locomo_dir)
    before = table_counts()
    report = items_import_twist(path=twist_file([twist_record(1), twist_record(2)]), item_set_name="new set", dry_run=True)
    assert (report.created, report.dry_run) == (2, True)
    assert table_counts() == before
    assert not ItemSet.objects.filter(name="new set").exists()


def test_a_dry_run_still_refuses_bad_input(small_corpus, twist_file):
    path = twist_file([twist_record(1, conv="conv-99")])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s", dry_run=True), "unknown conversation")


# --- the locomo10.json single-list form ------------------------------------------------------


def test_the_single_list_locomo10_json_imports_like_the_folder(db, tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([
        {"sample_id": "conv-26", "conversation": locomo_conversation(), "qa": [], "event_summary": {}},
        {"sample_id": "conv-30", "conversation": locomo_conversation("Cy", "Di", sessions=3, turns=2), "qa": []},
    ], indent=2))
    report = corpus_import_locomo(path=path)
    assert report.created == 2
    assert dict(Conversation.objects.values_list("external_id", "speaker_a")) == {"conv-26": "Ann", "conv-30": "Cy"}
    assert Turn.objects.filter(conversation__external_id="conv-30").count() == 6
    orders = list(Turn.objects.filter(conversation__external_id="conv-26").values_list("dia_id", "order"))
    assert orders == [(f"D{s}:{t}", (s - 1) * 4 + t - 1) for s in (1, 2) for t in range(1, 5)]
    session = Session.objects.get(conversation__external_id="conv-30", number=3)
    assert (session.date_time_raw, session.date_time.isoformat()) == ("3:05 pm on 5 May, 2023", "2023-05-05T15:05:00+00:00")


def test_a_duplicate_sample_id_in_locomo10_json_is_refused(db, tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": locomo_conversation()}] * 2, indent=2))
    assert_refused(lambda: corpus_import_locomo(path=path), "locomo10.json:", "duplicate conversation 'conv-1'")


# --- v0 pilot: batch and history derivation ----------------------------------------------------


def test_v0_items_get_their_batch_from_the_id_and_history_from_the_conversation(small_corpus, twist_file):
    v0 = twist_record(0, id="conv-1:b0")
    for key in ("family", "contradicted_quote", "history_turns"):
        del v0[key]
    items_import_twist(path=twist_file([v0, twist_record(7, id="conv-1:v1c7")]), item_set_name="s")
    assert dict(Item.objects.values_list("external_id", "batch")) == {"conv-1:b0": "b", "conv-1:v1c7": "v1c"}
    assert Item.objects.get(external_id="conv-1:b0").history_turns == Turn.objects.filter(conversation__external_id="conv-1").count()
    assert Item.objects.get(external_id="conv-1:v1c7").history_turns == 8


def test_an_item_set_records_the_schema_its_file_came_in(small_corpus, twist_file):
    v0 = twist_record(0, id="conv-1:b0")
    for key in ("family", "contradicted_quote", "history_turns"):
        del v0[key]
    items_import_twist(path=twist_file([v0], name="v0.jsonl"), item_set_name="pilot")
    items_import_twist(path=twist_file([twist_record(1)], name="v1.jsonl"), item_set_name="candidates")
    assert dict(ItemSet.objects.values_list("name", "schema")) == {"pilot": "twist-v0", "candidates": "twist-v1"}


def test_a_v1_file_cannot_join_a_v0_item_set(small_corpus, twist_file):
    v0 = twist_record(0, id="conv-1:b0")
    for key in ("family", "contradicted_quote", "history_turns"):
        del v0[key]
    items_import_twist(path=twist_file([v0], name="v0.jsonl"), item_set_name="pilot")
    before = table_counts()
    with pytest.raises(ImportFailed) as refused:
        items_import_twist(path=twist_file([twist_record(1)], name="v1.jsonl"), item_set_name="pilot")
    assert "v1.jsonl:1" in str(refused.value) and "twist-v0" in str(refused.value)
    assert table_counts() == before


# --- constant queries --------------------------------------------------------------------------


def _queries_for_import(twist_file, n: int, name: str) -> int:
    path = twist_file([twist_record(i, evidence=["D1:1", "D2:2"]) for i in range(n)], name=f"{name}.jsonl")
    with CaptureQueriesContext(connection) as queries:
        items_import_twist(path=path, item_set_name=name)
    assert Item.objects.filter(item_set__name=name).count() == n
    return len(queries)


def test_importing_10_or_500_items_issues_the_same_number_of_queries(small_corpus, twist_file):
    _queries_for_import(twist_file, 1, "first")  # creates the benchmark and track rows once
    assert _queries_for_import(twist_file, 10, "small") == _queries_for_import(twist_file, 500, "large")


def test_importing_2_or_20_conversations_issues_the_same_number_of_queries(db, tmp_path):
    def count(n: int, folder_name: str) -> int:
        folder = tmp_path / folder_name
        folder.mkdir()
        for i in range(n):
            (folder / f"{i + (1000 if n > 2 else 0)}.json").write_text(json.dumps(locomo_conversation(turns=6)))
        with CaptureQueriesContext(connection) as queries:
            corpus_import_locomo(path=folder)
        return len(queries)

    assert count(2, "few") == count(20, "many")


def test_text_with_tabs_newlines_backslashes_quotes_and_unicode_is_stored_unchanged(small_corpus, twist_file, tmp_path):
    awkward = 'Tab\there, new\nline, back\\slash \\N, "quotes", 100% {curly}, ümlaut, 漢字, emoji 🎉, \\.'
    items_import_twist(path=twist_file([twist_record(1, draft=awkward, rationale=awkward)]), item_set_name="s")
    item = Item.objects.get()
    assert (item.draft, item.rationale) == (awkward, awkward)
    lapse = write_jsonl(tmp_path / "l.jsonl", [{"gid": "g1", "query": awkward, "response": awkward, "witness": "w",
                                                 "meta": {"note": awkward, "n": 1.5, "none": None}}])
    items_import_lapse(path=lapse, item_set_name="l")
    stored = Item.objects.get(external_id="g1")
    assert (stored.request, stored.response, stored.hidden) == (awkward, awkward, {"meta": {"note": awkward, "n": 1.5, "none": None}})


def test_an_item_row_names_every_column_the_bulk_insert_writes():
    from goldkey.lib.bulk import insert_columns
    from items.services import _item_row

    # The database knows no Django defaults: a new Item field must get a value in the import's rows.
    row = _item_row(item_set_id=1, kind="twist", external_id="x", created_at=None)
    assert set(row) == {f.attname for f in insert_columns(Item)}


def test_a_value_the_protocols_content_schema_refuses_is_refused_with_file_line_and_field_and_nothing_is_stored(db, tmp_path):
    # The parser takes any string as a witness; the Lapse content schema holds a key fact to 300 characters.
    path = write_jsonl(tmp_path / "lapse.jsonl", [
        {"gid": "g001", "query": "q", "response": "r", "witness": "w"},
        {"gid": "g002", "query": "q", "response": "r", "witness": "w" * 301},
    ])
    assert_refused(
        lambda: items_import_lapse(path=path, item_set_name="s"),
        "lapse.jsonl:2: field 'key_fact': String should have at most 300 characters",
    )
    assert not Item.objects.exists()


def test_every_protocols_content_schema_refuses_an_unknown_field_and_a_value_of_the_wrong_type():
    for spec in protocols.specs():
        field, default = next(iter(spec.content_defaults().items()))
        assert spec.content_problems({field: default}) == []
        assert spec.content_problems({"no_such_field": "x"}) == ["field 'no_such_field': Extra inputs are not permitted"]
        assert spec.content_problems({field: object()})[0].startswith(f"field '{field}'")


@pytest.mark.parametrize("kind", ["twist", "lapse", "judged"])
@pytest.mark.parametrize("given", ["every field", "one field"])
def test_item_content_is_the_defaults_filled_in_whether_or_not_every_field_is_given(kind, given):
    spec = protocols.for_kind(kind)
    defaults = spec.content_defaults()
    values = dict(reversed(defaults.items())) if given == "every field" else dict(list(defaults.items())[:1])
    content = item_content(spec=spec, values=values, where="f.jsonl:1", log=ErrorLog())
    assert content == {**defaults, **values}
    assert list(content) == list(defaults)  # the same keys in the same order, as stored


def test_item_content_that_does_not_fit_is_logged_naming_the_field():
    log = ErrorLog()
    values = protocols.for_kind("twist").content_defaults() | {"history_turns": "many"}
    assert item_content(spec=protocols.for_kind("twist"), values=values, where="f.jsonl:7", log=log) is None
    assert log.errors and log.errors[0].startswith("f.jsonl:7: field 'history_turns'")


def test_a_content_problem_met_while_the_items_are_written_refuses_the_import_naming_it_and_writes_nothing(
    small_corpus, twist_file, monkeypatch
):
    import items.services

    # The parser's checks leave the content schema nothing to refuse in a real file, so one item's content is
    # made to fail it: the 2,500th of 3,000, met while the items before it are already on their way (streamed
    # on PostgreSQL).
    plain = items.services.item_content

    def refusing_one(*, spec, values, where, log):
        if where.endswith(":2500"):
            log.add(where, "field 'draft': refused for the test")
            return None
        return plain(spec=spec, values=values, where=where, log=log)

    monkeypatch.setattr(items.services, "item_content", refusing_one)
    path = twist_file([twist_record(n) for n in range(1, 3001)])
    refused = assert_refused(lambda: items_import_twist(path=path, item_set_name="s"),
                             "track_b_test.jsonl:2500: field 'draft': refused for the test")
    assert len(refused.errors) == 1
    assert not ItemSet.objects.filter(name="s").exists()
