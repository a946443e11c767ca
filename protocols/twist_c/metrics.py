"""A Track C run's scores as counts (TWIST §3.4; docs/twist_c.md)."""

from collections.abc import Iterable, Mapping

from protocols.twist_c.chain import C1, C2, C3, C4, HN_C1, ChainItem

# --- scores of a run (TWIST §3.4) ----------------------------------------------------------------------------
# What the judge says a run's free-text answer does: gives the current value, asserts a superseded one as
# current, names every state in order, names them without order, gives every coexisting fact as current, or
# none of these.
ANSWERED_CURRENT, ANSWERED_STALE = "current", "stale"
ANSWERED_HISTORY, ANSWERED_UNORDERED, ANSWERED_BOTH, ANSWERED_OTHER = "history_in_order", "history_unordered", "both_current", "other"
ANSWER_VERDICTS = (ANSWERED_CURRENT, ANSWERED_STALE, ANSWERED_HISTORY, ANSWERED_UNORDERED, ANSWERED_BOTH, ANSWERED_OTHER)
METRICS = ("current_answer_rate", "stale_answer_rate", "history_retention", "stale_after_resolution",
           "coexistence_retention")


def answer_verdict(item: ChainItem, *, gold_yes: bool, stale_yes: bool = False) -> str:
    """A run's answer from the judge's two yes / no grades (`judge.answer_prompts`). Asserting the replaced
    belief as current is the failure Track C measures, so it wins over a "yes" against the gold. A yes / no
    judge cannot tell an unordered history from a missing one: both are "other" here."""
    if item.family == HN_C1:
        return ANSWERED_BOTH if gold_yes else ANSWERED_OTHER
    if stale_yes:
        return ANSWERED_STALE
    if gold_yes:
        return ANSWERED_HISTORY if item.family == C3 else ANSWERED_CURRENT
    return ANSWERED_OTHER


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
