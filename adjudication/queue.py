"""Which items need an adjudicator, and why: pure functions over answer dicts (no database).

The reasons are PROTOCOL §3, named exactly as there, plus `council_majority_against` (PROTOCOL §4
band, shown only when council votes exist) and, for Lapse, `label_disagreement`. An answer is the
annotator's `values` dict in the released answer format ({"q1": …, "q2": …}); a missing answer is an
empty dict. Council votes are in the same format.
"""

from collections.abc import Sequence

# TWIST Track B (PROTOCOL §3), in the order they are listed there.
Q1_DISAGREEMENT = "q1_disagreement"
Q1_AGREED_AGAINST_GOLD = "q1_agreed_against_gold"
Q2_NOT_SELF_CONTAINED = "q2_not_self_contained"
Q2_QUOTE_WRONG = "q2_quote_wrong"
Q3_UNCITED_CONFLICT = "q3_uncited_conflict"
MISSING_ANSWERS = "missing_answers"
COUNCIL_MAJORITY_AGAINST = "council_majority_against"
# Lapse (PROTOCOL §9): the two behaviour labels differ.
LABEL_DISAGREEMENT = "label_disagreement"

TWIST_REASONS = (
    Q1_DISAGREEMENT,
    Q1_AGREED_AGAINST_GOLD,
    Q2_NOT_SELF_CONTAINED,
    Q2_QUOTE_WRONG,
    Q3_UNCITED_CONFLICT,
    MISSING_ANSWERS,
    COUNCIL_MAJORITY_AGAINST,
)
LAPSE_REASONS = (LABEL_DISAGREEMENT, MISSING_ANSWERS)
# The council is triage, reviewed before the human pass (PROTOCOL §4): its flag is shown in the queue,
# but only a human reason makes an item wait for a decision before a key can be finalized.
TRIAGE_ONLY_REASONS = frozenset({COUNCIL_MAJORITY_AGAINST})


def blocks_finalizing(reasons: Sequence[str]) -> bool:
    return any(reason not in TRIAGE_ONLY_REASONS for reason in reasons)

REASON_HELP = {
    Q1_DISAGREEMENT: "the two q1 verdicts differ",
    Q1_AGREED_AGAINST_GOLD: "both annotators agree on a q1 verdict that differs from the gold verdict",
    Q2_NOT_SELF_CONTAINED: "an annotator says the contradicted claim is not stated in the excerpts (q2 = no)",
    Q2_QUOTE_WRONG: "an annotator says the quoted words are not the right ones (q2quote = no)",
    Q3_UNCITED_CONFLICT: "an annotator found a conflicting turn outside the cited excerpts (q3 = conflict)",
    MISSING_ANSWERS: "an annotator's verdict is missing (left out of kappa)",
    COUNCIL_MAJORITY_AGAINST: "more than half of the council members actively vote against the gold verdict",
    LABEL_DISAGREEMENT: "the two behaviour labels differ",
}

GOLD_VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}
OPPOSITE = {"contradicts": "consistent", "consistent": "contradicts"}
ABSTAIN = "cannot-tell"

# Suggestions: what the adjudicator will most likely decide. Drop suggestions sort first.
DROP = "drop"
DISCUSS = "discuss"
KEEP = "keep"
SUGGESTION_ORDER = {DROP: 0, DISCUSS: 1, KEEP: 2}


def _values(answers: Sequence[dict | None]) -> list[dict]:
    return [a or {} for a in answers]


def council_band(gold_type: str, council_votes: Sequence[dict] | None) -> str:
    """PROTOCOL §4 band of the council against the gold verdict: `unanimous_match`, `majority_against`,
    `majority_match` or `abstain_heavy` ('' without votes). `cannot-tell` (or no q1) is an abstention,
    not an opposing vote; the denominator is every member that voted."""
    if not council_votes:
        return ""
    votes = [(v or {}).get("q1", "") for v in council_votes]
    gold = GOLD_VERDICT.get(gold_type, "")
    match = sum(v == gold for v in votes)
    against = sum(v == OPPOSITE.get(gold) for v in votes)
    if match == len(votes):
        return "unanimous_match"
    if against * 2 > len(votes):
        return "majority_against"
    if match * 2 > len(votes):
        return "majority_match"
    return "abstain_heavy"


def twist_queue_reasons(gold_type: str, answers: Sequence[dict | None], council_votes: Sequence[dict] | None = None) -> list[str]:
    # Runs once per item (100,000 times for a large campaign): the common case, two answers agreeing
    # with gold and raising no flag, returns before building anything.
    if len(answers) == 2 and answers[0] and answers[1] and not council_votes:
        a, b = answers
        verdict = a.get("q1")
        if verdict and verdict == b.get("q1") == GOLD_VERDICT.get(gold_type):
            if gold_type == "contradicting":
                if "no" not in (a.get("q2"), b.get("q2"), a.get("q2quote"), b.get("q2quote")):
                    return []
            elif a.get("q3") != "conflict" and b.get("q3") != "conflict":
                return []
    answers = [a or {} for a in answers]
    verdicts = [a.get("q1") for a in answers]
    present = [v for v in verdicts if v]
    reasons = []
    if len(set(present)) > 1:
        reasons.append(Q1_DISAGREEMENT)
    elif len(present) == len(verdicts) and len(present) >= 2 and present[0] != GOLD_VERDICT.get(gold_type):
        reasons.append(Q1_AGREED_AGAINST_GOLD)
    if gold_type == "contradicting":
        if any(a.get("q2") == "no" for a in answers):
            reasons.append(Q2_NOT_SELF_CONTAINED)
        if any(a.get("q2quote") == "no" for a in answers):
            reasons.append(Q2_QUOTE_WRONG)
    elif any(a.get("q3") == "conflict" for a in answers):
        reasons.append(Q3_UNCITED_CONFLICT)
    if len(present) < 2 or len(present) < len(verdicts):
        reasons.append(MISSING_ANSWERS)
    if council_votes and council_band(gold_type, council_votes) == "majority_against":
        reasons.append(COUNCIL_MAJORITY_AGAINST)
    return reasons


def lapse_queue_reasons(answers: Sequence[dict | None]) -> list[str]:
    labels = [a.get("label", "") for a in _values(answers)]
    present = [label for label in labels if label]
    reasons = []
    if len(set(present)) > 1:
        reasons.append(LABEL_DISAGREEMENT)
    if len(present) < max(2, len(labels)):
        reasons.append(MISSING_ANSWERS)
    return reasons


def queue_reasons(
    gold_type: str, answers: list[dict], council_votes: list[dict] | None = None, *, protocol: str = "twist_b"
) -> list[str]:
    """Every queue reason that applies to one item (empty: not queued). `answers` holds one dict per
    assigned annotator (an empty dict when that annotator has not answered)."""
    if protocol == "lapse":
        return lapse_queue_reasons(answers)
    return twist_queue_reasons(gold_type, answers, council_votes)


def suggestion(gold_type: str, answers: list[dict], reasons: list[str], *, protocol: str = "twist_b") -> tuple[str, str]:
    """(action, why) — PROTOCOL §3's helpful suggestions: both say not self-contained → drop; both
    agreed against gold → drop; both found the same conflicting turn → drop; otherwise discuss.
    Not queued → keep. Lapse disagreements are always discussed (the adjudicator sets the label)."""
    if not reasons:
        return KEEP, "not queued"
    answers = _values(answers)
    if protocol == "lapse":
        return DISCUSS, "set the adjudicated label"
    both = len(answers) >= 2
    if both and gold_type == "contradicting" and all(a.get("q2") == "no" for a in answers):
        return DROP, "both annotators say the contradicted claim is not self-contained"
    if Q1_AGREED_AGAINST_GOLD in reasons:
        return DROP, "both annotators agree against the gold verdict"
    turns = [a.get("q3turn", "").strip() for a in answers]
    if both and all(a.get("q3") == "conflict" for a in answers) and turns[0] and len(set(turns)) == 1:
        return DROP, f"both annotators found the same conflicting turn ({turns[0]})"
    return DISCUSS, "no drop rule applies: weigh the answers and notes"


def sort_key(suggested: str, external_id: str) -> tuple:
    """Drop suggestions first, then discussions; within each, by item id."""
    return (SUGGESTION_ORDER.get(suggested, 9), external_id)
