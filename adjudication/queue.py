"""Which items need an adjudicator, and why: pure functions over answer dicts (no database).

The reasons and suggestions are each protocol's (`protocols.<name>.queue_rules` / `suggest`, reached
through its spec); what is common to every protocol lives here: which reasons hold a key back, the
council band, and the queue order. An answer is the annotator's `values` dict in the released answer
format ({"q1": …, "q2": …}); a missing answer is an empty dict. Council votes are in the same format,
one per council member ({} for a member without a vote on the item).
"""

from collections.abc import Sequence

import protocols
from protocols.base import COUNCIL_MAJORITY_AGAINST, DISCUSS, DROP, KEEP, MISSING_ANSWERS

__all__ = [
    "COUNCIL_MAJORITY_AGAINST", "DISCUSS", "DROP", "KEEP", "MISSING_ANSWERS", "REASON_HELP", "blocks_finalizing",
    "council_band", "queue_reasons", "sort_key", "suggestion", "suggestion_rank",
]

# The council is triage, reviewed before the human pass (PROTOCOL §4): its flag is shown in the queue,
# but only a human reason makes an item wait for a decision before a key can be finalized.
TRIAGE_ONLY_REASONS = frozenset({COUNCIL_MAJORITY_AGAINST})

# Every protocol's reasons with their help text (reason names are unique across protocols).
REASON_HELP = {reason: help for spec in protocols.specs() for reason, help in spec.reasons.items()}

SUGGESTION_ORDER = {DROP: 0, DISCUSS: 1, KEEP: 2}

def blocks_finalizing(reasons: Sequence[str]) -> bool:
    return any(reason not in TRIAGE_ONLY_REASONS for reason in reasons)


def council_band(gold: str, council_votes: Sequence[dict] | None, *, protocol: str) -> str:
    """PROTOCOL §4 band of the council against the gold verdict ('' without votes): the one rule,
    `protocols.base.council_band`; `council_votes` has one dict per council member."""
    return protocols.get(protocol).council_band(gold, council_votes)


def queue_reasons(
    gold: str, answers: Sequence[dict | None], council_votes: Sequence[dict] | None = None, *,
    protocol: str,
) -> list[str]:
    """Every queue reason that applies to one item (empty: not queued). `answers` holds one dict per
    assigned annotator (an empty dict when that annotator has not answered)."""
    return protocols.get(protocol).queue_reasons(gold, answers, council_votes)


def suggestion(gold: str, answers: Sequence[dict | None], reasons: Sequence[str], *,
               protocol: str) -> tuple[str, str]:
    """(action, why): the protocol's suggestion for a queued item; not queued → keep."""
    return protocols.get(protocol).suggestion(gold, answers, reasons)


def suggestion_rank(suggested: str) -> int:
    return SUGGESTION_ORDER.get(suggested, 9)


def sort_key(suggested: str, external_id: str) -> tuple:
    """Drop suggestions first, then discussions; within each, by item id."""
    return (suggestion_rank(suggested), external_id)
