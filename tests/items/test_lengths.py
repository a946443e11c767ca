"""A text longer than its column is refused where the file is parsed, naming file, line and field, with
nothing written; a text of exactly the column's length imports. The limits are read from the models, as the
parsers read them: SQLite would store an over-long text, PostgreSQL refuses it mid-write (run these with
DATABASE_URL set too)."""

import json

import pytest

from items.models import Conversation, GenerationReject, Item, ItemSet, Session, Turn
from items.services import corpus_import_locomo, corpus_import_version, items_import_lapse, items_import_twist
from tests.items.conftest import assert_refused, limit, locomo_conversation, twist_record, write_jsonl

pytestmark = pytest.mark.django_db


def too_long(n: int, at_most: int) -> str:
    return f"a text of {n:,} characters (at most {at_most:,})"


# --- TWIST Track B items and rejects -------------------------------------------------------------


def twist_id(length: int, batch: str = "v1b") -> str:
    head = f"conv-1:{batch}"
    return head + "1" * (length - len(head))


def test_a_track_b_id_over_its_column_is_refused_naming_line_and_field(small_corpus, twist_file):
    n = limit(Item, "external_id")
    path = twist_file([twist_record(1), twist_record(2, id=twist_id(n + 80))])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"),
            f"track_b_test.jsonl:2: field 'id': {too_long(n + 80, n)}")


def test_a_track_b_id_of_exactly_its_column_imports(small_corpus, twist_file):
    n = limit(Item, "external_id")
    items_import_twist(path=twist_file([twist_record(1, id=twist_id(n))]), item_set_name="s")
    assert len(Item.objects.get().external_id) == n


def test_a_track_b_family_over_its_column_is_refused(small_corpus, twist_file):
    n = limit(Item, "family")
    path = twist_file([twist_record(1, family="f" * (n + 1))])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"),
            f"track_b_test.jsonl:1: field 'family': {too_long(n + 1, n)}")


def test_a_track_b_family_of_exactly_its_column_imports(small_corpus, twist_file):
    n = limit(Item, "family")
    items_import_twist(path=twist_file([twist_record(1, family="f" * n)]), item_set_name="s")
    assert Item.objects.get().family == "f" * n


def test_an_id_whose_batch_is_over_the_batch_column_is_refused(small_corpus, twist_file):
    n = limit(Item, "batch")
    path = twist_file([twist_record(1), twist_record(2, id=f"conv-1:{'b' * (n + 1)}2")])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"),
            f"track_b_test.jsonl:2: field 'id': its batch '{'b' * n}…' is {too_long(n + 1, n)}")


def test_an_id_whose_batch_is_exactly_the_batch_column_imports(small_corpus, twist_file):
    n = limit(Item, "batch")
    items_import_twist(path=twist_file([twist_record(1, id=f"conv-1:{'b' * n}1")]), item_set_name="s")
    assert Item.objects.get().batch == "b" * n


def test_every_over_long_field_of_a_file_is_reported_at_once(small_corpus, twist_file):
    n, f = limit(Item, "external_id"), limit(Item, "family")
    path = twist_file([twist_record(1, id=twist_id(n + 1)), twist_record(2), twist_record(3, family="f" * (f + 5))])
    assert_refused(lambda: items_import_twist(path=path, item_set_name="s"),
            f"track_b_test.jsonl:1: field 'id': {too_long(n + 1, n)}",
            f"track_b_test.jsonl:3: field 'family': {too_long(f + 5, f)}")


def reject(**overrides) -> dict:
    return {"id": "conv-1:v1b90", "conv": "conv-1", "speaker": "Ann", "_verdict": "no support",
            "_dropped_by": "verifier", "_evidence_text": ["[3 May] Ann: hi"], **overrides}


@pytest.mark.parametrize("field,model_field", [
    ("id", "external_id"), ("conv", "conversation_external_id"), ("_verdict", "verdict"), ("_dropped_by", "dropped_by"),
])
def test_a_reject_field_over_its_column_is_refused(small_corpus, twist_file, field, model_field):
    n = limit(GenerationReject, model_field)
    rejects = twist_file([reject(), reject(**{"id": "conv-1:v1b91", field: "r" * (n + 1)})], name="rejects.jsonl")
    assert_refused(lambda: items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s", rejects_path=rejects),
            f"rejects.jsonl:2: field '{field}': {too_long(n + 1, n)}")


@pytest.mark.parametrize("field,model_field", [
    ("id", "external_id"), ("conv", "conversation_external_id"), ("_verdict", "verdict"), ("_dropped_by", "dropped_by"),
])
def test_a_reject_field_of_exactly_its_column_imports(small_corpus, twist_file, field, model_field):
    n = limit(GenerationReject, model_field)
    rejects = twist_file([reject(**{field: "r" * n})], name="rejects.jsonl")
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s", rejects_path=rejects)
    stored = GenerationReject.objects.get()
    assert len(getattr(stored, model_field)) == n


def test_a_gate_reject_citing_many_long_unknown_turns_keeps_its_verdict_within_the_column(small_corpus, twist_file):
    # Ids Goldkey cannot resolve are named in the verdict it writes: cut to the column, never a database error.
    unknown = [f"D1:{'0' * 30}{k}" for k in range(1, 40)]
    items_import_twist(path=twist_file([twist_record(1), twist_record(2, evidence=unknown)]), item_set_name="s")
    verdict = GenerationReject.objects.get().verdict
    assert len(verdict) == limit(GenerationReject, "verdict") and verdict.endswith("…")
    assert verdict.startswith(f"evidence '{unknown[0]}'")


# --- LoCoMo conversations and versions -----------------------------------------------------------


def write_conversation(folder, name: str, doc: dict):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize("speaker", ["speaker_a", "speaker_b"])
def test_a_speaker_over_its_column_is_refused(tmp_path, speaker):
    n = limit(Conversation, speaker)
    names = {"speaker_a": "Ann", "speaker_b": "Bob", speaker: "S" * (n + 1)}
    path = write_conversation(tmp_path / "c", "1.json", locomo_conversation(**names))
    line = 2 if speaker == "speaker_a" else 3
    assert_refused(lambda: corpus_import_locomo(path=path), f"1.json:{line}: {speaker}: field '{speaker}': {too_long(n + 1, n)}")


def test_speakers_of_exactly_their_column_import(tmp_path):
    n = limit(Conversation, "speaker_a")
    path = write_conversation(tmp_path / "c", "1.json", locomo_conversation("A" * n, "B" * limit(Conversation, "speaker_b")))
    corpus_import_locomo(path=path)
    assert Turn.objects.filter(speaker="A" * n).exists()


def dated(width: int) -> str:
    return "3:05 pm on 5 May, 2023".rjust(width)  # the leading spaces are kept as given: the date still parses


def test_a_session_date_over_its_column_is_refused(tmp_path):
    n = limit(Session, "date_time_raw")
    doc = locomo_conversation() | {"session_2_date_time": dated(n + 1)}
    path = write_conversation(tmp_path / "c", "1.json", doc)
    assert_refused(lambda: corpus_import_locomo(path=path), f"session_2_date_time: field 'session_2_date_time': {too_long(n + 1, n)}")


def test_a_session_date_of_exactly_its_column_imports(tmp_path):
    n = limit(Session, "date_time_raw")
    path = write_conversation(tmp_path / "c", "1.json", locomo_conversation() | {"session_2_date_time": dated(n)})
    corpus_import_locomo(path=path)
    assert Session.objects.get(number=2).date_time_raw == dated(n)


def with_dia_id(dia_id: str) -> dict:
    doc = locomo_conversation()
    doc["session_1"][0]["dia_id"] = dia_id
    return doc


def test_a_dia_id_over_its_column_is_refused_though_it_is_of_the_form(tmp_path):
    n = limit(Turn, "dia_id")
    dia_id = "D1:" + "0" * (n - 3) + "9"
    path = write_conversation(tmp_path / "c", "1.json", with_dia_id(dia_id))
    assert_refused(lambda: corpus_import_locomo(path=path), f"1.json:6: session_1[0]: field 'dia_id': {too_long(n + 1, n)}")


def test_a_dia_id_of_exactly_its_column_imports(tmp_path):
    n = limit(Turn, "dia_id")
    dia_id = "D1:" + "0" * (n - 4) + "9"
    corpus_import_locomo(path=write_conversation(tmp_path / "c", "1.json", with_dia_id(dia_id)))
    assert Turn.objects.filter(dia_id=dia_id).exists()


def test_a_sample_id_over_the_conversation_id_column_is_refused(tmp_path):
    n = limit(Conversation, "external_id")
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([
        {"sample_id": "conv-1", "conversation": locomo_conversation()},
        {"sample_id": "c" * (n + 1), "conversation": locomo_conversation()},
    ], indent=1), encoding="utf-8")
    assert_refused(lambda: corpus_import_locomo(path=path), f"[1].sample_id: field 'sample_id': {too_long(n + 1, n)}")


def test_a_sample_id_of_exactly_the_column_imports(tmp_path):
    n = limit(Conversation, "external_id")
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "c" * n, "conversation": locomo_conversation()}]), encoding="utf-8")
    corpus_import_locomo(path=path)
    assert Conversation.objects.get().external_id == "c" * n


def test_a_file_name_that_makes_an_over_long_conversation_id_is_refused(tmp_path):
    n = limit(Conversation, "external_id")
    digits = "1" * (n - len("conv-") + 1)
    write_conversation(tmp_path / "c", "2.json", locomo_conversation())
    write_conversation(tmp_path / "c", f"{digits}.json", locomo_conversation())
    assert_refused(lambda: corpus_import_locomo(path=tmp_path / "c"), f"{digits}.json:1: the file's name makes its conversation id",
            too_long(n + 1, n))


def test_a_file_name_that_makes_a_conversation_id_of_exactly_the_column_imports(tmp_path):
    n = limit(Conversation, "external_id")
    digits = "1" * (n - len("conv-"))
    corpus_import_locomo(path=write_conversation(tmp_path / "c", f"{digits}.json", locomo_conversation()))
    assert Conversation.objects.get().external_id == f"conv-{digits}"


def test_a_conversation_named_over_the_column_is_refused(tmp_path):
    n = limit(Conversation, "external_id")
    path = write_conversation(tmp_path / "c", "invented.json", locomo_conversation())
    assert_refused(lambda: corpus_import_locomo(path=path, external_id="x" * (n + 1)),
            f"invented.json:1: field 'external_id': {too_long(n + 1, n)}")


def test_a_version_named_over_the_column_is_refused_and_of_exactly_it_imports(small_corpus, tmp_path):
    n = limit(Conversation, "external_id")
    path = write_conversation(tmp_path / "v", "version.json", locomo_conversation())
    assert_refused(lambda: corpus_import_version(path=path, version_of="conv-1", external_id="v" * (n + 1)),
            f"version.json:1: field 'external_id': {too_long(n + 1, n)}")
    corpus_import_version(path=path, version_of="conv-1", external_id="v" * n)
    assert Conversation.objects.get(external_id="v" * n).version_of.external_id == "conv-1"


def test_an_item_set_name_over_its_column_is_refused(small_corpus, twist_file):
    n = limit(ItemSet, "name")
    assert_refused(lambda: items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s" * (n + 1)),
            f"field 'item_set': {too_long(n + 1, n)}")
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s" * n)
    assert ItemSet.objects.get().name == "s" * n


# --- Lapse ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("id_field", ["gid", "battery_id"])
def test_a_lapse_id_over_the_item_id_column_is_refused(tmp_path, id_field):
    n = limit(Item, "external_id")
    path = write_jsonl(tmp_path / "lapse.jsonl", [
        {"gid": "g001", "query": "q", "response": "r", "witness": "w"},
        {id_field: "g" * (n + 1), "query": "q", "response": "r", "witness": "w"},
    ])
    assert_refused(lambda: items_import_lapse(path=path, item_set_name="s"), f"lapse.jsonl:2: field '{id_field}': {too_long(n + 1, n)}")


def test_a_lapse_id_of_exactly_the_item_id_column_imports(tmp_path):
    n = limit(Item, "external_id")
    path = write_jsonl(tmp_path / "lapse.jsonl", [{"gid": "g" * n, "query": "q", "response": "r", "witness": "w"}])
    items_import_lapse(path=path, item_set_name="s")
    assert Item.objects.get().external_id == "g" * n


def test_a_session_number_past_the_columns_integer_range_is_refused_and_at_its_end_imports(tmp_path):
    from django.db.backends.base.operations import BaseDatabaseOperations

    top = BaseDatabaseOperations.integer_field_ranges["PositiveIntegerField"][1]

    def numbered(number: int) -> dict:
        doc = {"speaker_a": "Ann", "speaker_b": "Bob", f"session_{number}_date_time": "1:05 pm on 3 May, 2023",
               f"session_{number}": [{"speaker": "Ann", "dia_id": f"D{number}:1", "text": "hi"}]}
        return doc

    path = write_conversation(tmp_path / "over", "1.json", numbered(top + 1))
    assert_refused(lambda: corpus_import_locomo(path=path), f"session_{top + 1}: field 'session_{top + 1}': a session number past {top:,}")
    corpus_import_locomo(path=write_conversation(tmp_path / "end", "1.json", numbered(top)))
    assert Session.objects.get().number == top
