"""The audit of a judge against a human key over judged answers: pure functions on plain values.

Answers are keyed (run, question id). `judge` maps a key to the judge's label and `human` to the
adjudicated human label (True: the answer is correct) for the answers people judged — a designed sample
(judges.sampling), whose units weight each figure back to the whole population of answers.

- `human_human`: the two annotators' agreement (Cohen's kappa with its intervals, statistics.kappa_summary).
- `judge_agreement`: per group (overall, each question type, abstention questions) the agreement of the
  judge with the human label, with a Wilson interval, beside LongMemEval's published "> 97 %"; both error
  directions: lenient (the judge says correct, people do not) and strict (the reverse); and the
  agreement weighted back to the population.
- `self_consistency`: where two runs gave byte-identical answers to a question, how often the judge gave
  them the same label.
- `run_accuracy`: each run's accuracy under the judge (all its answers) and under the human key
  (weighted back), with intervals, and whether the runs' order changes — overall and along a ladder
  (runs that differ in one setting, e.g. the note budget, listed in its order).
"""

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from goldkey.lib import statistics as st
from judges.sampling import Unit, weighted_proportion

PUBLISHED_AGREEMENT = 0.97  # LongMemEval (Wu et al., ICLR 2025) reports > 97 % judge–human agreement
VERDICTS = (True, False)

Key = tuple[str, str]


def _rate(k: int, n: int) -> dict:
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": list(st.wilson_interval(k, n))}


def _groups(units: Iterable[Unit]) -> dict[str, list[Unit]]:
    groups: dict[str, list[Unit]] = {"overall": []}
    by_type: dict[str, list[Unit]] = {}
    abstention: list[Unit] = []
    for unit in units:
        groups["overall"].append(unit)
        by_type.setdefault(unit.question_type, []).append(unit)
        if unit.abstention:
            abstention.append(unit)
    groups.update(sorted(by_type.items()))
    if abstention:
        groups["abstention"] = abstention
    return groups


def human_human(first: Sequence, second: Sequence, *, seed: int = 0) -> dict:
    """Two annotators' labels, paired answer by answer (None: no label)."""
    return st.json_safe(st.kappa_summary(list(first), list(second), categories=VERDICTS, seed=seed))


def judge_agreement(*, units: Sequence[Unit], judge: Mapping[Key, bool], human: Mapping[Key, bool]) -> list[dict]:
    """Per group, on the answers with both labels: agreement with a Wilson interval, lenient and strict
    errors (each as a share of the group's answers), the published figure beside them and whether the
    interval lies below it; `weighted` is the agreement weighted back to the group's population."""
    agree = {k: judge[k] == human[k] for k in human if k in judge}
    rows = []
    for group, members in _groups(units).items():
        keys = [u.key for u in members if u.key in agree]
        n = len(keys)
        agreed = sum(agree[k] for k in keys)
        lenient = sum(1 for k in keys if judge[k] and not human[k])
        strict = sum(1 for k in keys if human[k] and not judge[k])
        interval = st.wilson_interval(agreed, n)
        in_group = {u.key for u in members}
        rows.append({
            "group": group, "n": n,
            "agreement": _rate(agreed, n),
            "lenient": _rate(lenient, n),
            "strict": _rate(strict, n),
            "published": PUBLISHED_AGREEMENT,
            "below_published": bool(n) and interval[1] < PUBLISHED_AGREEMENT,
            "weighted": st.json_safe(weighted_proportion(units=units, outcomes=agree, where=lambda u, g=in_group: u.key in g)),
        })
    return rows


def self_consistency(answers: Iterable[tuple[str, str, str, bool]]) -> dict:
    """(run, question id, hypothesis, judge label) answers: for each pair of runs, the questions both
    answered with the same text, and those the judge labelled differently. A judge is self-consistent
    when the same text gets the same label."""
    by_question: dict[str, list[tuple[str, str, bool]]] = {}
    runs: list[str] = []
    for run, question_id, hypothesis, label in answers:
        by_question.setdefault(question_id, []).append((run, hypothesis, bool(label)))
        if run not in runs:
            runs.append(run)
    pairs = []
    total = alike = 0
    for a, b in combinations(runs, 2):
        identical, differ = 0, []
        for question_id, given in by_question.items():
            of_a = [(h, label) for r, h, label in given if r == a]
            of_b = [(h, label) for r, h, label in given if r == b]
            if of_a and of_b and of_a[0][0] == of_b[0][0]:
                identical += 1
                if of_a[0][1] != of_b[0][1]:
                    differ.append(question_id)
        if identical:
            pairs.append({"runs": [a, b], "identical": identical, "judged_differently": sorted(differ),
                          "consistency": _rate(identical - len(differ), identical)})
            total += identical
            alike += identical - len(differ)
    return {"pairs": pairs, "overall": _rate(alike, total)}


def _order(figures: Mapping[str, float | None]) -> list[str]:
    return sorted((r for r in figures if figures[r] is not None), key=lambda r: (-figures[r], r))


def _swapped(first: Mapping[str, float | None], second: Mapping[str, float | None]) -> list[list[str]]:
    """Pairs of runs the two figures put in opposite orders (a tie in one is no swap)."""
    swapped = []
    for a, b in combinations(sorted(r for r in first if first[r] is not None and second.get(r) is not None), 2):
        if (first[a] - first[b]) * (second[a] - second[b]) < 0:
            swapped.append([a, b])
    return swapped


def _monotone(ladder: Sequence[str], figures: Mapping[str, float | None]) -> bool | None:
    values = [figures.get(r) for r in ladder]
    if any(v is None for v in values):
        return None
    return all(x <= y for x, y in zip(values, values[1:], strict=False))


def run_accuracy(*, units: Sequence[Unit], judge: Mapping[Key, bool], human: Mapping[Key, bool],
                 ladders: Mapping[str, Sequence[str]] | None = None) -> dict:
    """Each run's accuracy under the judge (every answer it gave) and under the human key (weighted back
    from the sampled answers), with intervals; the two orders of the runs, the pairs they swap, and for
    each ladder (name -> runs in the order of the setting) whether accuracy rises along it under each."""
    runs = sorted({u.run for u in units})
    rows, by_judge, by_human = [], {}, {}
    for run in runs:
        keys = [u.key for u in units if u.run == run]
        correct = sum(bool(judge[k]) for k in keys if k in judge)
        judged = sum(1 for k in keys if k in judge)
        weighted = st.json_safe(weighted_proportion(units=units, outcomes=human, where=lambda u, r=run: u.run == r))
        by_judge[run] = correct / judged if judged else None
        by_human[run] = weighted["estimate"]
        rows.append({"run": run, "judge": _rate(correct, judged), "human": weighted})
    return {
        "runs": rows,
        "order_judge": _order(by_judge),
        "order_human": _order(by_human),
        "order_changes": _order(by_judge) != _order(by_human),
        "swapped": _swapped(by_judge, by_human),
        "ladders": [
            {"ladder": name, "runs": list(ladder), "rises_under_judge": _monotone(ladder, by_judge),
             "rises_under_human": _monotone(ladder, by_human)}
            for name, ladder in (ladders or {}).items()
        ],
    }
