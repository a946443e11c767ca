"""Track C's chain items: families and query kinds, the import line and its validator, conversation
versions, the per-item gates (reject reasons) and the verification-as-seen prompt (docs/twist_c.md)."""

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from protocols.base import ItemContent

# --- families and query kinds (SCENARIOS.md, exact names) ------------------------------------------------
C1, C2, C3, C4, HN_C1 = "C1", "C2", "C3", "C4", "HN-C1"
FAMILIES = {
    C1: "Single update",
    C2: "Double update",
    C3: "History-aware query",
    C4: "Post-resolution",
    HN_C1: "Coexisting facts",
}
CURRENT, HISTORY, POST_RESOLUTION = "current", "history", "post_resolution"
QUERY_KIND = {C1: CURRENT, C2: CURRENT, C3: HISTORY, C4: POST_RESOLUTION, HN_C1: CURRENT}
UPDATE_FAMILIES = (C1, C2, C3, C4)  # chains where a later step supersedes an earlier one
# Steps per chain: C1 F0 → F1, C2 F0 → F1 → F2 (PROTOCOL §14). The sources fix no length for C3 and C4:
# Goldkey allows a single or a double update there, and two facts for a coexistence item.
STEP_COUNTS = {C1: (2,), C2: (3,), C3: (2, 3), C4: (2, 3), HN_C1: (2,)}

# The relation an item's chain is (the gold of question q1).
SUPERSESSION, COEXISTENCE, CANNOT_TELL = "supersession", "coexistence", "cannot-tell"
RELATIONS = (SUPERSESSION, COEXISTENCE)


def relation_of(family: str) -> str:
    return COEXISTENCE if family == HN_C1 else SUPERSESSION


# --- the import line (JSON Lines, one item a line; docs/twist_c.md) -------------------------------------
MAX_TEXT = 10_000  # one turn, one question, one answer: a page of text is plenty


class Step(BaseModel):
    """One step of a chain: the turn it cites, copied verbatim, and the belief value it states."""

    model_config = ConfigDict(extra="forbid", strict=True)

    turn_id: str = Field(min_length=1, max_length=40)
    date: str = Field(min_length=1, max_length=100)
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    value: str = Field(min_length=1, max_length=1_000)


class ChainItem(BaseModel):
    """One Track C item = one query over one chain (the per-protocol content of an Item)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1, max_length=200)
    conversation: str = Field(min_length=1, max_length=200)  # the original conversation
    conversation_version: str = Field(min_length=1, max_length=200)  # the version with injected turns
    family: str
    question: str = Field(min_length=1, max_length=MAX_TEXT)
    gold: str = Field(min_length=1, max_length=MAX_TEXT)
    steps: list[Step] = Field(min_length=1, max_length=10)
    superseded: list[str] = Field(default_factory=list, max_length=10)  # the superseded values, in order

    @field_validator("family")
    @classmethod
    def _known_family(cls, value: str) -> str:
        if value not in FAMILIES:
            raise ValueError(f"'{value}' is not one of {', '.join(FAMILIES)}")
        return value

    @property
    def query_kind(self) -> str:
        return QUERY_KIND[self.family]


def _field_name(loc: Sequence) -> str:
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "line"


def validate_line(text: str) -> tuple[ChainItem | None, list[str]]:
    """(the item, []) or (None, ["field: problem", …]) for one line of an import file; the importer
    prefixes FILE:LINE. Never raises on any input."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return None, [f"line: not valid JSON ({str(error)[:80]})"]
    return validate_record(data)


def validate_record(data: object) -> tuple[ChainItem | None, list[str]]:
    """`validate_line` of a line already read as JSON (the importer reads lines with the hostile-input
    limits every import has)."""
    if not isinstance(data, dict):
        return None, [f"line: must be a JSON object, got {type(data).__name__}"]
    try:
        return ChainItem.model_validate(data), []
    except ValidationError as error:
        return None, [f"{_field_name(e['loc'])}: {e['msg']}" for e in error.errors()]


# --- the stored item ---------------------------------------------------------------------------------------
# Where a line goes once imported: `id` → the item's external id, `conversation_version` → its conversation
# (a version of `conversation`), `family` → its family, the chain's relation → its gold label; each step →
# a citation of its turn in the role "step" at its chain position; the rest → the content below.
STEP_ROLE = "step"


class ChainContent(ItemContent):
    """A Track C item's content (docs/twist_c.md): the query, the proposed gold answer and the chain's values.
    The step values and the superseded values are hidden: an annotator judges the turns, not a labelled
    answer key."""

    question: str = Field("", description="The query asked over the chain.")
    answer: str = Field("", description="The proposed gold answer, shown to annotators as the answer to validate.")
    step_values: list[str] = Field(default_factory=list, description="The belief value each chain step states, in chain order (hidden).")
    superseded: list[str] = Field(default_factory=list, description="The superseded values, in order; none for coexisting facts (hidden).")


def content_of_line(item: ChainItem) -> dict:
    return {"question": item.question, "answer": item.gold, "step_values": [s.value for s in item.steps],
            "superseded": list(item.superseded)}


def chain_item(*, external_id: str, family: str, conversation: str, conversation_version: str, content: Mapping,
               cited: Sequence[Mapping]) -> ChainItem:
    """The chain item of a stored item: its columns, its content and its step citations in chain order
    (each {"turn_id", "date", "speaker", "text"}), as the import line gave them."""
    values = list(content.get("step_values") or [])
    steps = [Step.model_construct(turn_id=c["turn_id"], date=c["date"], speaker=c["speaker"], text=c["text"],
                                  value=values[n] if n < len(values) else "") for n, c in enumerate(cited)]
    return ChainItem.model_construct(
        id=external_id, conversation=conversation, conversation_version=conversation_version, family=family,
        question=content.get("question", ""), gold=content.get("answer", ""), steps=steps,
        superseded=list(content.get("superseded") or []),
    )


# --- conversation versions ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    """A turn of a conversation version where the record puts it: session number and position within it."""

    turn_id: str
    session: int
    position: int
    date: str
    speaker: str
    text: str

    @property
    def order(self) -> tuple[int, int]:
        return (self.session, self.position)


_SESSION = re.compile(r"^session_(\d+)$")


def turns_of(conversation: Mapping) -> dict[str, Turn]:
    """The turns of a LoCoMo-shaped conversation (`session_N`, `session_N_date_time`) by turn id."""
    turns = {}
    for key, value in conversation.items():
        match = _SESSION.match(key)
        if not match or not isinstance(value, list):
            continue
        session = int(match.group(1))
        date = str(conversation.get(f"{key}_date_time", ""))
        for position, turn in enumerate(value):
            turns[turn["dia_id"]] = Turn(turn["dia_id"], session, position, date, turn["speaker"], turn["text"])
    return turns


def version_reasons(original: Mapping, version: Mapping) -> list[str]:
    """A version only adds turns: every original turn is in it, unchanged (speaker, text, session date),
    in the same relative order. Injected turns make a new version; they never edit the original."""
    old, new = turns_of(original), turns_of(version)
    reasons = []
    for turn_id, turn in old.items():
        kept = new.get(turn_id)
        if kept is None:
            reasons.append(f"version drops original turn {turn_id}")
        elif (kept.speaker, kept.text, kept.date, kept.session) != (turn.speaker, turn.text, turn.date, turn.session):
            reasons.append(f"version changes original turn {turn_id}")
    kept_order = [t for t in sorted(old, key=lambda t: old[t].order) if t in new]
    if [new[t].order for t in kept_order] != sorted(new[t].order for t in kept_order):
        reasons.append("version reorders original turns")
    return reasons


# --- per-item gates (each returns reject reasons; [] passes) ---------------------------------------------
def gate_steps_resolve(item: ChainItem, turns: Mapping[str, Turn]) -> list[str]:
    """Every step cites a turn of its conversation version, with that turn's date, speaker and verbatim text."""
    reasons = []
    for n, step in enumerate(item.steps):
        turn = turns.get(step.turn_id)
        if turn is None:
            reasons.append(f"steps[{n}]: turn {step.turn_id} is not in {item.conversation_version}")
            continue
        for name in ("date", "speaker", "text"):
            if getattr(step, name) != getattr(turn, name):
                reasons.append(f"steps[{n}].{name}: differs from turn {step.turn_id} of {item.conversation_version}")
    return reasons


def gate_order(item: ChainItem, turns: Mapping[str, Turn]) -> list[str]:
    """Update steps are strictly ordered by (session, turn) in the record. Coexistence items are exempt:
    both facts stay current and may share a date (or a turn)."""
    if item.family == HN_C1:
        return []
    orders = [turns[s.turn_id].order for s in item.steps if s.turn_id in turns]
    if len(orders) == len(item.steps) and any(a >= b for a, b in zip(orders, orders[1:], strict=False)):
        return ["steps: update steps are not strictly ordered by (session, turn)"]
    return []


def gate_step_count(item: ChainItem) -> list[str]:
    allowed = STEP_COUNTS[item.family]
    if len(item.steps) not in allowed:
        counts = " or ".join(str(n) for n in allowed)
        return [f"steps: {item.family} ({FAMILIES[item.family]}) has {counts} steps, got {len(item.steps)}"]
    return []


_WORD = re.compile(r"[0-9A-Za-zÀ-ÿ']+")
_STOPWORDS = frozenset(
    "a an and the of to in on at for with by from as is are was were be been it its this that their his her "
    "my our your they them he she we i you not no or but so than then now".split()
)


def _words(text: str) -> list[str]:
    return [w.casefold().strip("'") for w in _WORD.findall(text)]


def _content_words(text: str) -> list[str]:
    return [w for w in _words(text) if w and w not in _STOPWORDS]


def _mentions(text: str, value: str) -> bool:
    """Does `text` state `value`, as far as words tell: every content word of the value occurs in it."""
    have = set(_words(text))
    wanted = _content_words(value) or _words(value)
    return bool(wanted) and all(w in have for w in wanted)


def _position(text: str, value: str) -> int:
    """Where `value` is first named in `text`: the first place its content words follow one another among
    the text's content words; -1 when they never do."""
    words = _content_words(text)
    wanted = _content_words(value) or _words(value)
    for i in range(len(words) - len(wanted) + 1):
        if wanted and words[i:i + len(wanted)] == wanted:
            return i
    return -1


def gate_gold(item: ChainItem) -> list[str]:
    """The gold fits the query kind and the superseded values are the chain's earlier values in order:
    current-state and post-resolution gold names the last step's value (HN-C1: every fact), history gold
    names every state in chain order; an update chain's superseded values are its earlier steps' values,
    a coexistence item has none."""
    values = [s.value for s in item.steps]
    reasons = []
    if item.family == HN_C1:
        if item.superseded:
            reasons.append("superseded: a coexistence item supersedes nothing")
        if not all(_mentions(item.gold, v) for v in values):
            reasons.append("gold: a coexistence gold names every fact, both still current")
        return reasons
    if [v.strip() for v in item.superseded] != [v.strip() for v in values[:-1]]:
        reasons.append("superseded: must be the values of every step but the last, in chain order")
    if item.query_kind == HISTORY:
        positions = [_position(item.gold, v) for v in values]
        if -1 in positions or positions != sorted(positions) or len(set(positions)) < len(positions):
            reasons.append("gold: a history-aware gold names every state in chain order")
    elif not _mentions(item.gold, values[-1]):
        reasons.append(f"gold: a {item.query_kind.replace('_', '-')} gold names the last step's value")
    return reasons


def gate_self_contained(item: ChainItem) -> list[str]:
    """TWIST §4.3 rule 1, as far as a deterministic check can tell: each step's own text carries its
    belief value — every content word of the value (stopwords aside, case folded) occurs in that step's
    text. It catches a value read from another turn or from the generator's idea of it; it cannot tell a
    paraphrase from a different belief, which is what the annotators' q3 and the verification-as-seen gate
    are for."""
    return [
        f"steps[{n}].text: does not state its value '{s.value}'"
        for n, s in enumerate(item.steps) if not _mentions(s.text, s.value)
    ]


def structural_reasons(item: ChainItem, turns: Mapping[str, Turn]) -> list[str]:
    """Every deterministic gate of one item, in order (the verification-as-seen gate needs an LLM)."""
    return [
        *gate_steps_resolve(item, turns), *gate_order(item, turns), *gate_step_count(item),
        *gate_gold(item), *gate_self_contained(item),
    ]


# --- verification-as-seen (TWIST §4.3 rule 2): an LLM reads only the dated standalone steps -----------
VERIFY_PROMPT_VERSION = "twist-c-verify/1"
VERIFY_PROMPT = """You are validating an item for a benchmark of memory systems. You see ONLY a few dated
statements retrieved from a long conversation record, exactly as a memory system would retrieve them, in no
particular order. Judge strictly from their text and dates.

Statements:
{statements}

1. relation: does a later statement replace an earlier belief ("supersession"), or are the statements all
   still true together ("coexistence")? An acknowledged change of mind is a supersession.
2. order: the statement labels from the oldest belief to the newest.
3. current: what is true now, in the words of the statement that says so.

Reply with ONLY a JSON object: {{"relation": "supersession" | "coexistence", "order": ["S1", ...], "current": "..."}}"""


def _shown_order(item: ChainItem) -> list[int]:
    # A fixed shuffle per item, so that the record order the steps are cited in tells the model nothing.
    order = list(range(len(item.steps)))
    random.Random(int(hashlib.sha256(item.id.encode()).hexdigest()[:16], 16)).shuffle(order)
    return order


def verification_prompt(item: ChainItem) -> tuple[str, list[int]]:
    """(the prompt, step index shown as S1, S2, …): dated standalone steps only — no family, no values, no
    question, no gold, no id."""
    order = _shown_order(item)
    lines = [f"S{n}. [{item.steps[i].date}] {item.steps[i].speaker}: {item.steps[i].text}" for n, i in enumerate(order, 1)]
    return VERIFY_PROMPT.format(statements="\n".join(lines)), order


def parse_verification(reply: str) -> dict | None:
    """The model's JSON object (the first {...} in the reply), or None when there is none."""
    match = re.search(r"\{.*\}", reply, flags=re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def gate_verification(item: ChainItem, shown: Sequence[int], reply: str) -> list[str]:
    """Does the model, reading only the dated steps, recover the relation, the order (update chains) and the
    current value? Any miss is a reject reason."""
    data = parse_verification(reply)
    if data is None:
        return ["verification: the reply holds no JSON object"]
    reasons = []
    expected = relation_of(item.family)
    if data.get("relation") != expected:
        reasons.append(f"verification: read as {data.get('relation')!r}, the chain is a {expected}")
    if expected == SUPERSESSION:
        labels = {f"S{n}": i for n, i in enumerate(shown, 1)}
        order = data.get("order")
        if not isinstance(order, list) or [labels.get(str(x)) for x in order] != list(range(len(item.steps))):
            reasons.append("verification: the chain's order was not recovered from the dated steps")
        if not _mentions(str(data.get("current", "")), item.steps[-1].value):
            reasons.append("verification: the current value was not recovered from the dated steps")
    return reasons
