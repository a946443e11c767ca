"""What a protocol declares. A protocol is one module in this package exporting `SPEC`, a `ProtocolSpec`;
everything outside the protocol modules asks the spec (through `protocols.get` / `protocols.for_kind`)
instead of branching on the protocol's name.

Pure: no database access, no imports from the apps above `items`.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# A free-text answer (a note) is copied into every revision; a page of text is plenty for a reason.
MAX_NOTE_CHARS = 10_000


@dataclass(frozen=True)
class Question:
    key: str
    phase: int
    choices: tuple[str, ...] | None  # None: free text
    applies_to: tuple[str, ...] | None = None  # gold values (TWIST Phase 2); None: every item
    label: str = ""


@dataclass(frozen=True)
class Benchmark:
    """The benchmark and track an item kind belongs to (created on first import)."""

    slug: str
    name: str
    track_slug: str
    track_name: str


@dataclass(frozen=True)
class ProtocolSpec:
    name: str  # the campaign's protocol value ("twist_b")
    label: str
    item_kind: str  # the Item.kind it annotates ("twist")
    item_kind_label: str
    benchmark: Benchmark
    version: str  # cited in key manifests ("twist-b-two-phase/1")
    # The only item fields an annotator may ever see. Everything else is gold or hidden. Never the
    # external id: ids can name the generation batch or the constructed label.
    blind_fields: tuple[str, ...]
    # Fields that hold gold, generator output or hidden conditions (audits and blindness tests).
    hidden_fields: tuple[str, ...]
    questions: tuple[Question, ...]
    primary_key: str  # the answer key compared between annotators
    gold_values: tuple[str, ...]  # what a key entry's gold may be
    # Gold value -> the primary answer that agrees with it (empty: the gold is the answer itself).
    gold_verdict: Mapping[str, str] = field(default_factory=dict)
    # Label -> binary class for binary agreement; labels absent from it are excluded (None: no binary figure).
    binary: Mapping[str, str] | None = None
    binary_label: str = ""
    conventions: tuple[str, ...] = ()
    phase2_conventions: tuple[str, ...] = ()
    item_template: str = ""
    # Extra checks a complete answer must satisfy beyond its choice questions (values -> done?).
    phase2_complete: Callable[[dict], bool] | None = None

    # --- agreement, the queue and keys (read by adjudication and keys) ---------------------------------
    # The answer keys agreement and the queue read for every item (notes are loaded for one item's page).
    agreement_keys: tuple[str, ...] = ()
    # Which figure set adjudication.agreement computes: "gold_verdict" (primary answer against the item's
    # gold, evidence questions, strata, retained set) or "labels" (labels, binary collapse, judges).
    agreement_figures: str = "labels"
    # Where a key entry's gold comes from: False, the item's gold field (relabelled by a decision);
    # True, the label the annotators agreed on (else the adjudicated label).
    gold_from_answers: bool = False
    # A key record: (record field, source) in order. Sources are key-entry attributes (external_id, gold,
    # evidence, quote, family, history_turns, provenance) or "verdict" (verdict_of(gold)).
    key_fields: tuple[tuple[str, str], ...] = (("id", "external_id"), ("label", "gold"), ("provenance", "provenance"))
    # Gold values whose key entry carries the item's contradicted quote (others carry "").
    quoted_gold: tuple[str, ...] = ()
    # A candidate record in a release bundle: (record field, Item field path) in order; "evidence" is the
    # item's evidence turn ids; a missing related object (a path through "__") exports as "".
    candidate_fields: tuple[tuple[str, str], ...] = (("id", "external_id"),)

    # --- questions -------------------------------------------------------------------------------------
    def question_map(self) -> dict[str, Question]:
        return {q.key: q for q in self.questions}

    def validate_values(self, values: dict, gold: str = "") -> list[str]:
        """Problems with a (partial) answer: unknown keys, values outside the allowed choices, questions
        that do not apply to this item. Messages name the field only, never the item."""
        problems = []
        questions = self.question_map()
        for key, value in values.items():
            question = questions.get(key)
            if question is None:
                problems.append(f"field '{key}': not a question of this protocol (allowed: {', '.join(questions)})")
                continue
            if not isinstance(value, str):
                problems.append(f"field '{key}': must be a string, got {type(value).__name__}")
                continue
            if question.choices is None and len(value) > MAX_NOTE_CHARS:
                problems.append(f"field '{key}': {len(value):,} characters; a note holds at most {MAX_NOTE_CHARS:,}")
                continue
            if question.choices is not None and value != "" and value not in question.choices:
                problems.append(f"field '{key}': '{value}' is not one of {', '.join(question.choices)}")
            if question.applies_to is not None and gold and gold not in question.applies_to and value != "":
                problems.append(f"field '{key}': does not apply to this item")
        return problems

    def phase_of(self, key: str) -> int:
        return self.question_map()[key].phase

    @property
    def has_phase2(self) -> bool:
        return any(q.phase == 2 for q in self.questions)

    def phase1_done(self, values: dict) -> bool:
        """Every Phase 1 choice question is answered (notes are optional)."""
        return all(values.get(q.key) for q in self.questions if q.phase == 1 and q.choices is not None)

    def phase2_keys_for(self, gold: str) -> tuple[str, ...]:
        """The Phase 2 questions asked of an item (they depend on its gold: never show before Phase 2)."""
        return tuple(
            q.key for q in self.questions if q.phase == 2 and (q.applies_to is None or gold in q.applies_to)
        )

    def phase2_done(self, values: dict, gold: str) -> bool:
        """Phase 2 is answered for this item; a protocol without Phase 2 is done when Phase 1 is."""
        if not self.has_phase2:
            return self.phase1_done(values)
        questions = self.question_map()
        for key in self.phase2_keys_for(gold):
            if questions[key].choices is not None and not values.get(key):
                return False
        return self.phase2_complete is None or self.phase2_complete(values)

    @property
    def primary_choices(self) -> tuple[str, ...]:
        return self.question_map()[self.primary_key].choices or ()

    # --- gold --------------------------------------------------------------------------------------------
    def verdict_of(self, gold: str) -> str:
        """The primary answer that agrees with a gold value ('' for an unknown gold)."""
        if self.gold_verdict:
            return self.gold_verdict.get(gold, "")
        return gold if gold in self.gold_values else ""

    def collapse(self, label: str | None) -> str | None:
        """The binary class of a label (None: excluded from binary agreement, or no binary figure)."""
        if self.binary is None:
            return None
        return self.binary.get(label or "")

    # --- items -------------------------------------------------------------------------------------------
    def blind_view(self, item) -> dict:
        """What an annotator may see of an item's own fields: built from the whitelist only."""
        return {name: getattr(item, name) for name in self.blind_fields}
