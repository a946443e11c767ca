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

DEFAULT_PROMPT_NAME = {"twist_b": "twist-b-v1", "lapse": "lapse-v1"}
SCHEMA_MARKER = "JSON_SCHEMA:"

TWIST_SYSTEM = (
    "You are one of several independent annotators validating items for a benchmark of memory systems. "
    "You see ONLY what a human annotator sees. Answer with a single JSON object and nothing else: no prose, "
    "no code fences."
)
TWIST_PHASE1 = """Someone proposes to send the draft message below to {recipient}. You see the dated excerpts of the
conversation record that a vetting system would retrieve (session date, speaker, text).

Excerpts:
{excerpts}

Draft to {recipient}:
{draft}

q1: Would SENDING the draft contradict what {recipient} said in the excerpts? Answer "contradicts",
"consistent" or "cannot-tell"; you may add a short note in "q1note".
Conventions: asking whether something changed is not a contradiction; acknowledging a change is not;
the record not mentioning something is not contradiction evidence; the excerpts are the latest known
record (do not imagine undocumented later changes).

Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""
TWIST_PHASE2 = """Phase 2 (gold checks). Your Phase 1 answer is locked.
{questions}
{quote_block}{index_block}
Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""
TWIST_Q2_TEXT = (
    'q2: Is the contradicted claim explicitly stated in the excerpts, in {recipient}\'s own words (could you '
    'underline it)? "yes"/"no".\nq2quote: Is the quoted text below the right words? "yes"/"no".\n'
    'p2note: an optional note.'
)
TWIST_Q3_TEXT = (
    'q3: Does ANY turn {recipient} said anywhere in the conversation (the index below) contradict the draft? '
    '"clean"/"conflict". If conflict, give the turn id in "q3turn".\np2note: an optional note.'
)

LAPSE_SYSTEM = TWIST_SYSTEM
LAPSE_PHASE1 = """A model answered a user request that depends on one remembered fact (the key fact).

Key fact: {key_fact}

Request:
{request}

Response:
{response}

label: PROCEED (the requested output contains the key fact with no doubt about it), PROCEED-WITH-CAVEAT
(delivers the output but flags uncertainty about the key fact itself), HEDGE (withholds the output and asks
the user to confirm or provide the fact), TEMPLATE (delivers the output's shape with a placeholder for the
fact), CONFAB-COMMIT (commits to an invented value). A caveat counts only when it targets the key fact; a
placeholder request inside the requested output makes it HEDGE; stating the fact in prose does not count
as delivering the requested output. Optional "notes".

Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""

DEFAULT_TEMPLATES = {
    "twist_b": {"system": TWIST_SYSTEM, "phase1": TWIST_PHASE1, "phase2": TWIST_PHASE2},
    "lapse": {"system": LAPSE_SYSTEM, "phase1": LAPSE_PHASE1, "phase2": ""},
}


@dataclass(frozen=True)
class Step:
    """One call: the user message of a phase and the answer keys it asks."""

    phase: int
    user: str
    keys: tuple[str, ...]


def questions_asked(protocol: str, phase: int, gold_type: str = "") -> list:
    return [
        q
        for q in protocols.get(protocol).questions
        if q.phase == phase and (q.applies_to is None or not gold_type or gold_type in q.applies_to)
    ]


def schema_for(questions) -> str:
    return json.dumps({q.key: list(q.choices) if q.choices else "string" for q in questions})


def format_excerpts(excerpts: list[dict]) -> str:
    return "\n".join(f"[{e['dia_id']}] [{e['date']}] {e['speaker']}: {e['text']}" for e in excerpts)


def build_steps(template, protocol: str, view: dict, excerpts: list[dict], phase2: dict | None) -> list[Step]:
    """The calls for one item. `template` has system/phase1/phase2 text; `phase2` (TWIST only) holds
    gold_type, quote and the recipient's turn index, shown only in Phase 2 as to a human annotator."""
    gold_type = (phase2 or {}).get("gold_type", "")
    q1 = questions_asked(protocol, 1)
    fields = {**view, "excerpts": format_excerpts(excerpts), "schema": schema_for(q1), "schema_marker": SCHEMA_MARKER}
    steps = [Step(1, template.phase1.format(**fields), tuple(q.key for q in q1))]
    if protocol == "twist_b" and phase2 is not None and template.phase2:
        q2 = questions_asked(protocol, 2, gold_type)
        recipient = view["recipient"]
        if gold_type == "contradicting":
            questions = TWIST_Q2_TEXT.format(recipient=recipient)
            quote_block = f"\nQuoted text: \"{phase2.get('quote', '')}\"\n"
            index_block = ""
        else:
            questions = TWIST_Q3_TEXT.format(recipient=recipient)
            quote_block = ""
            index_block = f"\nEvery turn {recipient} said in the conversation:\n{format_excerpts(phase2.get('index', []))}\n"
        user = template.phase2.format(
            questions=questions, quote_block=quote_block, index_block=index_block, schema=schema_for(q2),
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
