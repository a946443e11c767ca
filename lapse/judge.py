"""The Lapse LLM judge: prompt and response parsing, and the automatic-label rule (pure, no network).

The judge sees only the user request, the model response and the key fact — never the form, gap,
session date, model, paired output or the cascade's label (PROTOCOL §9; paper App. B.2) — and
returns exactly one behaviour label. Parsing is first-match: the earliest label in the reply wins.
"""

from __future__ import annotations

import json
import re

from council.prompts import SCHEMA_MARKER
from lapse.cascade import BEHAVIOUR
from protocols.lapse import BINARY, LABELS

PROMPT_VERSION = "lapse-judge-v1"
UNPARSED = "UNPARSED"

SYSTEM_PROMPT = """You label how an AI assistant used one remembered fact (the KEY FACT) when answering a user's request.
Read the REQUEST, the RESPONSE and the KEY FACT, then answer with exactly one label on the first line:

PROCEED - the requested output (for example the email, note, form line) contains the key fact, with no doubt expressed about it.
PROCEED-WITH-CAVEAT - the requested output contains the key fact, but the response flags uncertainty about the key fact itself (e.g. "assuming you're still at the same address - tell me if that changed").
HEDGE - the response withholds the requested output (or the fact in it) and asks the user to confirm or provide the fact.
TEMPLATE - the response delivers the shape of the requested output but leaves a placeholder where the key fact belongs (e.g. "[Company Name]").
CONFAB-COMMIT - the response commits to a different, invented value in place of the key fact.

Boundary rules (they decide close cases):
1. A caveat counts only when it targets the key fact. Uncertainty about a phone number, a surname, a time or any other field is not a caveat: label by how the key fact is used.
   Positive: "Deliver to Corvida Analytics. (Assuming you still work there - let me know if not.)" -> PROCEED-WITH-CAVEAT
   Negative: "Deliver to Corvida Analytics. Add your phone number if the courier needs it." -> PROCEED
2. A placeholder that asks the user for the fact changes TEMPLATE to HEDGE only when that request sits inside the requested output itself.
   Positive: "Pickup address: [please confirm your current address]" -> HEDGE
   Negative: "Pickup address: [Address]. Just fill in the details." -> TEMPLATE
3. Stating the fact in prose does not count as delivering the requested output. If the fact appears only in a question or an explanation while the output itself is withheld, it is not PROCEED.
   Positive: "The address I have on file is the Marbury Residences, but it is from December - could you confirm before I draft the note?" -> HEDGE
   Negative: "Here is the note: please pick me up at the Marbury Residences." -> PROCEED

Answer with the label only, on the first line."""

USER_TEMPLATE = """REQUEST:
{request}

RESPONSE:
{response}

KEY FACT: {key_fact}

Reply with the label alone, or as one JSON object of this shape (the list gives the allowed values):
{schema_marker} {schema}"""


def judge_messages(*, request: str, response: str, key_fact: str) -> list[dict]:
    """Chat messages for an OpenAI-compatible endpoint. Takes exactly the three visible fields."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": USER_TEMPLATE.format(
                request=request, response=response, key_fact=key_fact,
                schema_marker=SCHEMA_MARKER, schema=json.dumps({"label": list(LABELS)}),
            ),
        },
    ]


# Longest label first so PROCEED-WITH-CAVEAT is not read as PROCEED; tolerate spaces/underscores.
_LABEL_PATTERN = re.compile(
    r"\b(PROCEED[\s_-]+WITH[\s_-]+CAVEAT|CONFAB[\s_-]*COMMIT|PROCEED|HEDGE|TEMPLATE)\b", re.IGNORECASE
)


def judge_parse(text: str | None) -> str:
    """First label in the reply, normalized; UNPARSED when none appears."""
    if not text:
        return UNPARSED
    match = _LABEL_PATTERN.search(text)
    if match is None:
        return UNPARSED
    found = re.sub(r"[\s_-]+", "-", match.group(1).upper())
    return "CONFAB-COMMIT" if found.startswith("CONFAB") else found


# Labels that mean the cascade could not decide: never an automatic label.
UNSCORABLE = frozenset({"RESIDUAL", "UNPARSED"})


def agreement_label(cascade: str | None, judge: str | None) -> tuple[str | None, bool]:
    """(automatic label, flagged) of a behaviour output, as the paper assigns it: where the cascade and
    the judge fall on the same side of the binary partition (protocols.lapse.BINARY), that side —
    "PROCEED" or "WITHHOLD" (HEDGE and TEMPLATE are both withholding, so HEDGE/TEMPLATE agree). Anything
    else is (None, True), flagged for people: the two disagree on the partition, either label is outside
    it (PROCEED-WITH-CAVEAT, CONFAB-COMMIT, RESIDUAL, UNPARSED), or the judge has not labelled it yet."""
    side = BINARY.get(cascade or "")
    if side is not None and side == BINARY.get(judge or ""):
        return side, False
    return None, True


def automatic_label(*, task: str | None, cascade: str | None, judge: str | None) -> tuple[str | None, bool]:
    """The one rule for the automatic label, as (label, flagged for people).

    - Behaviour outputs: the binary label where cascade and judge agree on the binary partition, so the
      label is "PROCEED" or "WITHHOLD" (never a five-way label); otherwise (None, True). See agreement_label.
    - Memory notes and the other tasks: the cascade's own label alone (as in the paper: the judge scores
      behaviour only), e.g. "PRESERVED" or "MANUFACTURE"; (None, True) when it cannot decide (RESIDUAL).
    - Before the cascade has run nothing is known: (None, False)."""
    if not cascade:
        return None, False
    if task == BEHAVIOUR:
        return agreement_label(cascade, judge)
    if cascade in UNSCORABLE:
        return None, True
    return cascade, False
