"""The agreement figures and the queue with its decisions as CSV, for spreadsheet users. Pure formatting of
what adjudication.agreement and adjudication.pages computed: no figure is computed here, and every cell
goes through the formula-safe writer (item texts and notes may be LLM-generated)."""

from goldkey.lib.csvsafe import csv_text

AGREEMENT_COLUMNS = ("campaign", "figure", "value")


def _flatten(prefix: str, value, rows: list) -> None:
    """(dotted path, value) for every number and text of the figures; a confusion matrix is written as
    one cell per (row category, column category)."""
    if isinstance(value, dict):
        if set(value) == {"categories", "counts"}:
            for category, counts in zip(value["categories"], value["counts"], strict=True):
                for other, count in zip(value["categories"], counts, strict=True):
                    rows.append((f"{prefix}.{category}.{other}", count))
            return
        for name, inner in value.items():
            _flatten(f"{prefix}.{name}" if prefix else str(name), inner, rows)
    elif isinstance(value, list | tuple):
        if all(not isinstance(v, dict | list | tuple) for v in value) and not all(isinstance(v, int | float) for v in value):
            rows.append((prefix, "; ".join("" if v is None else str(v) for v in value)))  # a list of names
        else:
            for n, inner in enumerate(value):
                _flatten(f"{prefix}.{n}", inner, rows)
    else:
        rows.append((prefix, value))


def agreement_csv(campaign_slug: str, agreement: dict, panels: dict | None = None) -> str:
    """Every figure of the agreement page, one per row: `q1.kappa`, `q1.ci95.0`, `q1.confusion.contradicts.consistent`…,
    then those of the protocol's own sections under their names (`scorer_validation.…`)."""
    rows: list = []
    _flatten("", agreement, rows)
    for name, figures in (panels or {}).items():
        _flatten(name, figures, rows)
    return csv_text(AGREEMENT_COLUMNS, [(campaign_slug, figure, value) for figure, value in rows])


def queue_csv(spec, entries, pseudonyms: list[str]) -> str:
    """One row per queued item, in the queue's order: its reasons, the suggestion, each annotator's primary
    answer, and the decision (with its author and time) if there is one."""
    header = ["position", "item", *([] if spec.gold_from_answers else ["gold"]), "reasons", "suggestion",
              *(f"{p}_{spec.primary_key}" for p in pseudonyms), "decision", "new_gold", "note", "decided_by", "decided_at"]
    rows = []
    for position, entry in enumerate(entries, start=1):
        decision = entry.decision
        rows.append([
            position, entry.item.external_id, *([] if spec.gold_from_answers else [entry.item.gold_label]),
            "; ".join(entry.reasons), entry.suggestion,
            *((entry.answers.get(p) or {}).get(spec.primary_key) for p in pseudonyms),
            decision.action if decision else None,
            (decision.new_gold or None) if decision else None,
            (decision.note or None) if decision else None,
            (decision.decided_by.get_username() if decision.decided_by_id else "import") if decision else None,
            decision.decided_at.isoformat() if decision else None,
        ])
    return csv_text(header, rows)
