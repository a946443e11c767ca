"""Check the Lapse rule cascade against a battery of constructed outputs whose labels are true by
construction (the released `gold_battery.jsonl`: 290 canonical, 98 adversarial). Pure: rows in,
figures out."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from sklearn.metrics import precision_recall_fscore_support

from goldkey.errors import ApplicationError
from lapse.cascade import INPUT_KEYS, label_record


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
