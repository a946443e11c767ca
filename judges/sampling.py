"""The designed sample of judged answers for a human key, and figures weighted back to the population.

Not every judged answer is read by people: a seeded random sample is drawn within strata — the question's
type, whether it is an abstention question, and whether the judge's labels for it differ across the runs
that answered it ("disputed"). Disputed questions are oversampled (their stratum's share is multiplied by
`oversample`), since that is where the judge is most likely wrong. The size is the one a Wilson
half-width asks for (statistics.wilson_sample_size), raised by the design's own effect (Kish's, from the
unequal weights) so that the population figure keeps that half-width. Each sampled answer of stratum h
stands for N_h / n_h answers; `weighted_proportion` weights a figure over the sample back to the
population or to a part of it (a run, a type).

Pure: answers in as plain values, the sample and its design (JSON-ready, for the datasheet) out.
"""

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from goldkey.lib import statistics as st
from judges.longmemeval import is_abstention

DESIGN = "stratified random sample without replacement"
MAX_DESIGN_ROUNDS = 20


@dataclass(frozen=True)
class Unit:
    """One judged answer of the population: a run's answer to a question, and its stratum."""

    run: str
    question_id: str
    question_type: str
    abstention: bool
    disputed: bool

    @property
    def key(self) -> tuple[str, str]:
        return (self.run, self.question_id)

    @property
    def stratum(self) -> str:
        return stratum_name(self.question_type, self.abstention, self.disputed)


@dataclass(frozen=True)
class Sample:
    units: list[Unit]  # the population, in (run, question id) order
    chosen: list[Unit]  # the sample, in (run, question id) order
    design: dict  # JSON-ready: method, seed, half-width, sizes, strata with their weights


def stratum_name(question_type: str, abstention: bool, disputed: bool) -> str:
    return f"{question_type}|{'abstention' if abstention else 'answerable'}|{'disputed' if disputed else 'agreed'}"


def disputed_questions(labels: Iterable[tuple[str, bool]]) -> set[str]:
    """Question ids whose judge labels (question id, label) are not all the same."""
    seen: dict[str, set[bool]] = defaultdict(set)
    for question_id, label in labels:
        seen[question_id].add(bool(label))
    return {q for q, values in seen.items() if len(values) > 1}


def population(answers: Iterable[tuple[str, str, bool]], question_types: Mapping[str, str]) -> list[Unit]:
    """The units of (run, question id, judge label) answers; a question is disputed when its labels differ
    across the runs that answered it."""
    answers = list(answers)
    disputed = disputed_questions((q, label) for _, q, label in answers)
    units = {(run, q): Unit(run, q, question_types[q], is_abstention(q), q in disputed) for run, q, _ in answers}
    return [units[k] for k in sorted(units)]


def _by_stratum(units: Iterable[Unit]) -> dict[str, list[Unit]]:
    strata: dict[str, list[Unit]] = defaultdict(list)
    for unit in units:
        strata[unit.stratum].append(unit)
    return {name: strata[name] for name in sorted(strata)}


def _kish_effect(sizes: Mapping[str, int], allocation: Mapping[str, int]) -> float:
    """n Σ n_h w_h² / (Σ n_h w_h)² with w_h = N_h / n_h: 1 for a proportional sample."""
    drawn = {h: n for h, n in allocation.items() if n}
    n = sum(drawn.values())
    if not n:
        return 1.0
    weighted = sum(sizes[h] for h in drawn)
    squares = sum(sizes[h] ** 2 / drawn[h] for h in drawn)
    return n * squares / weighted**2


def sample_draw(*, units: list[Unit], half_width: float, seed: int, oversample: float = 2.0, minimum: int = 2) -> Sample:
    """A seeded stratified sample of `units` sized for ±half_width (Wilson, 95 %) on a population
    proportion, disputed strata oversampled `oversample` times. The same units, half-width, seed and
    oversampling give the same sample."""
    if oversample < 1:
        raise ValueError(f"oversample must be at least 1, got {oversample}")
    units = sorted(units, key=lambda u: u.key)  # the draw depends on the seed alone, not on the caller's order
    strata = _by_stratum(units)
    sizes = {h: len(members) for h, members in strata.items()}
    weights = {h: oversample if members[0].disputed else 1.0 for h, members in strata.items()}
    total = len(units)
    base = st.wilson_sample_size(half_width, population=total) if total else 0
    base = max(base, min(total, minimum * len(strata)))
    target, allocation, effect = base, {}, 1.0
    for _ in range(MAX_DESIGN_ROUNDS):
        allocation = st.allocate(sizes, target, weights=weights, minimum=minimum)
        effect = _kish_effect(sizes, allocation)
        wanted = min(total, max(base, math.ceil(base * effect - 1e-9)))
        if wanted == target:
            break
        target = wanted
    rng = random.Random(seed)
    chosen = []
    for h, members in strata.items():
        chosen.extend(rng.sample(members, allocation[h]))
    chosen.sort(key=lambda u: u.key)
    design = {
        "method": DESIGN,
        "seed": seed,
        "half_width": half_width,
        "z": st.WILSON_Z,
        "oversample_disputed": oversample,
        "minimum_per_stratum": minimum,
        "population": total,
        "size_for_half_width": base,
        "design_effect": round(effect, 6),
        "sampled": len(chosen),
        "strata": [
            {"stratum": h, "question_type": members[0].question_type, "abstention": members[0].abstention,
             "disputed": members[0].disputed, "population": sizes[h], "sampled": allocation[h],
             "weight": sizes[h] / allocation[h] if allocation[h] else None}
            for h, members in strata.items()
        ],
    }
    return Sample(units, chosen, design)


def weighted_proportion(*, units: Iterable[Unit], outcomes: Mapping[tuple[str, str], bool],
                        where: Callable[[Unit], bool] | None = None) -> dict:
    """The population share of True outcomes, from the outcomes of the sampled units (run, question id)
    -> bool, weighted back stratum by stratum (the design's strata, whatever the part); `where` restricts
    the figure to a part of the population (one run, one type: a domain estimate). Undefined (nan) when
    nothing of the part was judged or a stratum was not judged at all."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for unit in units:
        row = counts[unit.stratum]
        row[0] += 1
        if unit.key in outcomes:
            row[1] += 1
            if where is None or where(unit):
                row[2] += 1
                row[3] += bool(outcomes[unit.key])
    return st.stratified_domain_proportion({h: tuple(v) for h, v in sorted(counts.items())})
