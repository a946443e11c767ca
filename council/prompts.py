"""Council prompts: the annotators' blind protocol, built from the same blind view annotators get.

Pure apart from the item reads done by the caller: `item_view` takes what `protocols.blind_view`
and `excerpts_for` return (and, for TWIST Phase 2, the gold type that decides which gold-check
questions apply, the quote and the recipient's turn index — exactly what Phase 2 shows a human).
"""

import hashlib
import json
from dataclasses import dataclass

import protocols
from goldkey.lib.jsonsafe import json_loads_checked

SCHEMA_MARKER = "JSON_SCHEMA:"



# Each protocol's default prompt version (its spec's `council_prompt`), by protocol name.
DEFAULT_PROMPT_NAME = {spec.name: spec.council_prompt.name for spec in protocols.specs() if spec.council_prompt}
DEFAULT_TEMPLATES = {
    spec.name: {"system": spec.council_prompt.system, "phase1": spec.council_prompt.phase1, "phase2": spec.council_prompt.phase2}
    for spec in protocols.specs()
    if spec.council_prompt
}


@dataclass(frozen=True)
class Step:
    """One call: the user message of a phase and the answer keys it asks."""

    phase: int
    user: str
    keys: tuple[str, ...]


def questions_asked(protocol: str, phase: int, gold_type: str = "") -> list:
    # An optional flag (the gold answer is wrong) is a person's own remark beside the answer, not a label
    # the council is compared on.
    return [
        q
        for q in protocols.get(protocol).questions
        if q.phase == phase and not q.optional and (q.applies_to is None or not gold_type or gold_type in q.applies_to)
    ]


def schema_for(questions) -> str:
    return json.dumps({q.key: list(q.choices) if q.choices else "string" for q in questions})


def format_excerpts(excerpts: list[dict]) -> str:
    return "\n".join(f"[{e['dia_id']}] [{e['date']}] {e['speaker']}: {e['text']}" for e in excerpts)


def build_steps(template, protocol: str, view: dict, excerpts: list[dict], phase2: dict | None) -> list[Step]:
    """The calls for one item. `template` has system/phase1/phase2 text; `phase2` (protocols with a
    second phase) holds the gold type and what Phase 2 shows a human annotator of this item (the quote,
    the recipient's turn index), shown only in Phase 2."""
    spec = protocols.get(protocol)
    gold_type = (phase2 or {}).get("gold_type", "")
    q1 = questions_asked(protocol, 1)
    fields = {**view, "excerpts": format_excerpts(excerpts), "schema": schema_for(q1), "schema_marker": SCHEMA_MARKER}
    steps = [Step(1, template.phase1.format(**fields), tuple(q.key for q in q1))]
    if spec.has_phase2 and phase2 is not None and template.phase2 and spec.council_prompt:
        texts = spec.council_prompt
        q2 = questions_asked(protocol, 2, gold_type)
        shows = {fact for q in q2 for fact in q.shows}
        names = {**view, "quote": phase2.get("quote", ""), "index": format_excerpts(phase2.get("index", []))}
        questions = "".join(texts.phase2_questions[q.key] for q in q2 if q.key in texts.phase2_questions)
        quote_block = texts.quote_block if "quote" in shows else ""
        index_block = texts.index_block if "recipient_turns" in shows else ""
        user = template.phase2.format(
            questions=questions.format(**names), quote_block=quote_block.format(**names),
            index_block=index_block.format(**names), schema=schema_for(q2),
            schema_marker=SCHEMA_MARKER,
        )
        steps.append(Step(2, user, tuple(q.key for q in q2)))
    return steps


def prompt_hash(model_payload: dict) -> str:
    return hashlib.sha256(json.dumps(model_payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def parse_answer(content: str, protocol: str, keys: tuple[str, ...], gold_type: str = "") -> tuple[dict, list[str]]:
    """Strict: the reply must be one JSON object, only the asked keys, every choice question answered
    with an allowed value. Returns (values, problems)."""
    try:
        # A model's reply is untrusted input too: a deeply nested one must be a problem, not a crashed task.
        data = json_loads_checked(content.strip())
    except (ValueError, AttributeError) as exc:  # JSONDecodeError and JsonRefused are ValueErrors
        return {}, [f"not JSON: {exc}"]
    if not isinstance(data, dict):
        return {}, ["not a JSON object"]
    problems = [f"field '{k}': not asked in this phase" for k in data if k not in keys]
    choice_keys = {q.key for q in protocols.get(protocol).questions if q.choices and q.key in keys}
    problems += [f"field '{k}': missing" for k in sorted(choice_keys) if not data.get(k)]
    values = {k: v for k, v in data.items() if k in keys}
    problems += protocols.get(protocol).validate_values(values, gold_type)
    return values, problems
