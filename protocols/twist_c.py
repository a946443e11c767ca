"""TWIST Track C, belief supersession (PROTOCOL.md §14; TWIST §3.4, §4.3, §5.2, Appendices B–C; the
authors' SCENARIOS.md "Track C"). An item is one query over one update chain: the chain's steps each cite a
turn of a conversation *version* (the original with injected turns; the original is never edited), the
query kind follows from the family, and the gold answer is the latest value (current-state), every state in
order (history-aware) or both facts (HN-C1 coexistence).

No one has released Track C items: the import shape, the blind view, the questions, the deterministic
self-containment check and the coexistence-retention metric are Goldkey's own design on top of the
authors' specification (docs/twist_c.md says which part is whose).

Pure, like every protocol module: pydantic and the standard library, no app. Gates return reject reasons;
the importer (after the item model is reshaped) prefixes FILE:LINE to the line validator's field errors and
writes the reasons into the release's rejects. Not yet registered in `protocols.PROTOCOL_MODULES`.
"""

import hashlib
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from protocols.base import (
    COUNCIL_MAJORITY_AGAINST,
    COUNCIL_SYSTEM,
    DISCUSS,
    DROP,
    MAJORITY_AGAINST,
    MISSING_ANSWERS,
    AnswerFile,
    Benchmark,
    CouncilPrompt,
    ProtocolSpec,
    Question,
    Wording,
)
from protocols.judged import (
    ADMISSIBLE_RATE,
    GOLD,
    NON_ANSWER,
    PERTURBED,
    STALE,
    TEMPLATES,
    UNORDERED,
    Decoy,
    _perturb,
    _restated,
)

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

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    turn_id: str = Field(min_length=1, max_length=40)
    date: str = Field(min_length=1, max_length=100)
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    value: str = Field(min_length=1, max_length=1_000)


class ChainItem(BaseModel):
    """One Track C item = one query over one chain (the per-protocol content of an Item)."""

    model_config = ConfigDict(extra="forbid")

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
    if not isinstance(data, dict):
        return None, [f"line: must be a JSON object, got {type(data).__name__}"]
    try:
        return ChainItem.model_validate(data), []
    except ValidationError as error:
        return None, [f"{_field_name(e['loc'])}: {e['msg']}" for e in error.errors()]


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
3. current: what is true now, in a few words.

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


# --- the blind view and the questions -------------------------------------------------------------------
_TURN_ID = re.compile(r"^D(\d+):(\d+)$")


def _record_key(step: Step) -> tuple:
    match = _TURN_ID.match(step.turn_id)
    return (int(match.group(1)), int(match.group(2))) if match else (10**9, 0)


def blind_view(item: ChainItem) -> dict:
    """What an annotator (and the council) sees: the cited turns in record order (turn id, date, speaker,
    verbatim text), the question and the proposed answer. Built from a whitelist: never the family, the
    query kind, the step values or the superseded values as labelled fields, nor the item id."""
    turns = sorted(item.steps, key=_record_key)
    return {
        "turns": [{"turn_id": s.turn_id, "date": s.date, "speaker": s.speaker, "text": s.text} for s in turns],
        "question": item.question,
        "proposed_answer": item.gold,
    }


# One phase: the proposed answer is part of what is validated (is it right for the question?), so there is
# no verdict to give blind to it, unlike Track B's q1.
QUESTIONS = (
    Question("q1", 1, (SUPERSESSION, COEXISTENCE, CANNOT_TELL),
             label="Do these turns show one belief replacing another, or are both still true?", column="Relation (q1)"),
    Question("q2", 1, ("yes", "no"),
             label="Is the proposed answer right for the question, as the turns stand?", column="Answer right (q2)"),
    Question("q3", 1, ("yes", "no"),
             label="Does each turn state its belief by itself, without the others?", column="Self-contained (q3)"),
    Question("q1note", 1, None, label="Note", note=True),
)
CONVENTIONS = (
    "Supersession: a later turn replaces an earlier belief. Coexistence: the turns look conflicting but both "
    "stay true (painting and pottery).",
    "An acknowledged revision (\"I know I said never, but…\") counts as a supersession here (in Track A it is a "
    "hard negative, not a contradiction).",
    "A question about the current state is answered by the latest belief; a question about change names every "
    "state in order; where both facts stay true, the answer names both.",
    "Read each turn on its own for q3: would it carry its belief if it were the only turn retrieved?",
    "The turns are the latest known record: do not imagine later changes.",
)

Q1_DISAGREEMENT = "q1_disagreement"
Q1_AGREED_AGAINST_GOLD = "q1_agreed_against_gold"
Q2_ANSWER_WRONG = "q2_answer_wrong"
Q3_NOT_SELF_CONTAINED = "q3_not_self_contained"
REASONS = {
    Q1_DISAGREEMENT: "the two q1 relations differ",
    Q1_AGREED_AGAINST_GOLD: "both annotators agree on a relation that differs from the chain's",
    Q2_ANSWER_WRONG: "an annotator says the proposed answer is wrong for its question (q2 = no)",
    Q3_NOT_SELF_CONTAINED: "an annotator says a turn does not state its belief by itself (q3 = no)",
    MISSING_ANSWERS: "an annotator's relation is missing (left out of kappa)",
    COUNCIL_MAJORITY_AGAINST: "more than half of the council members actively vote against the chain's relation",
}


def queue_rules(spec: ProtocolSpec, gold: str, answers: Sequence[dict | None],
                council_votes: Sequence[dict] | None = None) -> list[str]:
    """TWIST's queue rules (PROTOCOL §3, as Track B applies them) over the Track C questions; `gold` is the
    chain's relation (supersession / coexistence)."""
    answers = [a or {} for a in answers]
    relations = [a.get("q1") for a in answers]
    present = [r for r in relations if r]
    reasons = []
    if len(set(present)) > 1:
        reasons.append(Q1_DISAGREEMENT)
    elif len(present) == len(relations) and len(present) >= 2 and present[0] != gold:
        reasons.append(Q1_AGREED_AGAINST_GOLD)
    if any(a.get("q2") == "no" for a in answers):
        reasons.append(Q2_ANSWER_WRONG)
    if any(a.get("q3") == "no" for a in answers):
        reasons.append(Q3_NOT_SELF_CONTAINED)
    if len(present) < 2 or len(present) < len(relations):
        reasons.append(MISSING_ANSWERS)
    if council_votes and spec.council_band(gold, council_votes) == MAJORITY_AGAINST:
        reasons.append(COUNCIL_MAJORITY_AGAINST)
    return reasons


def suggest(spec: ProtocolSpec, gold: str, answers: list[dict], reasons: Sequence[str]) -> tuple[str, str]:
    """Both say a turn is not self-contained → drop; both agree against the chain's relation → drop;
    both say the answer is wrong → drop; otherwise discuss."""
    both = len(answers) >= 2
    if both and all(a.get("q3") == "no" for a in answers):
        return DROP, "both annotators say a turn does not state its belief by itself"
    if Q1_AGREED_AGAINST_GOLD in reasons:
        return DROP, "both annotators agree against the chain's relation"
    if both and all(a.get("q2") == "no" for a in answers):
        return DROP, "both annotators say the proposed answer is wrong"
    return DISCUSS, "no drop rule applies: weigh the answers and notes"


def key_entry(item: ChainItem) -> dict:
    """What a frozen key's entry carries for one item: the chain, the gold and the superseded values."""
    return {
        "id": item.id, "family": item.family, "query_kind": item.query_kind,
        "conversation_version": item.conversation_version, "question": item.question, "gold": item.gold,
        "chain": [{"turn_id": s.turn_id, "date": s.date, "value": s.value} for s in item.steps],
        "superseded": list(item.superseded),
    }


COUNCIL_PHASE1 = """You see the dated turns of a conversation record that a memory system would retrieve, a question
and a proposed answer.

Turns:
{excerpts}

Question: {question}
Proposed answer: {proposed_answer}

q1: Do the turns show one belief replacing another ("supersession") or are both still true ("coexistence")?
An acknowledged revision counts as a supersession. "cannot-tell" if the turns do not say.
q2: Is the proposed answer right for the question as the turns stand? "yes"/"no".
q3: Does each turn state its belief by itself? "yes"/"no". Optional "q1note".

Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""

# Not registered yet: the fields that name Item columns (blind_fields, hidden_fields, key_fields,
# candidate_fields), the importer and the templates are set when the item model gives every protocol its
# content (docs/twist_c.md, "Wiring").
SPEC = ProtocolSpec(
    name="twist_c",
    label="TWIST Track C (belief supersession)",
    item_kind="twist_c",
    item_kind_label="TWIST Track C chain query",
    benchmark=Benchmark(
        "twist", "TWIST", "track-c", "Track C (belief supersession)",
        license="cc-by-4.0",
        homepage="https://github.com/subratpanda/twist-benchmark",
        task_categories=("question-answering",),
        tags=("conversational-memory", "belief-update", "human-validated", "evaluation"),
        source_datasets=("original", "extended|locomo"),
    ),
    version="twist-c/1",
    blind_fields=(),
    hidden_fields=("external_id", "content"),
    questions=QUESTIONS,
    primary_key="q1",
    abstain=CANNOT_TELL,
    agreement_keys=("q1", "q2", "q3"),
    gold_values=RELATIONS,
    answer_file=AnswerFile(layout="document", stem="answers", suffix=".json"),
    conventions=CONVENTIONS,
    reasons=REASONS,
    queue_rules=queue_rules,
    suggest=suggest,
    agreement_figures="gold_verdict",
    wording=Wording(forest_caption=" overall and per family", confusion_caption=" (q1, all items)"),
    council_prompt=CouncilPrompt(name="twist-c-v1", system=COUNCIL_SYSTEM, phase1=COUNCIL_PHASE1),
    generation_gates=True,
)


# --- judge decoys from chains (TWIST Appendix C) ----------------------------------------------------------
# The judged-answer decoys are version 1 (built from an item's `previous_answer`); chain-built decoys are
# version 2: stale-as-current takes the immediately superseded value, and the unordered template names every
# state, newest first, with no word of order.
DECOY_VERSION = "judged-decoys/2"
DECOY_CLASSES = (STALE, PERTURBED, NON_ANSWER, UNORDERED)
TEMPLATES_V2 = {**TEMPLATES, UNORDERED: "You've mentioned {states}."}
NOT_APPLICABLE = "not applicable"


class DecoySetError(ValueError):
    """A decoy class applies to a set but none could be built: the set cannot calibrate a judge."""


def applicable_classes(item: ChainItem) -> tuple[str, ...]:
    """The decoy classes of one probe (Appendix C): stale-as-current for current-state and history-aware probes
    of update chains; perturbed detail and fluent non-answer for every current-state and history-aware probe;
    unordered both-states for history-aware probes only. Post-resolution probes get none (Appendix C builds
    decoys for free-text current-state and history-aware probes)."""
    kind = item.query_kind
    if kind not in (CURRENT, HISTORY):
        return ()
    classes = [STALE] if item.family != HN_C1 else []
    classes += [PERTURBED, NON_ANSWER]
    if kind == HISTORY:
        classes.append(UNORDERED)
    return tuple(c for c in DECOY_CLASSES if c in classes)


def _perturb_current(item: ChainItem, answer: str, values: list[str]) -> tuple[str, str]:
    """The current fact with one slot changed. A current-state probe: the last value. A history-aware answer:
    the last value changed where the gold quotes it (so the earlier states stay as they were), else the gold.
    A coexistence answer: the gold (both facts are current)."""
    if item.family == HN_C1:
        return _perturb(answer)
    perturbed, slot = _perturb(values[-1])
    if item.query_kind == CURRENT:
        return perturbed, slot
    if perturbed and values[-1] in answer:
        head, _, tail = answer.rpartition(values[-1])
        return head + perturbed + tail, slot
    return _perturb(answer)


def chain_decoys(item: ChainItem) -> tuple[list[Decoy], list[str]]:
    """The gold answer and one decoy per applicable class, and the applicable classes it could not give (why)."""
    classes = applicable_classes(item)
    if not classes:
        return [], []
    answer = item.gold.strip().rstrip(".")
    made = [Decoy(item.id, GOLD, TEMPLATES_V2[GOLD].format(answer=answer), version=DECOY_VERSION)]
    missing = []
    values = [s.value.strip().rstrip(".") for s in item.steps]
    if STALE in classes:
        # F0 of a single update, F1 of a double: the belief the current one replaced.
        made.append(Decoy(item.id, STALE, TEMPLATES_V2[STALE].format(previous=values[-2]), version=DECOY_VERSION))
    if PERTURBED in classes:
        perturbed, slot = _perturb_current(item, answer, values)
        if perturbed:
            made.append(Decoy(item.id, PERTURBED, TEMPLATES_V2[PERTURBED].format(answer=perturbed), slot=slot,
                              version=DECOY_VERSION))
        else:
            missing.append(f"{PERTURBED}: no date, number, direction, entity or location to change")
    if NON_ANSWER in classes:
        made.append(Decoy(item.id, NON_ANSWER, TEMPLATES_V2[NON_ANSWER].format(restated=_restated(item.question)),
                          version=DECOY_VERSION))
    if UNORDERED in classes:
        states = " and ".join(reversed(values))
        made.append(Decoy(item.id, UNORDERED, TEMPLATES_V2[UNORDERED].format(states=states), version=DECOY_VERSION))
    return made, missing


def calibration_set(items: Sequence[ChainItem], *, seed: int) -> tuple[list[dict], dict[str, str | int]]:
    """The mixed calibration set of a Track C item set: gold answers and decoys in one seeded random order,
    ids from positions, and per class its count or "not applicable". Raises DecoySetError when a class
    applies to the set and is empty."""
    pool = []
    applies: set[str] = set()
    for item in sorted(items, key=lambda i: i.id):
        applies.update(applicable_classes(item))
        pool.extend(chain_decoys(item)[0])
    counts: dict[str, str | int] = {}
    for cls in DECOY_CLASSES:
        n = sum(d.cls == cls for d in pool)
        if cls not in applies:
            counts[cls] = NOT_APPLICABLE
        elif not n:
            raise DecoySetError(f"{cls}: applies to this set but no decoy could be built")
        else:
            counts[cls] = n
    counts[GOLD] = sum(d.cls == GOLD for d in pool)
    random.Random(seed).shuffle(pool)
    by_id = {i.id: i for i in items}
    records = [
        {"id": f"c{n:04d}", "source": d.source, "question": by_id[d.source].question, "answer": by_id[d.source].gold,
         "response": d.response, "class": d.cls, "slot": d.slot, "version": d.version}
        for n, d in enumerate(pool, start=1)
    ]
    return records, counts


def admissibility(results: Iterable[tuple[str, bool]], counts: Mapping[str, str | int] | None = None,
                  ) -> tuple[bool, dict[str, dict], list[str]]:
    """Is a judge admissible on this set? `results`: (class, judge accepted the response) per record;
    `counts`: the set's classes as `calibration_set` gives them, so that an applicable class the judge was
    not run on fails rather than passing unseen. Every decoy class must be rejected at ≥ 95 %, and the gold
    answers accepted at ≥ 95 % (else a judge that rejects everything would pass). Returns (admissible, per
    class {"n", "k", "rate"} where k counts rejections — acceptances for gold —, the failing classes with why)."""
    tally: dict[str, list[int]] = {}
    for cls, accepted in results:
        n_k = tally.setdefault(cls, [0, 0])
        n_k[0] += 1
        n_k[1] += accepted if cls == GOLD else not accepted
    figures = {cls: {"n": n, "k": k, "rate": k / n} for cls, (n, k) in tally.items()}
    failing = []
    for cls, f in figures.items():
        if f["rate"] < ADMISSIBLE_RATE:
            what = "accepts" if cls == GOLD else "rejects"
            failing.append(f"{cls}: {what} {f['k']}/{f['n']} ({f['rate']:.0%}), below {ADMISSIBLE_RATE:.0%}")
    expected = [c for c, n in (counts or {}).items() if n != NOT_APPLICABLE]
    for cls in dict.fromkeys([*expected, GOLD]):
        if cls not in figures:
            failing.append(f"{cls}: applies to this set but none was graded")
    return not failing, figures, failing


def refusal(judge: str, failing: Sequence[str]) -> str:
    """Why a judge may not score a Track C run: the message names each failing class."""
    return f"judge {judge} is not admissible for Track C scoring: " + "; ".join(failing)


# --- scores of a run (TWIST §3.4) ----------------------------------------------------------------------------
# What the judge says a run's free-text answer does: gives the current value, asserts a superseded one as
# current, names every state in order, names them without order, gives every coexisting fact as current, or
# none of these.
ANSWERED_CURRENT, ANSWERED_STALE = "current", "stale"
ANSWERED_HISTORY, ANSWERED_UNORDERED, ANSWERED_BOTH, ANSWERED_OTHER = "history_in_order", "history_unordered", "both_current", "other"
ANSWER_VERDICTS = (ANSWERED_CURRENT, ANSWERED_STALE, ANSWERED_HISTORY, ANSWERED_UNORDERED, ANSWERED_BOTH, ANSWERED_OTHER)
METRICS = ("current_answer_rate", "stale_answer_rate", "history_retention", "stale_after_resolution",
           "coexistence_retention")


def run_metrics(judged: Iterable[tuple[ChainItem, str]]) -> dict[str, dict]:
    """Counts {"k", "n"} per metric over (item, judged verdict of the run's answer):

    current_answer_rate / stale_answer_rate: current-state probes of update chains (C1, C2) answered with
      the latest value / with a superseded value asserted as current;
    history_retention: history-aware probes (C3) answered with every state in order;
    stale_after_resolution: post-resolution probes (C4) still asserting the refuted value; resolution
      responsiveness is the stale-answer rate minus this one (present only when the run has C4 answers);
    coexistence_retention: HN-C1 probes answered with every fact still current — Goldkey's own control
      metric (none of the sources scores HN-C1).

    Counts only: the scoring app, above the protocols, puts the Wilson intervals on them
    (goldkey.lib.statistics), so that one module does statistics."""
    counts = {m: {"k": 0, "n": 0} for m in METRICS}

    def add(metric: str, hit: bool) -> None:
        counts[metric]["n"] += 1
        counts[metric]["k"] += hit

    for item, verdict in judged:
        if verdict not in ANSWER_VERDICTS:
            raise ValueError(f"verdict: '{verdict}' is not one of {', '.join(ANSWER_VERDICTS)}")
        if item.family in (C1, C2):
            add("current_answer_rate", verdict == ANSWERED_CURRENT)
            add("stale_answer_rate", verdict == ANSWERED_STALE)
        elif item.family == C3:
            add("history_retention", verdict == ANSWERED_HISTORY)
        elif item.family == C4:
            add("stale_after_resolution", verdict == ANSWERED_STALE)
        else:
            add("coexistence_retention", verdict == ANSWERED_BOTH)
    return counts


def resolution_responsiveness(counts: Mapping[str, Mapping]) -> float | None:
    """The change in stale-answer rate after `resolve` (before − after); None without both figures."""
    before, after = counts["stale_answer_rate"], counts["stale_after_resolution"]
    if not before["n"] or not after["n"]:
        return None
    return before["k"] / before["n"] - after["k"] / after["n"]
