"""The annotation protocols: which answer keys exist, their allowed values, and which phase owns them.

Pure: no database access. Services validate every answer (web, API, import) against these tables.
"""

from dataclasses import dataclass

from items.models import GoldType

TWIST_Q1 = ("contradicts", "consistent", "cannot-tell")
LAPSE_LABELS = ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT")


@dataclass(frozen=True)
class Question:
    key: str
    phase: int
    choices: tuple[str, ...] | None  # None: free text
    applies_to: tuple[str, ...] | None = None  # gold types (TWIST Phase 2); None: every item


TWIST_QUESTIONS = (
    Question("q1", 1, TWIST_Q1),
    Question("q1note", 1, None),
    Question("q2", 2, ("yes", "no"), (GoldType.CONTRADICTING,)),
    Question("q2quote", 2, ("yes", "no"), (GoldType.CONTRADICTING,)),
    Question("q3", 2, ("clean", "conflict"), (GoldType.ALIGNED, GoldType.HARD_NEGATIVE)),
    Question("q3turn", 2, None, (GoldType.ALIGNED, GoldType.HARD_NEGATIVE)),
    Question("p2note", 2, None),
)
LAPSE_QUESTIONS = (
    Question("label", 1, LAPSE_LABELS),
    Question("notes", 1, None),
)
QUESTIONS = {"twist_b": TWIST_QUESTIONS, "lapse": LAPSE_QUESTIONS}
# A free-text answer (a note) is copied into every revision; a page of text is plenty for a reason.
MAX_NOTE_CHARS = 10_000
# The answer key that carries the verdict/label compared between annotators.
PRIMARY_KEY = {"twist_b": "q1", "lapse": "label"}


def questions_for(protocol: str) -> dict[str, Question]:
    return {q.key: q for q in QUESTIONS[protocol]}


def validate_values(protocol: str, values: dict, gold_type: str = "") -> list[str]:
    """Problems with a (partial) answer: unknown keys, values outside the allowed choices, questions
    that do not apply to this item. Returns messages naming the field; empty when valid."""
    problems = []
    questions = questions_for(protocol)
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
        if question.applies_to is not None and gold_type and gold_type not in question.applies_to and value != "":
            problems.append(f"field '{key}': does not apply to this item")
    return problems


def phase_of(protocol: str, key: str) -> int:
    return questions_for(protocol)[key].phase


def has_phase2(protocol: str) -> bool:
    return any(q.phase == 2 for q in QUESTIONS[protocol])


def phase1_done(protocol: str, values: dict) -> bool:
    """Every Phase 1 choice question is answered (notes are optional)."""
    return all(values.get(q.key) for q in QUESTIONS[protocol] if q.phase == 1 and q.choices is not None)


def phase2_keys_for(protocol: str, gold_type: str) -> tuple[str, ...]:
    """The Phase 2 questions asked of an item (they depend on its gold type: never show before Phase 2)."""
    return tuple(
        q.key
        for q in QUESTIONS[protocol]
        if q.phase == 2 and (q.applies_to is None or gold_type in q.applies_to)
    )


def phase2_done(protocol: str, values: dict, gold_type: str) -> bool:
    """Phase 2 is answered for this item; a protocol without Phase 2 is done when Phase 1 is."""
    if not has_phase2(protocol):
        return phase1_done(protocol, values)
    questions = questions_for(protocol)
    for key in phase2_keys_for(protocol, gold_type):
        if questions[key].choices is not None and not values.get(key):
            return False
    if values.get("q3") == "conflict" and not values.get("q3turn"):
        return False
    return True
