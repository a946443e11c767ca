"""Detectors against gold, pure (rows or label lists in, figures out): the Lapse rule cascade run over a
battery of constructed outputs whose labels are true by construction (the released `gold_battery.jsonl`:
290 canonical, 98 adversarial); the LLM judge checked on the battery's behaviour items (the released
`gold_battery.judged.*.jsonl`); and the one way a detector's labels are compared with gold — five-way and
binary kappa, each with its verdict against the protocol's bars — which scorer validation uses too."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from sklearn.metrics import precision_recall_fscore_support

from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from goldkey.lib.jsonio import ErrorLog, read_jsonl
from lapse.cascade import INPUT_KEYS, label_record
from protocols.lapse import BINARY, LABELS, SPEC


def battery_read(path: Path) -> list[dict]:
    rows = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ApplicationError(f"{Path(path).name}:{number}: not JSON ({exc.msg})") from exc
            missing = [key for key in ("arm", "response", "gold") if key not in row]
            if missing:
                raise ApplicationError(f"{Path(path).name}:{number}: missing {', '.join(missing)}")
            rows.append(row)
    if not rows:
        raise ApplicationError(f"{Path(path).name}: no rows")
    return rows


def _scores(gold: list[str], predicted: list[str]) -> dict:
    labels = sorted(set(gold) | set(predicted))
    precision, recall, _, _ = precision_recall_fscore_support(
        gold, predicted, labels=labels, zero_division=0
    )
    support = {label: gold.count(label) for label in labels}
    return {
        "n": len(gold),
        "correct": sum(g == p for g, p in zip(gold, predicted, strict=True)),
        "accuracy": sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold) if gold else None,
        "per_label": {
            label: {"precision": float(p), "recall": float(r), "n": support[label]}
            for label, p, r in zip(labels, precision, recall, strict=True)
        },
    }


def cascade_validate(rows: Iterable[Mapping]) -> dict:
    """Per tier (canonical / adversarial / …): n, accuracy, per-label precision and recall, and the
    misses (what the cascade said against the constructed label)."""
    by_tier: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))
    for row in rows:
        # The cascade gets only the inputs a scorer may see; gold and ids stay here.
        predicted = label_record({key: row[key] for key in INPUT_KEYS if key in row})
        gold_list, predicted_list, misses = by_tier[row.get("tier", "all")]
        gold_list.append(row["gold"])
        predicted_list.append(predicted)
        if predicted != row["gold"]:
            misses.append(
                {"id": row.get("battery_id", ""), "arm": row["arm"], "gold": row["gold"], "cascade": predicted}
            )
    report = {}
    for tier, (gold_list, predicted_list, misses) in sorted(by_tier.items()):
        report[tier] = _scores(gold_list, predicted_list) | {"misses": misses}
    return report


# ---------------------------------------------------------------------------------------------
# A detector against gold: five-way and binary kappa with the bars

_KEEP = ("n", "agree", "observed", "kappa", "ci95", "excluded", "missing", "confusion")


def _figure(a: list, b: list, counts: dict, categories: tuple, seed: int) -> dict:
    """One kappa figure of a detector against gold, with its verdict against the protocol's bars
    ('pass', 'between', 'revise'; '' when there is nothing to judge)."""
    summary = st.kappa_summary(a, b, categories=categories, seed=seed)
    summary.update(excluded=counts["excluded"], missing=counts["missing"])
    figure = {k: summary[k] for k in _KEEP}
    figure["verdict"] = SPEC.detector_bars.verdict(figure["kappa"]) if figure["n"] else ""
    return figure


def detector_agreement(gold: list, scorer: list, *, seed: int = 0) -> dict:
    """Five-way (the five behaviour labels; anything else, e.g. RESIDUAL, is excluded and counted; None
    is missing) and binary (the protocol's binary collapse) agreement of one detector with gold."""
    five_gold, five_scorer, five_counts = st.eligible_pairs(gold, scorer, {label: label for label in LABELS})
    bin_gold, bin_scorer, bin_counts = st.eligible_pairs(gold, scorer, BINARY)
    return {
        "five_way": _figure(five_gold, five_scorer, five_counts, LABELS, seed),
        "binary": _figure(bin_gold, bin_scorer, bin_counts, SPEC.binary_classes, seed) | {"mapping": BINARY},
    }


def binary_label_agreement(gold: list, automatic: list, *, seed: int = 0) -> dict:
    """The automatic label is already binary (PROCEED / WITHHOLD): gold is collapsed and compared with
    it; there is no five-way figure. Gold outside the partition is excluded, no automatic label missing."""
    pairs = [(SPEC.collapse(g), label) for g, label in zip(gold, automatic, strict=True)]
    missing = sum(1 for _, label in pairs if label is None)
    kept = [(g, label) for g, label in pairs if label is not None and g is not None]
    counts = {"missing": missing, "excluded": len(pairs) - missing - len(kept)}
    a, b = [g for g, _ in kept], [label for _, label in kept]
    return {"five_way": None, "binary": _figure(a, b, counts, SPEC.binary_classes, seed) | {"mapping": BINARY}}


# ---------------------------------------------------------------------------------------------
# The judge checked on the battery

JUDGED_FIELDS = ("battery_id", "tier", "gold", "cascade", "judge")


def judged_battery_read(path: Path) -> list[dict]:
    """The judged battery (`{"battery_id", "tier", "gold", "cascade", "judge"}` per line, as released).
    All-or-nothing: a missing or non-string field, a gold outside the five behaviour labels or a
    repeated id refuses the file, naming FILE:LINE and the field."""
    path = Path(path)
    log = ErrorLog()
    rows, seen = [], set()
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        bad = [key for key in JUDGED_FIELDS if not isinstance(record.get(key), str) or not record[key]]
        if bad:
            log.add(where, f"field '{bad[0]}': missing or not a string")
            continue
        if record["gold"] not in LABELS:
            log.add(where, f"field 'gold': '{record['gold']}' is not one of {', '.join(LABELS)}")
            continue
        if record["battery_id"] in seen:
            log.add(where, f"field 'battery_id': '{record['battery_id']}' appears twice")
            continue
        seen.add(record["battery_id"])
        rows.append({key: record[key] for key in JUDGED_FIELDS})
    if not rows and not log.errors:
        log.add(f"{path.name}:1", "no judged items in file")
    log.raise_if_any()
    return rows


def judge_battery_validate(rows: Iterable[Mapping], *, source: str = "") -> dict:
    """Judge–gold and cascade–gold agreement on the judged battery (the cascade column is the label the
    file carries), overall and per battery tier (canonical / adversarial), five-way and binary, each
    kappa with its verdict against the protocol's bars."""
    rows = list(rows)
    tiers = sorted({row["tier"] for row in rows})
    bars = SPEC.detector_bars

    def figures(subset: list) -> dict:
        gold = [row["gold"] for row in subset]
        return {
            "n": len(subset),
            "judge": detector_agreement(gold, [row["judge"] for row in subset]),
            "cascade": detector_agreement(gold, [row["cascade"] for row in subset]),
        }

    return st.json_safe({
        "source": source,
        "n": len(rows),
        "bars": {"passes": bars.passes, "revise": bars.revise, "between": bars.between},
        "overall": figures(rows),
        "by_tier": {tier: figures([row for row in rows if row["tier"] == tier]) for tier in tiers},
    })
