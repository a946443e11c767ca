"""What a release says about itself: the Hugging Face card's YAML header, croissant.json and CITATION.cff,
sealed with the other files and loaded back by the readers that consume them (PyYAML, mlcroissant)."""

import hashlib
import json
import subprocess
import sys

import pydantic
import pytest
import yaml

import protocols
import protocols.base
from council.models import CouncilMember, CouncilVote
from items.models import Benchmark, Conversation, Item
from keys import bundle, metadata, selectors
from keys.canonical import value_types
from keys.releases import release_drift, release_files
from keys.selectors import bundle_data
from keys.services import key_freeze
from tests.adjudication.conftest import decide
from tests.test_api_schema import _schema_now

pytestmark = pytest.mark.django_db

SEALED_ELSEWHERE = {metadata.CROISSANT_FILE, "MANIFEST.sha256"}  # croissant.json cannot hold its own hash


def card_header(files) -> dict:
    text = files["hf/README.md"].decode("utf-8")
    assert text.startswith("---\n")
    header, _, _ = text[4:].partition("\n---\n")
    return yaml.safe_load(header)


# mlcroissant runs in its own interpreter: importing it (absl.logging) into the test process breaks
# pytest's output capture for later tests. Every socket connection is refused there, so the validation
# and the record loading are shown to run offline.
CROISSANT_CHECK = r"""
import json, socket, sys

def refuse(*args, **kwargs):
    raise OSError(f"network access attempted: {args}")

socket.socket.connect = refuse
socket.create_connection = refuse
import mlcroissant as mlc

def plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value

dataset = mlc.Dataset(jsonld=sys.argv[1])  # raises on any validation error
issues = dataset.metadata.ctx.issues
print(json.dumps({
    "errors": sorted(map(str, issues.errors)),
    "warnings": sorted(map(str, issues.warnings)),
    "version": dataset.metadata.version,
    "records": {
        record_set.id: [{name: plain(value) for name, value in record.items()} for record in dataset.records(record_set.id)]
        for record_set in dataset.metadata.record_sets
    },
}, default=str))
"""


def mlcroissant_check(folder) -> dict:
    """Validate folder/croissant.json with mlcroissant and load every record set."""
    done = subprocess.run([sys.executable, "-c", CROISSANT_CHECK, str(folder / "croissant.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def voted_key(key_campaign, author):
    """The small key, with one council member's votes so that the council record set exists."""
    member = CouncilMember.objects.create(name="local-model")
    for item in Item.objects.filter(item_set=key_campaign.item_set)[:3]:
        CouncilVote.objects.create(campaign=key_campaign, member=member, item=item, prompt_version="imported",
                                   values={"q1": "consistent"})
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    return key_freeze(campaign=key_campaign, version="TWIST-test-v1.0", user=author)


def test_the_card_header_loads_back_with_every_field(frozen_key):
    files = release_files(frozen_key)
    header = card_header(files)
    assert header == {
        "pretty_name": "TWIST gold key TWIST-test-v1.0",
        "license": "cc-by-4.0",  # the synthetic item set's, recorded from the TWIST benchmark; no corpus cited
        "language": ["en"],
        "annotations_creators": ["expert-generated"],
        "language_creators": ["machine-generated"],
        "multilinguality": ["monolingual"],
        "source_datasets": ["original", "extended|locomo"],
        "task_categories": ["text-classification"],
        "tags": ["conversational-memory", "contradiction-detection", "long-context", "human-validated", "evaluation"],
        "size_categories": ["n<1K"],
        "configs": [{"config_name": "default", "data_files": [{"split": "test", "path": "test.jsonl"}]}],
    }
    # The Hub reads data_files relative to the card: each must be a file the release wrote beside it.
    for config in header["configs"]:
        for data_file in config["data_files"]:
            assert f"hf/{data_file['path']}" in files
    test_split = files["hf/test.jsonl"].decode().splitlines()
    assert len(test_split) == frozen_key.entries.count() == 8
    body = files["hf/README.md"].decode()
    assert "@article{twist2026," in body and "url = {https://arxiv.org/abs/2609.28575}" in body


def test_a_benchmark_name_with_quotes_and_colons_round_trips_through_the_card(key_campaign, author):
    name = 'TWIST: "draft" vetting: v1 # not a comment'
    Benchmark.objects.filter(slug="twist").update(name=name)
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    version = "TWIST-test_v1.0+rc.1"  # a key version is plain (keys.models.VERSION_PATTERN): the name carries the quotes
    key = key_freeze(campaign=key_campaign, version=version, user=author)
    files = release_files(key)
    title = f"{name} gold key {version}"
    assert card_header(files)["pretty_name"] == title
    cff = yaml.safe_load(files["CITATION.cff"])
    assert (cff["title"], cff["version"]) == (title, version)
    croissant = json.loads(files["croissant.json"])
    assert (croissant["name"], croissant["version"]) == (title, "1.0.0")
    assert {json.loads(line)["key_version"] for line in files["hf/test.jsonl"].decode().splitlines()} == {version}


def test_the_licence_is_the_item_sets_recorded_licence(key_campaign, author):
    key_campaign.item_set.license = "cc-by-sa-4.0"
    key_campaign.item_set.save(update_fields=["license"])
    # The items cite a conversation: its licence joins the card's unless it is the same.
    Conversation.objects.filter(items__item_set=key_campaign.item_set).update(license="cc-by-sa-4.0")
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    files = release_files(key_freeze(campaign=key_campaign, version="TWIST-test-v1.0", user=author))
    assert card_header(files)["license"] == "cc-by-sa-4.0"
    assert yaml.safe_load(files["CITATION.cff"])["license"] == "CC-BY-SA-4.0"
    assert json.loads(files["croissant.json"])["license"] == ["https://creativecommons.org/licenses/by-sa/4.0/"]


def test_citation_cff_has_the_required_fields_and_the_benchmarks_preferred_citation(frozen_key):
    cff = yaml.safe_load(release_files(frozen_key)["CITATION.cff"])
    # CFF 1.2.0's required keys: cff-version, message, title, authors (each a person or an entity with a name).
    assert cff["cff-version"] == "1.2.0"
    assert cff["message"] and cff["title"] == "TWIST gold key TWIST-test-v1.0"
    assert cff["authors"] == [{"name": "The TWIST authors"}]
    assert cff["type"] == "dataset"
    assert cff["version"] == frozen_key.version
    assert cff["date-released"] == frozen_key.frozen_at.date().isoformat()  # a string, as the schema wants
    assert cff["identifiers"] == [{"type": "other", "value": f"sha256:{frozen_key.sha256}", "description": "SHA-256 of key.jsonl"}]
    assert cff["license"] == "CC-BY-4.0"
    assert cff["preferred-citation"] == {
        "type": "article",
        "title": "TWIST: A Proposed Benchmark for Intervention Quality in Conversational Memory, with a "
        "Human-Validated Draft-Alignment Track",
        "authors": [{"name": "The TWIST authors"}],
        "year": 2026,
        "url": "https://arxiv.org/abs/2609.28575",
    }


def test_croissant_lists_every_file_with_its_sha256(voted_key):
    files = release_files(voted_key)
    document = json.loads(files["croissant.json"])
    listed = {f["contentUrl"]: f for f in document["distribution"]}
    assert set(listed) == set(files) - SEALED_ELSEWHERE
    for path, entry in listed.items():
        assert entry["@type"] == "cr:FileObject" and entry["name"] == path
        assert entry["sha256"] == hashlib.sha256(files[path]).hexdigest()
        assert entry["contentSize"] == f"{len(files[path])} B"
    manifest = files["MANIFEST.sha256"].decode()
    assert f"{hashlib.sha256(files['croissant.json']).hexdigest()}  croissant.json\n" in manifest
    assert f"{hashlib.sha256(files['CITATION.cff']).hexdigest()}  CITATION.cff\n" in manifest


def test_croissant_has_a_typed_record_set_for_each_part_of_the_trail(voted_key):
    document = json.loads(release_files(voted_key)["croissant.json"])
    sets = {s["@id"]: s for s in document["recordSet"]}
    assert set(sets) == {"key", "candidates", "answers", "council_votes", "decisions", "adjudication_queue", "hf_test"}
    # (no generation_rejects or errata record sets: this key has none, and an empty file has no columns)

    def types(set_id):
        return {f["name"]: (f["dataType"], f.get("repeated", False)) for f in sets[set_id]["field"]}

    assert types("key") == {
        "id": ("sc:Text", False), "type": ("sc:Text", False), "verdict": ("sc:Text", False),
        "family": ("sc:Text", False), "evidence": ("sc:Text", True), "contradicted_quote": ("sc:Text", False),
        "history_turns": ("sc:Integer", False), "provenance": ("sc:Text", False), "key_version": ("sc:Text", False),
    }
    assert sets["key"]["key"] == {"@id": "key/id"}
    assert types("candidates")["history_turns"] == ("sc:Integer", False)
    assert types("candidates")["evidence"] == ("sc:Text", True)
    questions = {"q1", "q1note", "q2", "q2quote", "p2note", "q3", "q3turn"}
    assert set(types("answers")) == {"annotator", "id"} | questions
    assert sets["answers"]["key"] == [{"@id": "answers/annotator"}, {"@id": "answers/id"}]
    assert set(types("council_votes")) == {"member", "id"} | questions
    assert types("decisions") == {n: ("sc:Text", False) for n in ("id", "action", "new_gold", "note")}
    assert types("adjudication_queue")["reasons"] == ("sc:Text", True)
    assert "q1: contradicts, consistent, cannot-tell" in sets["answers"]["description"]
    for record_set in sets.values():
        for field in record_set["field"]:
            assert field["@id"] == f"{record_set['@id']}/{field['name']}"
            assert field["source"]["fileObject"]["@id"] in {f["@id"] for f in document["distribution"]}


def test_the_trail_tables_hold_the_same_answers_as_the_released_documents(voted_key):
    files = release_files(voted_key)
    rows = [json.loads(line) for line in files["annotation/tables/answers.jsonl"].decode().splitlines()]
    for who in ("A", "B"):
        document = json.loads(files[f"annotation/answers_{who}.json"])["answers"]
        table = {r["id"]: {k: v for k, v in r.items() if v is not None and k not in ("id", "annotator")}
                 for r in rows if r["annotator"] == who}
        assert table == document
    votes = [json.loads(line) for line in files["annotation/tables/council_votes.jsonl"].decode().splitlines()]
    assert len(votes) == 3 and {v["member"] for v in votes} == {"local-model"}
    decisions = [json.loads(line) for line in files["annotation/tables/decisions.jsonl"].decode().splitlines()]
    assert [(d["id"], d["action"]) for d in decisions] == [("s-0001", "drop"), ("s-0004", "keep")]


def test_croissant_validates_offline_with_mlcroissant_and_its_records_load(voted_key, tmp_path):
    files = release_files(voted_key)
    bundle.write(files, tmp_path)
    checked = mlcroissant_check(tmp_path)
    assert checked["errors"] == [] and checked["warnings"] == []
    assert checked["version"] == "1.0.0"  # TWIST-test-v1.0 as MAJOR.MINOR.PATCH
    records = checked["records"]
    assert sorted(r["key/id"] for r in records["key"]) == sorted(
        json.loads(line)["id"] for line in files["key.jsonl"].decode().splitlines()
    )
    assert len(records["key"]) == 8 and len(records["candidates"]) == 9 and len(records["hf_test"]) == 8
    released_queue = [json.loads(line)["id"] for line in files["annotation/adjudication_queue.jsonl"].decode().splitlines()]
    assert sorted(r["adjudication_queue/id"] for r in records["adjudication_queue"]) == released_queue
    assert {"s-0001", "s-0004"} <= set(released_queue)
    assert len(records["answers"]) == 18 and {r["answers/annotator"] for r in records["answers"]} == {"A", "B"}
    assert {r["answers/q1"] for r in records["answers"]} <= {"contradicts", "consistent", "cannot-tell"}
    assert [r["council_votes/q1"] for r in records["council_votes"]] == ["consistent"] * 3
    assert sorted((r["decisions/id"], r["decisions/action"]) for r in records["decisions"]) == [
        ("s-0001", "drop"), ("s-0004", "keep")
    ]
    assert records["key"][0]["key/history_turns"] >= 400  # an integer column loads as a number


def test_the_new_files_are_sealed_deterministic_and_checked_for_drift(voted_key):
    sealed = release_files(voted_key)
    assert {"croissant.json", "CITATION.cff"} <= set(sealed)
    again = bundle.render(bundle_data(voted_key))
    assert again["croissant.json"] == sealed["croissant.json"] and again["CITATION.cff"] == sealed["CITATION.cff"]
    assert release_drift(key=voted_key) == []
    # A licence recorded differently after the freeze is a change to the rows the release came from.
    voted_key.campaign.item_set.license = "cc0-1.0"
    voted_key.campaign.item_set.save(update_fields=["license"])
    drifted = {d.path for d in release_drift(key=voted_key)}
    assert {"hf/README.md", "CITATION.cff", "croissant.json"} <= drifted


@pytest.mark.realdata
def test_the_twist_v1_0_release_card_and_croissant_describe_the_released_trail(twist_decided, author, tmp_path):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    files = release_files(key)
    header = card_header(files)
    assert header["pretty_name"] == "TWIST gold key TWIST-v1.0"
    assert header["license"] == ["cc-by-4.0", "cc-by-nc-4.0"]  # the items', then LoCoMo's (its quotes ship)
    assert header["size_categories"] == ["n<1K"]
    assert "LoCoMo (https://github.com/snap-research/locomo) remain under its own licence: `cc-by-nc-4.0`" in files["hf/README.md"].decode()
    bundle.write(files, tmp_path)
    checked = mlcroissant_check(tmp_path)
    assert checked["errors"] == [] and checked["warnings"] == []
    document = json.loads(files["croissant.json"])
    assert {f["contentUrl"]: f["sha256"] for f in document["distribution"]} == {
        path: hashlib.sha256(content).hexdigest() for path, content in files.items() if path not in SEALED_ELSEWHERE
    }
    records = checked["records"]
    assert len(records["key"]) == 161
    assert len(records["candidates"]) == 200
    assert len(records["generation_rejects"]) == 223
    assert len(records["council_votes"]) == sum(
        len(json.loads(content)["answers"]) for path, content in files.items() if path.startswith("annotation/council/")
    )
    assert yaml.safe_load(files["CITATION.cff"])["license"] == ["CC-BY-4.0", "CC-BY-NC-4.0"]


def test_a_lapse_release_declares_lapse_and_validates(author, annotator_b, tmp_path):
    from annotation.models import Assignment
    from annotation.services import answer_save, campaign_create
    from items.services import item_set_get_or_create
    from tests.conftest import close_campaign

    item_set = item_set_get_or_create(name="lapse synthetic", kind="lapse")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="lapse", external_id=f"g{i:03d}", request="Write the invite", response=f"-r{i}",
             key_fact="the Marbury Residences", hidden={"gap": i})
        for i in range(3)
    )
    campaign = campaign_create(slug="lapse", item_set=item_set, annotators=[author, annotator_b], seed=3)
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item", "enrollment__campaign"):
        answer_save(assignment=assignment, values={"label": "PROCEED"})
    close_campaign(campaign)
    key = key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)
    files = release_files(key)
    assert "leakage" not in key.manifest and "leakage.json" not in files  # Lapse declares no leakage audit
    header = card_header(files)
    assert (header["pretty_name"], header["license"], header["source_datasets"]) == ("Lapse gold key LAPSE-v1.0", "cc-by-4.0", ["original"])
    cff = yaml.safe_load(files["CITATION.cff"])
    assert cff["preferred-citation"]["title"] == "Memory Consolidation Flattens the Temporal Shape of User Facts"
    document = json.loads(files["croissant.json"])
    candidates = next(s for s in document["recordSet"] if s["@id"] == "candidates")
    fields = {f["name"]: f["dataType"] for f in candidates["field"]}
    assert fields == {"id": "sc:Text", "request": "sc:Text", "response": "sc:Text", "key_fact": "sc:Text",
                      "text_released": "sc:Boolean"}
    assert "as JSON objects: hidden" in candidates["description"]  # no Croissant type for an object
    bundle.write(files, tmp_path)
    checked = mlcroissant_check(tmp_path)
    assert checked["errors"] == [] and checked["warnings"] == []
    records = checked["records"]["candidates"]
    assert [r["candidates/text_released"] for r in records] == [True, True, True]
    assert sorted(r["candidates/response"] for r in records) == ["-r0", "-r1", "-r2"]
    assert [r["answers/label"] for r in checked["records"]["answers"]] == ["PROCEED"] * 6


def test_a_benchmark_that_declares_no_citation_is_cited_by_its_key(monkeypatch):
    monkeypatch.setattr(metadata, "benchmark_of", lambda data: protocols.base.Benchmark("b", "B{x}", "t", "T"))
    data = {"key": {"benchmark": "B{x}", "version": "B-v2.1", "sha256": "c" * 64, "frozen_at": "2026-05-01T10:00:00Z",
                    "kind": "twist", "manifest": {}}, "entries": []}
    cff = yaml.safe_load(metadata.citation_cff_text(data))
    assert cff["authors"] == [{"name": "The B{x} authors"}] and "preferred-citation" not in cff
    assert (cff["date-released"], cff["version"]) == ("2026-05-01", "B-v2.1")
    assert "license" not in cff  # "unknown" has no SPDX identifier: left out rather than guessed
    assert metadata.bibtex(data) == (
        "@misc{b-B-v2-1,\n  title = {B\\{x\\} gold key B-v2.1},\n  author = {{The B\\{x\\} authors}},\n"
        "  year = {2026},\n  note = {gold key B-v2.1, SHA-256 " + "c" * 64 + "}\n}\n"
    )
    assert metadata.hf_card_metadata(data)["license"] == "unknown"


def test_croissant_from_the_shared_rows_of_the_trail_tables_is_croissant_from_every_row(voted_key):
    data = bundle_data(voted_key)
    files = release_files(voted_key)
    parts = metadata.trail_table_parts(data)
    shared = metadata.croissant_tables(parts)
    assert len(shared[metadata.ANSWERS_TABLE]) < len(parts[metadata.ANSWERS_TABLE])  # fewer rows are typed
    assert metadata.croissant(data, files, shared) == metadata.croissant(data, files, metadata.trail_tables(data))
    # A row that no other shares still types its own values (an integer answer, a list of turns).
    answers = next(iter(data["answers"].values()))["answers"]
    item = sorted(answers)[0]
    answers[item] = {**answers[item], "q3turn": 7, "extra": ["a", None]}
    parts = metadata.trail_table_parts(data)
    assert metadata.croissant(data, files, metadata.croissant_tables(parts)) == metadata.croissant(data, files, metadata.trail_tables(data))


def _plain_value_types(records: list[dict], name: str) -> tuple[set, set]:
    """A column's value types and its lists' element types, one value at a time."""
    values = [r.get(name) for r in records]
    types = {type(v) for v in values} - {type(None)}
    elements = {type(x) for v in values if isinstance(v, list) for x in v} - {type(None)}
    return types, elements


@pytest.mark.parametrize("column", [
    [["a", "b"], None, [], ["c"]],  # lists of text, nulls and empty lists
    [[1, 2], [], None, [3]],
    [[1, 2.5], [None], None],  # a null inside a list
    [[True], [False, None]],
    [[], None, []],  # no element at all
    [["a"], "b", None],  # a list beside a text
    [[1], 2],
    [[{"a": 1}], None],  # lists of objects
    [[[1]], []],  # lists of lists
    [["a"], {"b": 1}],
    [None, None],
    ["x", 1, True],
    [1, 2.0],
])
def test_a_column_type_is_the_one_its_values_give_one_by_one(column):
    records = [{"c": value} for value in column] + [{}]
    assert metadata._value_types(records, "c") == _plain_value_types(records, "c")
    assert metadata._column_type(records, "c") == metadata._type_of(*_plain_value_types(records, "c"))


def test_record_fields_with_a_field_every_record_carries_are_the_fields_of_the_full_records():
    records = [{"id": "a", "evidence": ["D1:1"], "key_version": 3}, {"id": "b", "evidence": [], "n": 1}]
    extra = {"key_version": "K-v1.0"}
    assert metadata._record_fields("s", "f", records, extra) == metadata._record_fields(
        "s", "f", [{**r, **extra} for r in records]
    )


@pytest.mark.parametrize("records", [
    # every record holds every column: read in one pass over the records
    [{"id": "a", "n": 1, "e": ["x"], "o": {"k": 1}}, {"id": "b", "n": None, "e": [], "o": None}],
    [{"id": "a", "n": 1.5}, {"n": 2, "id": "b"}],  # the same columns in another order
    [{"id": "a"}],  # one column
    # a record without a column: each column read on its own, the missing value a null
    [{"id": "a", "n": 1, "e": ["x"]}, {"id": "b", "e": [None]}, {"id": "c", "n": True, "e": None}],
])
def test_record_fields_read_in_one_pass_are_the_fields_read_column_by_column(records):
    typed, untyped = [], []
    for name in sorted(set().union(*records)):
        found = metadata._type_of(*_plain_value_types(records, name))
        typed.append((name, *found)) if found else untyped.append(name)
    fields, objects, types = metadata._record_fields("s", "f", records)
    assert [(f["name"], f["dataType"], f.get("repeated", False)) for f in fields] == typed
    assert objects == untyped
    # The types read on the way are the ones the encoder would read itself (it is handed them).
    assert types == value_types(records)


@pytest.mark.parametrize(("column", "expected"), [
    ([["a", "b"], None, []], ("sc:Text", True)),
    ([[1, 2], None], ("sc:Integer", True)),
    ([[1, 2.5], [None]], ("sc:Float", True)),
    ([[True], [False]], ("sc:Boolean", True)),
    ([[], None], ("sc:Text", True)),  # no element at all: the rule falls back to text
    ([["a"], "b"], ("sc:Text", False)),  # a list beside a text is mixed
    ([1, 2.0], ("sc:Float", False)),
    ([True, 1], ("sc:Text", False)),  # bool is not an integer here
    ([None, None], ("sc:Text", False)),
    ([[{"a": 1}]], None),  # objects: Croissant cannot type them
    ([[[1]]], None),
    ([{"b": 1}], None),
])
def test_a_column_type_by_hand(column, expected):
    assert metadata._column_type([{"c": value} for value in column], "c") == expected


def test_the_hf_split_records_are_each_entry_joined_with_its_candidate_then_its_gold_fields():
    entries = [{"id": "a", "type": "aligned", "verdict": "consistent", "provenance": "kept"},
               {"id": "z", "type": "contradicting", "verdict": "contradicts", "provenance": "relabelled"}]
    candidates = {"a": {"id": "a", "type": "hard_negative", "draft": "d", "conv": "c1"}}
    gold = ("type", "verdict")
    data = {"entries": entries, "hf_split": metadata.HfSplit(candidates, gold, "K-v1.1")}
    expected = [{**candidates.get(e["id"], {}), **{k: e[k] for k in gold}, "key_version": "K-v1.1"} for e in entries]
    assert metadata.hf_split_records(data) == expected
    assert expected[0]["type"] == "aligned" and "draft" not in expected[1]  # the gold wins; no candidate, no fields
    assert metadata.hf_split_records({"entries": entries}) is entries  # a key without a campaign: its entries


def test_a_content_field_added_to_a_protocols_schema_is_documented_once_in_the_openapi_schema_and_the_croissant(
    frozen_key, monkeypatch, request
):
    spec = protocols.for_kind(frozen_key.kind)
    said = "The weather the speakers mention."
    extended = pydantic.create_model(spec.content.__name__, __base__=spec.content, weather=(str, pydantic.Field("", description=said)))
    # The spec is frozen: its fields are replaced as a protocol module's new schema and field lists would.
    monkeypatch.setitem(spec.__dict__, "content", extended)
    monkeypatch.setitem(spec.__dict__, "blind_fields", (*spec.blind_fields, "weather"))
    monkeypatch.setitem(spec.__dict__, "candidate_fields", (*spec.candidate_fields, ("weather", "weather")))
    selectors._candidate_builder.cache_clear()  # built once per protocol from its candidate fields
    request.addfinalizer(selectors._candidate_builder.cache_clear)

    croissant = json.loads(bundle.render(bundle_data(frozen_key))[metadata.CROISSANT_FILE])
    for set_id in ("candidates", "hf_test"):
        fields = {f["name"]: f for f in next(rs for rs in croissant["recordSet"] if rs["@id"] == set_id)["field"]}
        assert fields["weather"]["description"] == said
        assert fields["draft"]["description"] == spec.content.model_fields["draft"].description
    openapi = _schema_now()["components"]["schemas"][f"Blind{spec.class_prefix}Item"]["properties"]
    assert openapi["weather"]["description"] == said


def test_only_the_fields_that_carry_content_are_described_and_a_gold_field_is_not_the_candidates(frozen_key):
    croissant = json.loads(release_files(frozen_key)[metadata.CROISSANT_FILE])
    sets = {rs["@id"]: {f["name"]: f for f in rs["field"]} for rs in croissant["recordSet"]}
    assert {name for name, f in sets["candidates"].items() if "description" in f} == set(metadata.content_descriptions(bundle_data(frozen_key)))
    assert "description" not in sets["key"]["id"] and "description" not in sets["hf_test"]["type"]
