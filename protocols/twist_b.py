"""TWIST Track B, two-phase (PROTOCOL.md §2): Phase 1 asks for the verdict blind to gold; Phase 2,
opened only after Phase 1 is locked, asks gold-dependent questions (is the contradicted claim stated,
is the quote right; or does any recipient turn conflict with an aligned draft)."""

from protocols.base import Benchmark, ProtocolSpec, Question

CONTRADICTING, ALIGNED, HARD_NEGATIVE = "contradicting", "aligned", "hard_negative"
GOLD_TYPES = (CONTRADICTING, ALIGNED, HARD_NEGATIVE)
Q1 = ("contradicts", "consistent", "cannot-tell")

QUESTIONS = (
    Question("q1", 1, Q1, label="Would SENDING the draft contradict what the recipient said?"),
    Question("q1note", 1, None, label="Note"),
    Question("q2", 2, ("yes", "no"), (CONTRADICTING,), label="Claim stated"),
    Question("q2quote", 2, ("yes", "no"), (CONTRADICTING,), label="Quote right"),
    Question("q3", 2, ("clean", "conflict"), (ALIGNED, HARD_NEGATIVE), label="Any conflicting turn"),
    Question("q3turn", 2, None, (ALIGNED, HARD_NEGATIVE), label="Conflicting turn"),
    Question("p2note", 2, None, label="Phase 2 note"),
)


def _phase2_complete(values: dict) -> bool:
    # "conflict" must name the turn it found.
    return not (values.get("q3") == "conflict" and not values.get("q3turn"))


SPEC = ProtocolSpec(
    name="twist_b",
    label="TWIST Track B two-phase",
    item_kind="twist",
    item_kind_label="TWIST Track B draft",
    benchmark=Benchmark("twist", "TWIST", "track-b", "Track B (draft vetting)"),
    version="twist-b-two-phase/1",
    blind_fields=("recipient", "draft"),
    hidden_fields=("external_id", "gold_type", "family", "contradicted_quote", "rationale", "batch", "history_turns"),
    questions=QUESTIONS,
    primary_key="q1",
    gold_values=GOLD_TYPES,
    gold_verdict={CONTRADICTING: "contradicts", ALIGNED: "consistent", HARD_NEGATIVE: "consistent"},
    conventions=(
        "Would SENDING the draft contradict what the recipient said in the excerpts?",
        "Asking whether something changed is not a contradiction.",
        "Acknowledging a change is not a contradiction.",
        "The record not mentioning something is not contradiction evidence.",
        "The excerpts are the latest known record: do not imagine later changes.",
    ),
    phase2_conventions=(
        "Phase 2, q2: could you underline the contradicted claim in the recipient's own words in the excerpts?",
        "Phase 2, q2quote: are the quoted words the right ones for that claim?",
        "Phase 2, q3: search every turn the recipient said; if any contradicts the draft, answer conflict and "
        "pick its turn id.",
    ),
    item_template="annotation/item_twist.html",
    phase2_complete=_phase2_complete,
    agreement_keys=("q1", "q2", "q2quote", "q3", "q3turn"),
    agreement_figures="gold_verdict",
    key_fields=(
        ("id", "external_id"),
        ("type", "gold"),
        ("verdict", "verdict"),
        ("family", "family"),
        ("evidence", "evidence"),
        ("contradicted_quote", "quote"),
        ("history_turns", "history_turns"),
        ("provenance", "provenance"),
    ),
    quoted_gold=(CONTRADICTING,),
    candidate_fields=(
        ("id", "external_id"),
        ("conv", "conversation__external_id"),
        ("speaker", "recipient"),
        ("type", "gold_type"),
        ("family", "family"),
        ("draft", "draft"),
        ("evidence", "evidence"),
        ("contradicted_quote", "contradicted_quote"),
        ("rationale", "rationale"),
        ("history_turns", "history_turns"),
    ),
)
