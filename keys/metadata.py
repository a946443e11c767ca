"""What a release says about itself, built as data and serialised by a library, never pasted together as
text: the Hugging Face dataset card's YAML header, Croissant JSON-LD (croissant.json) and CITATION.cff.

Everything here is a pure function of the bundle's plain data (keys.selectors.bundle_data), the bytes
of the files already rendered, and the protocol's declared benchmark metadata: no clock, no query, so a
sealed release re-renders to the same bytes (keys/releases.py compares them).
"""

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from itertools import repeat
from operator import itemgetter

import yaml

import protocols
from keys.canonical import ValueTypes, types_of

CROISSANT_SPEC = "http://mlcommons.org/croissant/1.0"
CITATION_FILE = "CITATION.cff"
CROISSANT_FILE = "croissant.json"
HF_DATA_FILE = "test.jsonl"  # in hf/, beside the card: the Hub reads paths relative to the card
HF_SPLIT = f"hf/{HF_DATA_FILE}"

# Hugging Face licence ids and their SPDX identifiers (CITATION.cff and Croissant want SPDX or a URL).
SPDX = {
    "cc-by-4.0": "CC-BY-4.0",
    "cc-by-sa-4.0": "CC-BY-SA-4.0",
    "cc-by-nc-4.0": "CC-BY-NC-4.0",
    "cc-by-nc-sa-4.0": "CC-BY-NC-SA-4.0",
    "cc-by-nd-4.0": "CC-BY-ND-4.0",
    "cc-by-nc-nd-4.0": "CC-BY-NC-ND-4.0",
    "cc0-1.0": "CC0-1.0",
    "mit": "MIT",
    "apache-2.0": "Apache-2.0",
    "odc-by": "ODC-By-1.0",
    "odbl": "ODbL-1.0",
}
LICENSE_URL = {
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
    "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
    "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
    "cc-by-nc-sa-4.0": "https://creativecommons.org/licenses/by-nc-sa/4.0/",
    "cc-by-nd-4.0": "https://creativecommons.org/licenses/by-nd/4.0/",
    "cc-by-nc-nd-4.0": "https://creativecommons.org/licenses/by-nc-nd/4.0/",
    "cc0-1.0": "https://creativecommons.org/publicdomain/zero/1.0/",
    "mit": "https://opensource.org/license/mit",
    "apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0",
}


def _yaml(value) -> str:
    # The pure-Python dumper, so the bytes do not depend on whether PyYAML was built with libyaml.
    return yaml.dump(value, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)


def benchmark_of(data: dict) -> protocols.Benchmark:
    return protocols.for_kind(data["key"]["kind"]).benchmark


def licenses(data: dict) -> list[str]:
    """The licences a release's files carry, items' first: the item set's, then the corpora its items
    quote (a TWIST release carries LoCoMo turn ids and verbatim quotes), without repeats."""
    sources = data.get("sources") or {}
    found = [sources.get("license") or benchmark_of(data).license]
    found += [corpus["license"] for corpus in sources.get("corpora", [])]
    return list(dict.fromkeys(found))


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "n>1M"


def _title(data: dict) -> str:
    return f"{data['key']['benchmark']} gold key {data['key']['version']}"


def bibtex(data: dict) -> str:
    """The benchmark's declared publication as BibTeX, or the key itself when it declares none."""
    bench = benchmark_of(data)
    citation = bench.citation

    def braced(text: str) -> str:
        return text.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")

    if citation is None:
        year = (data["key"]["frozen_at"] or "")[:4]
        fields = {"title": _title(data), "author": f"{{{braced(_cff_authors(data)[0]['name'])}}}", "year": year,
                  "note": f"gold key {data['key']['version']}, SHA-256 {data['key']['sha256']}"}
        kind, name = "misc", f"{bench.slug}-{re.sub(r'[^A-Za-z0-9]+', '-', data['key']['version'])}"
    else:
        # A group author stays one name in BibTeX: the extra braces stop it being split into first/last.
        fields = {"title": citation.title, "author": " and ".join(f"{{{braced(a)}}}" for a in citation.authors),
                  "year": str(citation.year)}
        if citation.url:
            fields["url"] = citation.url
        kind, name = citation.kind, f"{bench.slug}{citation.year}"
    body = ",\n".join(
        f"  {field} = {{{value if field == 'author' else braced(value)}}}" for field, value in fields.items() if value
    )
    return f"@{kind}{{{name},\n{body}\n}}\n"


# ---------------------------------------------------------------------------------------------
# The Hugging Face dataset card


def hf_card_metadata(data: dict) -> dict:
    """The card's YAML header (the Hub's dataset card metadata), as data."""
    bench = benchmark_of(data)
    found = licenses(data)
    return {
        "pretty_name": _title(data),
        "license": found[0] if len(found) == 1 else found,
        "language": list(bench.languages),
        "annotations_creators": ["expert-generated"],
        "language_creators": ["machine-generated"],
        "multilinguality": ["monolingual"] if len(bench.languages) == 1 else ["multilingual"],
        "source_datasets": list(bench.source_datasets),
        "task_categories": list(bench.task_categories),
        "tags": list(bench.tags),
        "size_categories": [size_category(len(data["entries"]))],
        "configs": [{"config_name": "default", "data_files": [{"split": "test", "path": HF_DATA_FILE}]}],
    }


def hf_card_header(data: dict) -> str:
    return "---\n" + _yaml(hf_card_metadata(data)) + "---\n"


# ---------------------------------------------------------------------------------------------
# CITATION.cff


def _cff_authors(data: dict) -> list[dict]:
    citation = benchmark_of(data).citation
    names = citation.authors if citation else (f"The {data['key']['benchmark']} authors",)
    return [{"name": name} for name in names]  # entities: the declared names are not split into parts


def citation_cff(data: dict) -> dict:
    bench = benchmark_of(data)
    key = data["key"]
    cff: dict = {
        "cff-version": "1.2.0",
        "message": f"If you use this gold key, cite it by its version ({key['version']}) and SHA-256.",
        "type": "dataset",
        "title": _title(data),
        "version": key["version"],
        "authors": _cff_authors(data),
        "identifiers": [{"type": "other", "value": f"sha256:{key['sha256']}", "description": "SHA-256 of key.jsonl"}],
    }
    if key["frozen_at"]:  # the freeze's recorded time: a draft has none
        cff["date-released"] = key["frozen_at"][:10]
    spdx = [SPDX[license] for license in licenses(data) if license in SPDX]
    if spdx:
        cff["license"] = spdx[0] if len(spdx) == 1 else spdx
    if bench.homepage:
        cff["repository"] = bench.homepage
    if bench.tags:
        cff["keywords"] = list(bench.tags)
    if bench.citation is not None:
        reference = {"type": bench.citation.kind, "title": bench.citation.title, "authors": _cff_authors(data),
                     "year": bench.citation.year}
        if bench.citation.url:
            reference["url"] = bench.citation.url
        cff["preferred-citation"] = reference
    return cff


def citation_cff_text(data: dict) -> str:
    return _yaml(citation_cff(data))


# ---------------------------------------------------------------------------------------------
# The trail as tables

# The trail's id-keyed documents (answers, council votes, decisions) again as tables, one row per item and
# annotator: Croissant's jsonPath yields an object's values but never its member names (the item ids), so
# a record set can only be declared over rows that carry the id.
ANSWERS_TABLE = "annotation/tables/answers.jsonl"
COUNCIL_TABLE = "annotation/tables/council_votes.jsonl"
DECISIONS_TABLE = "annotation/tables/decisions.jsonl"
DECISION_KEYS = ("action", "new_gold", "note")


def _answer_row_parts(documents: dict, who: str, keys: tuple[str, ...]) -> list[tuple[dict, str]]:
    """(row without its id, item id) per row. An annotator's rows with the same answer object (bundle_data
    decodes each distinct answer text once) share one row object."""
    blank = dict.fromkeys(keys)
    parts = []
    for name, document in sorted(documents.items()):
        shared: dict[int, tuple[dict, object]] = {}  # id(values) -> (row, values): values kept alive
        for item, values in sorted(document["answers"].items()):
            known = shared.get(id(values))
            if known is None:
                known = shared[id(values)] = ({**blank, **values, who: name}, values)
            parts.append((known[0], item))
    return parts


def _questions(kind: str) -> tuple[str, ...]:
    return tuple(q.key for q in protocols.for_kind(kind).questions)


def answer_table_parts(answers: dict, kind: str) -> list[tuple[dict, str]]:
    """The answers table's (row, id) pairs, from the answer documents (bundle_data's "answers")."""
    return _answer_row_parts(answers, "annotator", _questions(kind))


def trail_table_parts(data: dict, *, answers: bool = True) -> dict[str, list[tuple[dict, str]]]:
    """The trail tables as (row without its id, item id) pairs: the row of a pair is `{**row, "id": item}`
    (rows_of), and rows sharing everything but the id share the first part, which the bundle writes
    once (keys/bundle.py). `answers`: False leaves out the answers table (rendered apart)."""
    questions = _questions(data["key"]["kind"])
    tables = {}
    if answers and data["answers"]:
        tables[ANSWERS_TABLE] = answer_table_parts(data["answers"], data["key"]["kind"])
    if data["council"]:
        tables[COUNCIL_TABLE] = _answer_row_parts(data["council"], "member", questions)
    if data["decisions"]["decisions"]:
        tables[DECISIONS_TABLE] = [
            ({**dict.fromkeys(DECISION_KEYS), **decision}, item)
            for item, decision in sorted(data["decisions"]["decisions"].items())
        ]
    return tables


def rows_of(parts: list[tuple[dict, str]]) -> list[dict]:
    return [{**row, "id": item} for row, item in parts]


def croissant_tables(parts: dict[str, list[tuple[dict, str]]]) -> dict[str, list[dict]]:
    """What croissant() reads of the trail tables, from their (row, id) pairs: the decisions as rows, and
    of the answer and council tables one row per shared row object and type of id. croissant() reads
    those two for their column names and the types of their values only (their record key is the
    annotator or member with the id, whatever the ids), which these rows share with the whole tables;
    a test compares the two documents."""
    tables = {}
    for path, pairs in parts.items():
        if path in (ANSWERS_TABLE, COUNCIL_TABLE):
            first: dict[tuple, tuple[dict, str]] = {}
            for row, item in pairs:
                first.setdefault((id(row), type(item)), (row, item))
            pairs = list(first.values())
        tables[path] = rows_of(pairs)
    return tables


def trail_tables(data: dict) -> dict[str, list[dict]]:
    """The answers, council votes and decisions as rows: every question (or decision field) a column,
    None where it was not answered."""
    return {path: rows_of(parts) for path, parts in trail_table_parts(data).items()}


# ---------------------------------------------------------------------------------------------
# Croissant


CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

ENCODING = {".jsonl": "application/jsonlines", ".json": "application/json", ".md": "text/markdown",
            ".cff": "application/x-yaml", ".sha256": "text/plain"}

# The JSON Lines files a release writes, and what one record of each is.
RECORD_FILES = (
    ("key.jsonl", "key", "The gold key: one record per kept item with its final gold (the SHA-256 of this file is the key's hash)."),
    ("candidates.jsonl", "candidates", "Every machine-generated candidate the campaign annotated, as imported."),
    ("generation_rejects.jsonl", "generation_rejects", "Generated candidates the generation gates rejected, with the verdict the gate saw."),
    (ANSWERS_TABLE, "answers", "Each annotator's answer to each item, blind to gold and to the other annotators "
     "(the rows of annotation/answers_<annotator>.json). Columns are questions; null: not answered."),
    (COUNCIL_TABLE, "council_votes", "Each council member's vote on each item: triage only, never counted in human "
     "agreement (the rows of annotation/council/<member>.json)."),
    (DECISIONS_TABLE, "decisions", "The adjudicator's decisions (the rows of annotation/adjudication_decisions.json); "
     "items without one were kept."),
    ("annotation/adjudication_queue.jsonl", "adjudication_queue", "Items queued for adjudication: reasons, suggestion and the decision taken."),
    ("errata.jsonl", "errata", "Errata applied along this key's line."),
    (HF_SPLIT, "hf_test", "The Hugging Face test split: each key record joined with its candidate fields."),
)


def _semver(version: str) -> str | None:
    """'TWIST-v1.0' -> '1.0.0': Croissant's version is MAJOR.MINOR.PATCH; a key version without one has none."""
    match = re.search(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?$", version)
    if not match:
        return None
    return ".".join(part or "0" for part in match.groups())


def _column_type(records: list[dict], name: str) -> tuple[str, bool] | None:
    """The Croissant data type of one column (and whether it is a list); None for a column holding
    JSON objects, which Croissant cannot type."""
    return _type_of(*_value_types(records, name))


def _value_types(records: list[dict], name: str, values=None) -> ValueTypes:
    """The types of a column's values and of its lists' elements, nulls left out (keys.canonical.types_of):
    a column of a 100,000-item key is read once, at C speed. `values`: the column's values, if the
    caller has read them (_columns)."""
    if values is None:
        values = list(map(dict.get, records, repeat(name)))  # record.get(name) for each record, in C
    return types_of(values)


def _columns(records: list[dict], names: list[str]) -> dict[str, tuple] | None:
    """name -> the column's values, from one pass over the records, when every record holds every name
    (None otherwise: then each column is read on its own, a missing value as null). A record is a dict
    somewhere in memory: reading all of its values at once costs about what reading one of them costs,
    where a pass per column visited each of 100,000 records once per column."""
    if not names:
        return None
    try:
        rows = list(map(itemgetter(*names), records))
    except KeyError:
        return None
    if len(names) == 1:  # itemgetter of one name gives the value, not a tuple
        return {names[0]: rows}
    return dict(zip(names, zip(*rows, strict=True), strict=True))


def _type_of(types: set, elements: set) -> tuple[str, bool] | None:
    """The one rule from a column's value types (and its lists' element types) to its Croissant type."""
    if dict in types or elements & {dict, list}:
        return None
    repeated = types == {list}
    base = elements if repeated else types
    if base == {bool}:
        return "sc:Boolean", repeated
    if base == {int}:
        return "sc:Integer", repeated
    if base and base <= {int, float}:
        return "sc:Float", repeated
    return "sc:Text", repeated  # strings, an empty or all-null column, and mixed values


def _record_fields(set_id: str, file_id: str, records: list[dict], extra: dict | None = None) -> tuple[list[dict], list[str], ValueTypes]:
    """Typed fields for the columns of a JSON Lines file, the columns left untyped, and the types of
    every value read on the way (for the file's encoder: keys.canonical.jsonl_bytes). Values that are
    JSON objects have no Croissant data type (they stay in the file, named in the description).
    `extra`: fields every record of the file carries beyond `records` (`{**record, **extra}`, typed
    without building those records)."""
    extra = extra or {}
    fields, objects = [], []
    all_types: set = set()
    all_elements: set = set()
    names = sorted(set().union(*records, extra))
    columns = _columns(records, [name for name in names if name not in extra])
    for name in names:
        if name in extra:
            types, elements = _value_types([extra], name)
        else:
            types, elements = _value_types(records, name, None if columns is None else columns[name])
        all_types |= types
        all_elements |= elements
        typed = _type_of(types, elements)
        if typed is None:
            objects.append(name)
            continue
        data_type, repeated = typed
        field = {"@type": "cr:Field", "@id": f"{set_id}/{name}", "name": name, "dataType": data_type,
                 "source": {"fileObject": {"@id": file_id}, "extract": {"column": name}}}
        if repeated:
            field["repeated"] = True
        fields.append(field)
    return fields, objects, ValueTypes(frozenset(all_types), frozenset(all_elements))


def _question_description(data: dict) -> str:
    spec = protocols.for_kind(data["key"]["kind"])
    return "; ".join(f"{q.key}: {', '.join(q.choices) if q.choices else 'free text'}" for q in spec.questions)


@dataclass(frozen=True)
class RecordColumns:
    """What the Croissant record set of one record file says of its columns: the typed fields, the
    columns of JSON objects (untyped), and whether the records' ids are unique (the set's key)."""

    fields: list[dict]
    objects: list[str]
    unique_ids: bool
    # The types of the file's values (and its lists' elements), read on the way: its encoder need not
    # read them again (keys.canonical.jsonl_bytes).
    types: ValueTypes


_RECORD_SET_IDS = {path: set_id for path, set_id, _ in RECORD_FILES}


def key_record_extra(data: dict) -> dict:
    """What every record of key.jsonl holds beyond its entry's content (data["entries"])."""
    return {"key_version": data["key"]["version"]}


def record_columns(path: str, records: list[dict], extra: dict | None = None) -> RecordColumns:
    """The columns of the record file `path` (one of RECORD_FILES) holding `records` (each with the items
    of `extra` too): a pass over every value, which the bundle may run beside the rest of its work."""
    set_id = _RECORD_SET_IDS[path]
    fields, objects, types = _record_fields(set_id, path, records, extra)
    named = {field["name"] for field in fields}
    # Only asked for a set without an annotator or member column (those are keyed by both).
    unique = "id" in named and not named & {"annotator", "member"} and len(set(map(itemgetter("id"), records))) == len(records)
    return RecordColumns(fields, objects, unique, types)


@dataclass(frozen=True)
class HfSplit:
    """What the Hugging Face split joins (the bundle data's "hf_split"): each key record
    (data["entries"]) with its item's candidate fields (`candidates`, by external id), then its gold
    fields and the key version. The records are built where the split is written (keys.bundle, beside
    the rest of the render), not while the bundle's data is read: 100,000 joined records are a
    tenth of a large freeze."""

    candidates: dict[str, dict]
    gold_fields: tuple[str, ...]
    version: str


def hf_split_records(data: dict) -> list[dict]:
    """The records of hf/test.jsonl: the key's entries joined as data["hf_split"] says (the entries
    alone for a key without a campaign)."""
    split = data.get("hf_split")
    if split is None:
        return data["entries"]
    build = _hf_record_builder(split.gold_fields)
    candidate = split.candidates.get
    no_candidate: dict = {}
    version = split.version
    return [build(candidate(entry["id"], no_candidate), entry, version) for entry in data["entries"]]


@cache
def _hf_record_builder(gold_fields: tuple[str, ...]):
    """(candidate, entry, version) -> `{**candidate, **{f: entry[f] for f in gold_fields}, "key_version":
    version}`, as one dict display written out for the fields (as keys.canonical builds key records):
    a third of the cost of the comprehension, per record."""
    for name in gold_fields:
        if not isinstance(name, str):
            raise ValueError(f"a gold field name is a string, not {name!r}")
    members = "".join(f"{name!r}: entry[{name!r}], " for name in gold_fields)
    source_code = f"def build(candidate, entry, version):\n    return {{**candidate, {members}'key_version': version}}\n"
    namespace: dict = {}
    exec(compile(source_code, "<hf split record builder>", "exec"), namespace)  # noqa: S102 (names are repr'd strings)
    return namespace["build"]


def content_descriptions(data: dict) -> dict[str, str]:
    """Record field -> its description, for each candidate field that carries an item's content: written
    once, in the protocol's content schema (`ProtocolSpec.content_field_schemas`)."""
    spec = protocols.for_kind(data["key"]["kind"])
    schemas = spec.content_field_schemas()
    return {name: schemas[source]["description"] for name, source in spec.candidate_fields
            if schemas.get(source, {}).get("description")}


def _describe(record_set: dict, descriptions: dict[str, str], objects: list[str], *, gold: frozenset) -> None:
    """The fields of a record set that carry content, described from the protocol's schema (a field the
    gold replaces is not the candidate's); its columns of JSON objects too, in the set's description."""
    record_set["field"] = [  # copies: the caller's columns stay as they were read
        {**field, "description": descriptions[field["name"]]} if field["name"] in descriptions and field["name"] not in gold
        else field
        for field in record_set["field"]
    ]
    described = [f"{name}: {descriptions[name]}" for name in objects if name in descriptions and name not in gold]
    if described:
        record_set["description"] += " " + " ".join(described)


def croissant(data: dict, files: dict[str, bytes], tables: dict[str, list[dict]] | None = None, *, sha256=None,
              columns: dict[str, RecordColumns] | None = None, described: bool = False) -> dict:
    """The release as a Croissant 1.0 dataset: every file (but this one and MANIFEST.sha256, which lists
    this one's hash) as a FileObject with its SHA-256, and a record set per record file. `described`
    (release format 3 on): the fields that carry an item's content are described from its protocol's
    content schema. `tables`: the
    trail_tables(data) the caller already built; `sha256`: path -> the hex SHA-256 of files[path], if
    the caller hashes the files anyway (each file of a release is hashed once); `columns`: path ->
    record_columns of that file, for the files the caller has already read them of."""
    if sha256 is None:
        def sha256(path: str) -> str:
            return hashlib.sha256(files[path]).hexdigest()
    key = data["key"]
    bench = benchmark_of(data)
    found = licenses(data)
    distribution = [
        {"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
         "encodingFormat": ENCODING.get(path[path.rfind("."):], "application/octet-stream"),
         "contentSize": f"{len(content)} B", "sha256": sha256(path)}
        for path, content in sorted(files.items())
    ]
    record_sets = []
    record_data = {
        "key.jsonl": data["entries"],  # each with the key version (record_extra)
        "candidates.jsonl": data["candidates"],
        "generation_rejects.jsonl": data["rejects"],
        "annotation/adjudication_queue.jsonl": data["queue"],
        "errata.jsonl": data["errata"],
        **(trail_tables(data) if tables is None else tables),
    }
    record_extra = {"key.jsonl": key_record_extra(data)}
    questions = _question_description(data)
    descriptions = content_descriptions(data) if described else {}
    split = data.get("hf_split")
    # The record sets whose fields carry content, and in each the fields the gold replaces (in the split, a
    # key field of the same name stands in place of the candidate's).
    content_sets = {"candidates": frozenset(), "hf_test": frozenset(split.gold_fields if split else ())}
    columns = columns or {}
    for path, set_id, description in RECORD_FILES:
        if path not in files:
            continue
        described = columns.get(path)  # the caller reads a file's columns only if it holds records
        if described is None:
            records = hf_split_records(data) if path == HF_SPLIT else record_data.get(path)
            if not records:
                continue
            described = record_columns(path, records, record_extra.get(path))
        fields, objects = described.fields, described.objects
        if set_id in ("answers", "council_votes"):
            description += f" Questions and their choices: {questions}."
        if objects:
            description += f" Also in each record, as JSON objects: {', '.join(objects)}."
        record_set = {"@type": "cr:RecordSet", "@id": set_id, "name": set_id, "description": description, "field": fields}
        if set_id in content_sets and descriptions:
            _describe(record_set, descriptions, objects, gold=content_sets[set_id])
        named = [f["name"] for f in fields]
        for who in ("annotator", "member"):
            if who in named:  # one row per annotator (or member) and item
                record_set["key"] = [{"@id": f"{set_id}/{who}"}, {"@id": f"{set_id}/id"}]
        if "key" not in record_set and described.unique_ids:
            record_set["key"] = {"@id": f"{set_id}/id"}
        record_sets.append(record_set)
    dataset = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": _title(data),
        "description": (f"{_title(data)}: {len(data['entries'])} human-validated items frozen with SHA-256 "
                        f"{key['sha256']} over key.jsonl, with the full annotation trail. Evaluation only."),
        "conformsTo": CROISSANT_SPEC,
        "url": bench.homepage or f"urn:goldkey:{key['version']}",
        "license": [LICENSE_URL.get(license, license) for license in found],
        "creator": [{"@type": "sc:Organization", "name": author["name"]} for author in _cff_authors(data)],
        "citeAs": bibtex(data),
        "keywords": list(bench.tags),
        "inLanguage": list(bench.languages),
        "isLiveDataset": False,
        "distribution": distribution,
        "recordSet": record_sets,
    }
    if key["frozen_at"]:
        dataset["datePublished"] = key["frozen_at"]
    semver = _semver(key["version"])
    if semver:
        dataset["version"] = semver
    return dataset
