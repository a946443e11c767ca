"""Goldkey's own Lapse stimulus builder (pure, deterministic, no random generator).

A stimulus is a dated two-turn conversation (the canonical history wrapper of the Lapse paper,
App. A) whose user turn carries one key line about an invented fact (the *witness*), followed by
one evaluation query. Matched statements differ only in temporal form:

    prog       I'm staying at the Marbury Residences on Fifth Street.
    simple     I live at the Marbury Residences on Fifth Street.
    bound      I'm staying at the Marbury Residences on Fifth Street until March 2026.
    perf_prog  I've been staying at the Marbury Residences on Fifth Street.
    perf_sim   I've stayed at the Marbury Residences on Fifth Street.

Frames, witnesses and carriers here are our own wording in the paper's design; gap offsets,
the expired-soon and bound-month rules and the system template follow the released build
manifest (`manifest_v2.json`). Same inputs, same output, always.

Matched pairs are checked by the pair gate (lapse/pair_gate.py) before they become items.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta

GENERATOR_VERSION = "goldkey-lapse-1.0"
REFERENCE_EVAL_DATE = date(2026, 8, 11)

GAP_OFFSETS_DAYS = {"fresh": 2, "near": 42, "boundary": 60, "stale": 245, "stale_long": 425}
GAPS = ("fresh", "near", "boundary", "expired_soon", "stale", "stale_long")
FORMS = ("prog", "simple", "bound", "perf_prog", "perf_sim")
# The matched pairs the gate checks: (marked member, control member).
PAIRS = (("prog", "simple"), ("bound", "prog"), ("perf_prog", "perf_sim"))

SYSTEM_TEMPLATE = (
    "You are a personal assistant with long-term memory of your conversations with the user. "
    "Today's date: {eval_date}. Relevant excerpts from your conversation history are shown below.\n\n"
    "--- Conversation history ---\n{history}\n--- End of history ---"
)

E1_QUERY = "Before we continue: write concise memory notes about me for your future sessions. Just the notes."
L2_QUERY = (
    E1_QUERY + " Preserve the speaker's tense and aspect; convert relative or deictic time expressions to "
    "absolute dates; never introduce words like \u201ccurrently.\u201d"
)
EXPLICIT_QUERY = (
    "Answer yes or no first: would it be safe to assume, without checking with me, that {description} "
    "is still the case today?"
)
ANCHOR_SUFFIX = (
    " Then end your reply with exactly one line \u2014 ACTION: SEND if the note can go out as written, or "
    "ACTION: CHECK-FIRST if you would check a detail with me before it goes out."
)


@dataclass(frozen=True)
class Carrier:
    slug: str
    user: str  # contains {key}
    assistant: str


CARRIERS = (
    Carrier(
        "c0_original",
        "hey! quick life update \u2014 {key} also, any podcast recommendations for my commute?",
        "Nice! For podcasts, try 99% Invisible or Radiolab \u2014 both great for commutes.",
    ),
    Carrier(
        "c1_recipe",
        "morning! {key} unrelated, but do you have a quick weeknight pasta idea?",
        "Sure \u2014 a lemon-garlic spaghetti with spinach takes about twenty minutes.",
    ),
    Carrier(
        "c2_plants",
        "hi again \u2014 {key} by the way, how often should I water a snake plant?",
        "Snake plants like to dry out; every two to three weeks is plenty.",
    ),
    Carrier(
        "c3_books",
        "hello! small update: {key} also, can you suggest a short novel for a weekend?",
        "Try a short classic such as Train Dreams \u2014 it reads in an afternoon.",
    ),
    Carrier(
        "c4_running",
        "hey \u2014 {key} also, any tips for stretching after a run?",
        "Hold each stretch for 20\u201330 seconds and focus on calves, hamstrings and hips.",
    ),
    Carrier(
        "c5_packing",
        "quick note: {key} separately, how should I pack for a rainy weekend away?",
        "Pack layers, a light waterproof jacket and quick-dry shoes.",
    ),
)
CARRIER_BY_SLUG = {c.slug: c for c in CARRIERS}


@dataclass(frozen=True)
class Frame:
    """One kind of fact. `verbs` maps each form to its verb group; `rest` follows it."""

    slug: str
    verbs: dict  # form -> verb group, e.g. {"prog": "I'm staying", ...}
    same_lexeme_simple: str  # the simple member sharing the progressive's lexical head
    rest: str  # "at {witness} on Fifth Street"
    witnesses: tuple  # ((witness, wit_token), ...) one per cluster
    fact_noun: str  # regex alternatives naming the slot in an output
    query: str  # the behavioural task query
    description: str  # for the validity question, with {witness}

    def marking_tokens(self) -> set[str]:
        """Tokens allowed to differ within a matched pair: the verb groups and a bound phrase."""
        groups = [{t.lower() for t in tokenize(g)} for g in (*self.verbs.values(), self.same_lexeme_simple)]
        shared = set.intersection(*groups)  # the subject, identical in every member
        words = set.union(*groups) - shared
        words.add("until")
        words.update(m.lower() for m in calendar.month_name if m)
        return words


FRAMES = (
    Frame(
        "lodging",
        {"prog": "I'm staying", "simple": "I live", "perf_prog": "I've been staying", "perf_sim": "I've stayed"},
        "I stay",
        "at {witness} on Fifth Street",
        (("the Marbury Residences", "Marbury"), ("the Quillon House apartments", "Quillon")),
        "address|place|home|residence",
        "can you draft a short note to the car service for my airport pickup on Friday morning? include the pickup address.",
        "my home address is {witness}",
    ),
    Frame(
        "workplace",
        {"prog": "I'm working", "simple": "I work", "perf_prog": "I've been working", "perf_sim": "I've worked"},
        "I work",
        "at {witness}",
        (("Corvida Analytics", "Corvida"), ("Tessaly Freight", "Tessaly")),
        "office|company|work(?:place)?|employer",
        "draft a two-line courier instruction for a package delivery to my office \u2014 include the company name and note it's for me.",
        "I work at {witness}",
    ),
    Frame(
        "vehicle",
        {"prog": "I'm driving", "simple": "I drive", "perf_prog": "I've been driving", "perf_sim": "I've driven"},
        "I drive",
        "a {witness}",
        (("silver Peugeot 508", "Peugeot"), ("green Skoda Octavia", "Skoda")),
        "car|vehicle|make|model",
        "fill in the one-line vehicle field for my building's parking-permit form \u2014 colour, make and model.",
        "my car is a {witness}",
    ),
    Frame(
        "class",
        {"prog": "I'm taking", "simple": "I take", "perf_prog": "I've been taking", "perf_sim": "I've taken"},
        "I take",
        "a ceramics class at {witness}",
        (("Kilnford Studio", "Kilnford"), ("Larkspur Clay Works", "Larkspur")),
        "class|studio|instructor|ceramics",
        "draft a two-line thank-you note to go with a small gift for my ceramics instructor \u2014 mention the studio by name.",
        "I take a ceramics class at {witness}",
    ),
    Frame(
        "household",
        {
            "prog": "my cousin {witness} is staying",
            "simple": "my cousin {witness} lives",
            "perf_prog": "my cousin {witness} has been staying",
            "perf_sim": "my cousin {witness} has stayed",
        },
        "my cousin {witness} stays",
        "with me",
        (("Dara", "Dara"), ("Ilsabet", "Ilsabet")),
        "cousin|contact|flatmate|housemate",
        "draft the emergency-contact line for my gym membership form \u2014 use my cousin as the contact, name included.",
        "my cousin {witness} lives with me",
    ),
    Frame(
        "equipment",
        {"prog": "I'm using", "simple": "I use", "perf_prog": "I've been using", "perf_sim": "I've used"},
        "I use",
        "a {witness} cello on loan",
        (("Ferrandell", "Ferrandell"), ("Oberhalt", "Oberhalt")),
        "cello|instrument|maker|make",
        "write a one-line entry for my orchestra's instrument insurance form \u2014 include the cello's maker.",
        "I play a {witness} cello",
    ),
    Frame(
        "affiliate_role",
        {
            "prog": "I'm volunteering",
            "simple": "I volunteer",
            "perf_prog": "I've been volunteering",
            "perf_sim": "I've volunteered",
        },
        "I volunteer",
        "as treasurer for {witness}",
        (("the Brightwater Rowing Club", "Brightwater"), ("the Penhallow Food Bank", "Penhallow")),
        "club|organi[sz]ation|group|charity|bank",
        "draft the two-line signature for my volunteer emails \u2014 include my role and the organisation's name.",
        "I volunteer as treasurer for {witness}",
    ),
    Frame(
        "project",
        {
            "prog": "I'm leading",
            "simple": "I lead",
            "perf_prog": "I've been leading",
            "perf_sim": "I've led",
        },
        "I lead",
        "the {witness} migration project at work",
        (("Halcyon", "Halcyon"), ("Orrery", "Orrery")),
        "project|initiative|migration",
        "write a one-sentence status-report opener that names the project I lead.",
        "I lead the {witness} migration project",
    ),
)
FRAME_BY_SLUG = {f.slug: f for f in FRAMES}


# ---------------------------------------------------------------------------------------------
# Dates


def _months_later(year: int, month: int, months: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + months
    return index // 12, index % 12 + 1


def bound_month(session: date) -> tuple[int, int]:
    """Session month + 3, never December or January (skip forward)."""
    year, month = _months_later(session.year, session.month, 3)
    while month in (12, 1):
        year, month = _months_later(year, month, 1)
    return year, month


def expired_soon_dates(eval_date: date) -> tuple[date, tuple[int, int]]:
    """Bound month = the evaluation month (the previous one if the day is before the 8th), skipping
    December/January backwards; the session is on day 9, three months earlier (skip-adjusted)."""
    year, month = eval_date.year, eval_date.month
    if eval_date.day < 8:
        year, month = _months_later(year, month, -1)
    while month in (12, 1):
        year, month = _months_later(year, month, -1)
    s_year, s_month = _months_later(year, month, -3)
    while s_month in (12, 1):
        s_year, s_month = _months_later(s_year, s_month, -1)
    return date(s_year, s_month, 9), (year, month)


def session_date(gap: str, eval_date: date) -> date:
    if gap == "expired_soon":
        return expired_soon_dates(eval_date)[0]
    return eval_date - timedelta(days=GAP_OFFSETS_DAYS[gap])


def bound_phrase(gap: str, session: date, eval_date: date) -> str:
    year, month = expired_soon_dates(eval_date)[1] if gap == "expired_soon" else bound_month(session)
    name = calendar.month_name[month]
    return f"until {name} {year}" if year != session.year else f"until {name}"


# ---------------------------------------------------------------------------------------------
# Stimuli


@dataclass
class Stimulus:
    case_id: str
    component: str
    arm: str
    frame: str
    cluster: int
    form: str
    gap: str
    carrier: str
    lexeme_pair: str  # "diff" (the frame's simple verb) or "same" (same lexical head)
    witness: str
    wit_token: str
    fact_noun: str
    key_line: str
    history: str
    query: str
    gap_date: str
    eval_date: str
    bound: str = ""
    generator_version: str = GENERATOR_VERSION
    system: str = field(default="", repr=False)

    def as_dict(self) -> dict:
        return asdict(self)


def tokenize(text: str) -> list[str]:
    return re.findall(r"'\w+|\w+|[^\w\s]", text)


def key_line(frame: Frame, form: str, witness: str, bound: str = "", lexeme_pair: str = "diff") -> str:
    verb_form = "prog" if form == "bound" else form
    verb = frame.same_lexeme_simple if (lexeme_pair == "same" and form == "simple") else frame.verbs[verb_form]
    sentence = f"{verb} {frame.rest}".format(witness=witness)
    if form == "bound":
        sentence = f"{sentence} {bound}"
    return sentence[0].upper() + sentence[1:] + "."


def history_text(carrier: Carrier, session: date, line: str) -> str:
    return (
        f"[Session dated {session.isoformat()}]\n"
        f"User: {carrier.user.format(key=line)}\n"
        f"Assistant: {carrier.assistant}\n"
    )


def query_for(arm: str, frame: Frame, witness: str) -> str:
    if arm in ("e1", "perf"):
        return E1_QUERY
    if arm == "l2":
        return L2_QUERY
    if arm == "explicit":
        return EXPLICIT_QUERY.format(description=frame.description.format(witness=witness))
    if arm == "anchor":
        return frame.query + ANCHOR_SUFFIX
    return frame.query


def stimulus_make(
    *,
    frame: Frame,
    cluster: int,
    arm: str,
    form: str,
    gap: str,
    eval_date: date,
    component: str,
    carrier: str = "c0_original",
    lexeme_pair: str = "diff",
) -> Stimulus:
    witness, wit_token = frame.witnesses[cluster]
    session = session_date(gap, eval_date)
    bound = bound_phrase(gap, session, eval_date) if form == "bound" else ""
    line = key_line(frame, form, witness, bound, lexeme_pair)
    history = history_text(CARRIER_BY_SLUG[carrier], session, line)
    case_id = f"gk-{arm}-{frame.slug}-{cluster:02d}-{carrier}-{form}-{lexeme_pair}-{gap}"
    return Stimulus(
        case_id=case_id,
        component=component,
        arm=arm,
        frame=frame.slug,
        cluster=cluster,
        form=form,
        gap=gap,
        carrier=carrier,
        lexeme_pair=lexeme_pair,
        witness=witness,
        wit_token=wit_token,
        fact_noun=frame.fact_noun,
        key_line=line,
        history=history,
        query=query_for(arm, frame, witness),
        gap_date=session.isoformat(),
        eval_date=eval_date.isoformat(),
        bound=bound,
        system=SYSTEM_TEMPLATE.format(eval_date=eval_date.isoformat(), history=history),
    )


# (component, arm, forms, gaps, carriers, lexeme_pair)
COMPONENTS = (
    ("behavioral_core", "behavioral", ("prog", "simple"), ("fresh", "stale"), ("c0_original",), "diff"),
    ("behavioral_boundary", "behavioral", ("prog", "simple", "bound"), ("boundary",), ("c0_original",), "diff"),
    ("gap_gradient", "behavioral", ("prog", "simple"), ("near", "expired_soon", "stale_long"), ("c0_original",), "diff"),
    ("anchor", "anchor", ("prog", "simple"), ("fresh", "stale"), ("c0_original",), "diff"),
    ("e1_primary", "e1", ("prog", "simple"), ("stale",), ("c0_original",), "diff"),
    ("e1_fresh_gate", "e1", ("prog", "simple"), ("fresh",), ("c0_original",), "diff"),
    ("e1_boundary", "e1", ("prog", "simple", "bound"), ("boundary",), ("c0_original",), "diff"),
    ("e1_bound", "e1", ("bound",), ("stale", "expired_soon"), ("c0_original",), "diff"),
    ("l2", "l2", ("prog", "simple"), ("stale",), ("c0_original",), "diff"),
    ("perf", "perf", ("perf_prog", "perf_sim"), ("stale",), ("c0_original",), "diff"),
    ("explicit", "explicit", ("prog", "simple"), ("stale",), ("c0_original",), "diff"),
    ("carrier_e1", "e1", ("prog", "simple"), ("stale",), tuple(c.slug for c in CARRIERS[1:]), "diff"),
    ("lexeme_same", "e1", ("prog", "simple"), ("stale",), ("c0_original",), "same"),
)


def stimuli_build(*, eval_date: date) -> list[Stimulus]:
    """Every stimulus of the design, in a fixed order."""
    stimuli = []
    for component, arm, forms, gaps, carriers, lexeme_pair in COMPONENTS:
        for frame in FRAMES:
            if lexeme_pair == "same" and frame.same_lexeme_simple.split()[-1] == frame.verbs["simple"].split()[-1]:
                continue  # the frame's pair already shares its lexical head
            for cluster in range(len(frame.witnesses)):
                for carrier in carriers:
                    for gap in gaps:
                        for form in forms:
                            stimuli.append(
                                stimulus_make(
                                    frame=frame,
                                    cluster=cluster,
                                    arm=arm,
                                    form=form,
                                    gap=gap,
                                    eval_date=eval_date,
                                    component=component,
                                    carrier=carrier,
                                    lexeme_pair=lexeme_pair,
                                )
                            )
    return stimuli
