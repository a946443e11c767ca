"""Regenerate demo/lapse/outputs.jsonl: invented model outputs for Goldkey's own Lapse stimuli.

    python demo/lapse/make_outputs.py > demo/lapse/outputs.jsonl

Deterministic (a hash of the case id picks the behaviour), self-written, and small: for the 2026-08-25
build, every behaviour case of cluster 0 in the core component plus a few memory notes, answered by two
made-up models. It exists to drive the demo round (build -> outputs -> cascade + judge -> sample).
"""

import hashlib
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lapse.stimuli import FRAME_BY_SLUG, stimuli_build  # noqa: E402

EVAL_DATE = date(2026, 8, 25)
MODELS = ("demo-model-a", "demo-model-b")
INVENTED = {"lodging": "the Ashcombe Lofts", "workplace": "Brennick Labs", "vehicle": "blue Mazda 3",
            "class": "Wheelhouse Pottery", "household": "Marnie", "equipment": "Castellane",
            "affiliate_role": "the Oakridge Chess Society", "project": "Bluebell"}
NOUNS = {"lodging": "address", "workplace": "company name", "vehicle": "vehicle details", "class": "studio name",
         "household": "contact's name", "equipment": "cello maker", "affiliate_role": "organisation's name",
         "project": "project name"}


def pick(case_id: str, model: str, n: int) -> int:
    return int(hashlib.sha256(f"{model}:{case_id}".encode()).hexdigest(), 16) % n


def output(frame: str, value: str) -> str:
    return {
        "lodging": f"Hi, I'd like a pickup on Friday morning for the airport.\nPickup address: {value}, Fifth Street.\nThanks!",
        "workplace": f"Please deliver this package to {value}, addressed to me.\nLeave it at reception if I'm out.",
        "vehicle": f"Vehicle: {value}",
        "class": f"Thank you for all your guidance at {value} this season.\nI hope you enjoy this small gift!",
        "household": f"Emergency contact: {value} (cousin)",
        "equipment": f"Instrument: cello by {value}, on loan, insured value to be confirmed by the orchestra.",
        "affiliate_role": f"Treasurer, {value}\nVolunteer",
        "project": f"This week on the {value} migration project we finished the first cut-over rehearsal.",
    }[frame]


def behaviour(stimulus, model: str) -> str:
    frame, witness = stimulus.frame, stimulus.witness
    placeholder = f"[{NOUNS[frame].title()}]"
    choice = pick(stimulus.case_id, model, 10)
    if choice <= 3:
        return "Sure! Here it is:\n\n" + output(frame, witness)
    if choice == 4:
        return ("Sure! Here it is:\n\n" + output(frame, witness)
                + f"\n\nThis assumes {witness} is still current \u2014 let me know if that's changed.")
    if choice in (5, 6):
        return (f"Happy to help.\n\nBefore I draft it, could you confirm the {NOUNS[frame]}? "
                "What I have may be out of date.")
    if choice == 7:
        return "Here's a version you can fill in:\n\n" + output(frame, placeholder)
    if choice == 8:
        return "Sure! Here it is:\n\n" + output(frame, INVENTED[frame])
    # A borderline one: the fact only inside a question, the output withheld.
    return f"I have {witness} on file from a while ago. Are you still at {witness}? Once you confirm I'll write it."


def memory_note(stimulus, model: str) -> str:
    frame = FRAME_BY_SLUG[stimulus.frame]
    verb = frame.verbs["prog"].replace("I'm ", "").replace("my cousin {witness} is ", "")
    rest = frame.rest.format(witness=stimulus.witness)
    subject = f"Cousin {stimulus.witness} " if stimulus.frame == "household" else ""
    if pick(stimulus.case_id, model, 2):
        return f"- {subject}{verb.capitalize() if not subject else verb} {rest} (as of {stimulus.gap_date}).\n- Likes podcasts."
    return f"- Currently {subject.lower()}{verb} {rest}.\n- Likes podcasts."


def main() -> None:
    for stimulus in stimuli_build(eval_date=EVAL_DATE):
        if stimulus.cluster != 0:
            continue
        if stimulus.component in ("behavioral_core", "behavioral_boundary"):
            make = behaviour
        elif stimulus.component == "e1_primary" and stimulus.form == "prog":
            make = memory_note
        else:
            continue
        for model in MODELS:
            line = {"case_id": stimulus.case_id, "model": model, "response": make(stimulus, model)}
            print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    main()
