"""A judge's decoy calibration on a TWIST Track C set (TWIST Appendix C; docs/twist_c.md): the decoys are built
from each chain (`protocols.twist_c.decoys`, `judged-decoys/2`), graded with the Track C judge prompt
(`twist-c-judge/1`), and a judge is admissible only when every class that applies to the set is rejected at
>= 95 % and the gold answers are accepted at >= 95 %. A class that applies to no item of the set is "not
applicable", not failed; one that applies and is empty refuses the set."""

from chains.gates import chain_items
from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from items.models import ItemSet
from judges.services import CalibrationSet
from protocols import judged
from protocols.twist_c import decoys
from protocols.twist_c.judge import JUDGE_PROMPT_VERSION


def chain_calibration_set(*, item_set: ItemSet, seed: int) -> CalibrationSet:
    """The mixed calibration set of a Track C item set (its gate-rejected chains left out)."""
    chains = [chain for item, chain in chain_items(item_set) if not item.gate_rejected]
    try:
        records, counts = decoys.calibration_set(chains, seed=seed)
    except decoys.DecoySetError as exc:
        raise ApplicationError(f"item set '{item_set.name}': {exc}") from exc
    if not records:
        raise ApplicationError(f"item set '{item_set.name}' has no current-state or history-aware chain to build decoys from")
    not_applicable = {cls: n for cls, n in counts.items() if n == decoys.NOT_APPLICABLE}
    return CalibrationSet(
        records, not_applicable, decoys.DECOY_VERSION, decoys.calibration_prompt,
        lambda records, verdicts: chain_calibration_figures(records, verdicts, counts),
    )


def chain_calibration_figures(records: list[dict], verdicts: dict[str, str], counts: dict) -> dict:
    """Per class {"n", "rejected", "rate", "wilson", "clears"} (or "not_applicable"), the gold answers'
    acceptance with its interval, "admissible" and, when it is not, the failing classes (`decoys.admissibility`)."""
    results = [(r["class"], verdicts.get(r["id"]) == "correct") for r in records]
    admissible, figures, failing = decoys.admissibility(results, counts)
    classes = {}
    for cls in decoys.DECOY_CLASSES:
        if counts.get(cls) == decoys.NOT_APPLICABLE:
            classes[cls] = {"not_applicable": True, "n": 0, "rejected": 0, "rate": None, "wilson": [None, None], "clears": True}
            continue
        f = figures.get(cls, {"n": 0, "k": 0, "rate": None})
        classes[cls] = {"n": f["n"], "rejected": f["k"], "rate": f["rate"], "wilson": list(st.wilson_interval(f["k"], f["n"])),
                        "clears": f["rate"] is not None and f["rate"] >= judged.ADMISSIBLE_RATE}
    gold = figures.get(judged.GOLD, {"n": 0, "k": 0, "rate": None})
    return st.json_safe({
        "classes": classes,
        "gold": {"n": gold["n"], "accepted": gold["k"], "rate": gold["rate"], "wilson": list(st.wilson_interval(gold["k"], gold["n"])),
                 "clears": gold["rate"] is not None and gold["rate"] >= judged.ADMISSIBLE_RATE},
        "unparsed": sum(1 for r in records if not verdicts.get(r["id"])),
        "bar": judged.ADMISSIBLE_RATE,
        "bar_applies_to": "the point rejection rate of every class that applies, and the gold answers' acceptance",
        "admissible": admissible,
        "failing": failing,
        "judge_prompt_version": JUDGE_PROMPT_VERSION,
    })
