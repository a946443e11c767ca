"""Small import files written per test, in the released formats, and a snapshot of every items table."""

import json
from pathlib import Path

import pytest

from goldkey.lib.jsonio import ImportFailed
from items.models import (
    Benchmark,
    Conversation,
    Evidence,
    GenerationReject,
    Item,
    ItemSet,
    Session,
    Track,
    Turn,
)

ITEM_TABLES = (Benchmark, Track, ItemSet, Conversation, Session, Turn, Item, Evidence, GenerationReject)

V1 = "track_b_items_v1_candidates.jsonl"
V0 = "track_b_items_v0.jsonl"
REJECTS = "track_b_v1_generation_rejects.jsonl"


def table_counts() -> dict[str, int]:
    """Row count of every table an import may write: compare before/after a refused import."""
    return {model.__name__: model.objects.count() for model in ITEM_TABLES}


def limit(model, field: str) -> int:
    """The length of a model's text column, as the parsers read it: tests never repeat the number."""
    return model._meta.get_field(field).max_length


def assert_refused(call, *fragments: str) -> ImportFailed:
    """`call` raises ImportFailed whose errors hold every fragment, and no items table changed."""
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        call()
    assert table_counts() == before
    text = "\n".join(caught.value.errors)
    for fragment in fragments:
        assert fragment in text, text
    return caught.value


def locomo_conversation(speaker_a: str = "Ann", speaker_b: str = "Bob", sessions: int = 2, turns: int = 4) -> dict:
    doc = {"speaker_a": speaker_a, "speaker_b": speaker_b}
    for s in range(1, sessions + 1):
        doc[f"session_{s}_date_time"] = f"{s}:05 pm on {s + 2} May, 2023"
        doc[f"session_{s}"] = [
            {
                "speaker": speaker_a if t % 2 else speaker_b,
                "dia_id": f"D{s}:{t}",
                "text": f"turn {t} of session {s}",
            }
            for t in range(1, turns + 1)
        ]
    return doc


def twist_record(n: int = 1, conv: str = "conv-1", **overrides) -> dict:
    record = {
        "id": f"{conv}:v1b{n}",
        "conv": conv,
        "speaker": "Ann",
        "type": "contradicting",
        "family": "B2 negated-commitment",
        "draft": f"Hey Ann, draft {n}",
        "evidence": ["D1:1"],
        "contradicted_quote": "turn 1 of session 1",
        "rationale": "generator says so",
        "history_turns": 8,
    }
    record.update(overrides)
    return record


def write_jsonl(path: Path, records: list) -> Path:
    """Records are dicts (dumped as JSON) or raw strings (written as they are, one per line)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def locomo_dir(tmp_path) -> Path:
    """A LoCoMo folder with conv-1 (Ann/Bob) and conv-2 (Cy/Di), two dated sessions of four turns each."""
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "1.json").write_text(json.dumps(locomo_conversation(), indent=1), encoding="utf-8")
    (folder / "2.json").write_text(json.dumps(locomo_conversation("Cy", "Di"), indent=1), encoding="utf-8")
    return folder


@pytest.fixture
def small_corpus(db, locomo_dir):
    from items.services import corpus_import_locomo

    corpus_import_locomo(path=locomo_dir)
    return locomo_dir


@pytest.fixture
def twist_file(tmp_path):
    """Write a TWIST JSONL file named track_b_test.jsonl from records; returns its path."""

    def write(records: list, name: str = "track_b_test.jsonl") -> Path:
        return write_jsonl(tmp_path / name, records)

    return write
