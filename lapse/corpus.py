"""The Lapse corpus as items: stimuli from the builder (with the pair gate), model outputs linked to their stimulus."""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path

from goldkey.lib.jsonio import ErrorLog, read_jsonl
from items.models import GenerationReject, Item
from items.parsing import ParsedLapseItem
from items.services import _atomic_import, item_set_get_or_create, lapse_items_create
from lapse.pair_gate import build_with_gate
from protocols.lapse import SPEC

# Stimulus fields that are visible item fields rather than hidden conditions.
_STIMULUS_VISIBLE = ("case_id", "query", "witness")
# What an output item carries over from its stimulus (conditions, never the rendered prompt).
_CONDITION_KEYS = (
    "component", "arm", "frame", "cluster", "form", "gap", "carrier", "lexeme_pair", "wit_token",
    "fact_noun", "gap_date", "eval_date", "bound", "generator_version",
)


def stimuli_item_set_name(eval_date: date) -> str:
    return f"Lapse stimuli {eval_date.isoformat()}"


def lapse_stimuli_create(*, eval_date: date, item_set_name: str = "", dry_run: bool = False) -> dict:
    """Build the stimuli for an evaluation date, gate every matched pair, store the survivors as
    Lapse items (request = query, key fact = witness, everything else hidden) and the rejected
    pairs as generation rejects. Idempotent: a rebuild for the same date changes nothing."""
    build = build_with_gate(eval_date=eval_date)
    name = item_set_name or stimuli_item_set_name(eval_date)
    digest = build.sha256()
    parsed = []
    for line, stimulus in enumerate(build.stimuli, start=1):
        record = stimulus.as_dict()
        hidden = {k: v for k, v in record.items() if k not in _STIMULUS_VISIBLE} | {"stimuli_sha256": digest}
        parsed.append(ParsedLapseItem(line, stimulus.case_id, stimulus.query, "", stimulus.witness, hidden))

    def write():
        report = lapse_items_create(item_set_name=name, items=parsed, source=f"lapse_build {eval_date}")
        item_set = item_set_get_or_create(name=name, kind=SPEC.item_kind)
        for rejected in build.rejected:
            GenerationReject.objects.get_or_create(
                item_set=item_set,
                external_id=" / ".join(rejected["pair"]),
                defaults={
                    "conversation_external_id": "",
                    "record": rejected,
                    "verdict": "; ".join(rejected["problems"])[:200],
                    "dropped_by": "pair_gate",
                },
            )
        return report

    report = _atomic_import(dry_run, write)
    return build.counts() | {
        "item_set": name,
        "eval_date": build.eval_date,
        "stimuli_sha256": digest,
        "created": report.created,
        "unchanged": report.unchanged,
        "rejected_pairs": build.rejected,
        "dry_run": dry_run,
    }


def output_external_id(case_id: str, model: str) -> str:
    """Opaque, stable id: output ids are shown to annotators, so they must not spell the conditions."""
    return "o-" + hashlib.sha256(f"{model}\x00{case_id}".encode()).hexdigest()[:12]


def output_item(*, stimulus: Item, model: str, response: str, line: int = 0) -> ParsedLapseItem:
    """An output item for `stimulus` answered by `model`: the visible fields come from the stimulus,
    hidden carries case_id, model, the stimulus id and the stimulus' conditions."""
    hidden = {k: stimulus.hidden[k] for k in _CONDITION_KEYS if k in stimulus.hidden} | {
        "case_id": stimulus.external_id,
        "model": model,
        "stimulus_item_id": stimulus.pk,
        "stimulus_item_set": stimulus.item_set.name,
    }
    return ParsedLapseItem(
        line, output_external_id(stimulus.external_id, model), stimulus.request, response, stimulus.key_fact, hidden
    )


def lapse_outputs_import(
    *, path: Path, item_set_name: str = "Lapse outputs", stimuli_item_set: str = "", dry_run: bool = False
) -> dict:
    """JSONL of model outputs (case_id, model, response) -> one output item per line, linked to its
    stimulus: hidden carries case_id, model, the stimulus id and the stimulus' conditions.
    All-or-nothing: any bad line refuses the whole file with FILE:LINE errors."""
    path = Path(path)
    log = ErrorLog()
    rows = []
    seen: dict[tuple, int] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        values = {}
        for key in ("case_id", "model", "response"):
            value = record.get(key)
            if not isinstance(value, str) or (key != "response" and not value.strip()):
                log.add(where, f"field '{key}' must be a {'non-empty ' if key != 'response' else ''}string")
            values[key] = value
        if len(values) == 3 and all(isinstance(v, str) for v in values.values()):
            pair = (values["case_id"], values["model"])
            if pair in seen:
                log.add(where, f"duplicate output for case '{pair[0]}' and model '{pair[1]}' (first on line {seen[pair]})")
                continue
            seen[pair] = line
            rows.append((line, values))
    if not rows and not log.errors:
        log.add(f"{path.name}:1", "no outputs in file")
    log.raise_if_any()

    stimuli = Item.objects.filter(kind=SPEC.item_kind, external_id__in={v["case_id"] for _, v in rows})
    stimuli = stimuli.filter(content__hidden__has_key="generator_version").select_related("item_set")
    if stimuli_item_set:
        stimuli = stimuli.filter(item_set__name=stimuli_item_set)
    by_case: dict[str, list[Item]] = {}
    for stimulus in stimuli:
        by_case.setdefault(stimulus.external_id, []).append(stimulus)
    parsed = []
    for line, values in rows:
        where = f"{path.name}:{line}"
        found = by_case.get(values["case_id"], [])
        if not found:
            log.add(where, f"unknown case_id '{values['case_id']}' (build the stimuli first: lapse_build)")
            continue
        if len(found) > 1:
            sets = ", ".join(sorted(s.item_set.name for s in found))
            log.add(where, f"case_id '{values['case_id']}' is in several stimulus sets ({sets}); pass --stimuli")
            continue
        parsed.append(output_item(stimulus=found[0], model=values["model"], response=values["response"], line=line))
    log.raise_if_any()

    def write():
        return lapse_items_create(item_set_name=item_set_name, items=parsed, source=path.name)

    report = _atomic_import(dry_run, write)
    return report.as_dict() | {"outputs": len(parsed)}



