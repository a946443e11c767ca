"""Judge decoys built from Track C's update chains (TWIST Appendix C; docs/twist_c.md): which classes apply
to a probe, the decoys, the mixed calibration set and the admissibility of a judge on it. The templates,
classes, slot changer and bar are the judged-answer protocol's, imported rather than copied."""

import random
from collections.abc import Iterable, Mapping, Sequence

from protocols.judged import (
    ADMISSIBLE_RATE,
    GOLD,
    NON_ANSWER,
    PERTURBED,
    STALE,
    TEMPLATES,
    UNORDERED,
    Decoy,
    perturb_detail,
    restated_question,
)
from protocols.twist_c.chain import CURRENT, HISTORY, HN_C1, ChainItem
from protocols.twist_c.judge import judge_prompt

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
        return perturb_detail(answer)
    perturbed, slot = perturb_detail(values[-1])
    if item.query_kind == CURRENT:
        return perturbed, slot
    if perturbed and values[-1] in answer:
        head, _, tail = answer.rpartition(values[-1])
        return head + perturbed + tail, slot
    return perturb_detail(answer)


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
        made.append(Decoy(item.id, NON_ANSWER, TEMPLATES_V2[NON_ANSWER].format(restated=restated_question(item.question)),
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
         "query_kind": by_id[d.source].query_kind, "response": d.response, "class": d.cls, "slot": d.slot, "version": d.version}
        for n, d in enumerate(pool, start=1)
    ]
    return records, counts


def calibration_prompt(record: dict) -> str:
    """The prompt for one record of the calibration set: nothing of its provenance (class, slot, source)."""
    return judge_prompt(query_kind=record["query_kind"], question=record["question"], answer=record["answer"],
                        response=record["response"])


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
