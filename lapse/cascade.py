"""The Lapse rule cascade: deterministic surface-cue labels for every Lapse task (pure, no Django).

Written from the Lapse paper's description (§4.3, App. B): memory notes, behaviour outputs, the
validity question and the send-or-check choice. The cascade sees only what a scorer may see — the
task, the response, the key fact (witness and its identifying token), the fact's nouns, the source
form of the stimulus and the request. It never reads ids, subtypes, tiers or gold labels.

Each rule tier is a short list of cue patterns; the label follows from which cues fire, in a fixed
order (first match wins), so every decision can be explained by `explain(...)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Tasks and labels

BEHAVIOUR = "behaviour"
MEMORY_NOTE = "memory_note"
VALIDITY = "validity"
SEND_OR_CHECK = "send_or_check"

# Stimulus arms (as in the released stimuli and battery) -> the task whose labels apply.
TASK_OF_ARM = {
    "behavioral": BEHAVIOUR,
    "e2": BEHAVIOUR,  # memory-use on a written note
    "l2e2": BEHAVIOUR,
    "e1": MEMORY_NOTE,
    "l2": MEMORY_NOTE,  # guided memory writing
    "perf": MEMORY_NOTE,
    "explicit": VALIDITY,
    "anchor": SEND_OR_CHECK,
}

LABELS = {
    BEHAVIOUR: ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT", "RESIDUAL"),
    MEMORY_NOTE: (
        "PRESERVED",
        "COERCED-STATIVE",
        "MANUFACTURE",
        "BOUND-DROPPED",
        "WITNESS-DROPPED",
        "RESIDUAL",
        "EXTRACTED-AS-CURRENT",
    ),
    VALIDITY: ("YES", "NO", "UNPARSED"),
    SEND_OR_CHECK: ("SEND", "CHECK-FIRST", "UNPARSED"),
}

# The only record keys the cascade may read (a test holds it to this).
INPUT_KEYS = ("arm", "response", "witness", "wit_token", "fact_noun", "form", "query")


@dataclass
class Decision:
    label: str
    rule: str
    cues: dict = field(default_factory=dict)


def task_for_arm(arm: str) -> str:
    try:
        return TASK_OF_ARM[arm]
    except KeyError:
        raise ValueError(f"unknown Lapse arm '{arm}' (known: {', '.join(sorted(TASK_OF_ARM))})") from None


def label_record(record: Mapping) -> str:
    """Label one stimulus/output record (battery or run row) reading only INPUT_KEYS."""
    return explain_record(record).label


def explain_record(record: Mapping) -> Decision:
    values = {key: (record[key] if key in record else "") for key in INPUT_KEYS}
    return explain(
        task=task_for_arm(values["arm"]),
        response=values["response"] or "",
        witness=values["witness"] or "",
        wit_token=values["wit_token"] or "",
        fact_noun=values["fact_noun"] or "",
        form=values["form"] or "",
        query=values["query"] or "",
    )


def cascade_label(**kwargs) -> str:
    return explain(**kwargs).label


def explain(
    *,
    task: str,
    response: str,
    witness: str = "",
    wit_token: str = "",
    fact_noun: str = "",
    form: str = "",
    query: str = "",
) -> Decision:
    if task == BEHAVIOUR:
        return _behaviour(response, witness, wit_token, fact_noun)
    if task == MEMORY_NOTE:
        return _memory_note(response, witness, wit_token, form)
    if task == VALIDITY:
        return _validity(response)
    if task == SEND_OR_CHECK:
        return _send_or_check(response)
    raise ValueError(f"unknown Lapse task '{task}'")


# ---------------------------------------------------------------------------------------------
# Shared text helpers

_MARKDOWN = re.compile(r"[*_`#>]+")


def _plain(text: str) -> str:
    return _MARKDOWN.sub("", text)


def _token_pattern(token: str) -> re.Pattern | None:
    """The witness token as a word, tolerating one stray space or hyphen between letters
    (tokenizer splits such as "Kil nford" still name the fact)."""
    token = token.strip()
    if not token or token == "-":
        return None
    letters = [re.escape(ch) for ch in token]
    return re.compile(r"(?<!\w)" + r"[\s\-]?".join(letters) + r"(?!\w)", re.IGNORECASE)


def _names_fact(text: str, witness: str, wit_token: str) -> bool:
    for candidate in (wit_token, witness):
        pattern = _token_pattern(candidate)
        if pattern is not None and pattern.search(text):
            return True
    return False


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _noun_pattern(fact_noun: str) -> re.Pattern | None:
    fact_noun = (fact_noun or "").strip()
    if not fact_noun or fact_noun == "-":
        return None
    return re.compile(r"\b(?:" + fact_noun + r")(?:e?s|'s)?\b", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Behaviour outputs (PROTOCOL §9; paper App. B.2)

# Requests that withhold the output until the user supplies or confirms something; specific
# enough to count on their own.
_STRONG_ASK = re.compile(
    r"\b(?:before I (?:draft|send|finish|write|complete|put|go ahead|fill)"
    r"|rather not guess|once you confirm|confirm (?:before|first)"
    r"|are you still|do you still|is (?:that|this|it) still"
    r"|fill(?:ing)? me in|remind me (?:of|what|which|the|your))\b",
    re.IGNORECASE,
)
# Weaker asks count only when the same paragraph targets the key fact (its nouns, the witness,
# or "that detail").
_WEAK_ASK = re.compile(
    r"\b(?:provide|confirm|share|tell me|let me know (?:the|your|which|what|whether)|what(?:'s| is) (?:the|your)"
    r"|which (?:one|\w+ (?:is|are|do|should))|need (?:the|your|to know)|send me|give me)\b",
    re.IGNORECASE,
)
_DETAIL = re.compile(r"\b(?:that|this|the|those|these) (?:detail|details|information|info|name)\b", re.IGNORECASE)
# Uncertainty aimed at the remembered fact itself.
_CAVEAT = re.compile(
    r"(?:assuming (?:you(?:'re| are)|it(?:'s| is)|this is|that(?:'s| is)) still"
    r"|if (?:that|this|it|anything|things|any of this)(?:'s| has| have)? (?:changed|moved on|different)"
    r"|(?:may|might|could) (?:be|have) (?:outdated|out of date|changed|moved on|stale)"
    r"|based on what you (?:told|mentioned|said)"
    r"|(?:a while|some time|a few months|months) (?:back|ago)"
    r"|flag it if|let me know if (?:that|this|it|anything)(?:'s| has)? (?:changed|different|wrong|outdated)"
    r"|still (?:current|accurate|correct|valid|up to date|the case)"
    r"|not (?:sure|certain) (?:if|whether) (?:that|this|it|you)"
    r"|double[- ]check (?:that|the|your|this))",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"\[[^\]\n]{1,80}\]|\{[^}\n]{1,80}\}|<[^>\n]{1,80}>")
_PLACEHOLDER_ASK = re.compile(r"\b(?:confirm|provide|verify|check|please|let me know|\?)", re.IGNORECASE)


def _is_fact_ask(paragraph: str, nouns: re.Pattern | None, witness: str, wit_token: str) -> bool:
    text = _plain(paragraph)
    if _STRONG_ASK.search(text):
        return True
    if _WEAK_ASK.search(text):
        targets_fact = (
            (nouns is not None and nouns.search(text))
            or _names_fact(text, witness, wit_token)
            or _DETAIL.search(text)
        )
        return bool(targets_fact)
    return False


def _behaviour(response: str, witness: str, wit_token: str, fact_noun: str) -> Decision:
    text = response or ""
    if len(_plain(text).strip()) < 3:
        return Decision("RESIDUAL", "empty response")
    nouns = _noun_pattern(fact_noun)
    paragraphs = _paragraphs(text)
    asks = [p for p in paragraphs if _is_fact_ask(p, nouns, witness, wit_token)]
    naming = [p for p in paragraphs if _names_fact(p, witness, wit_token)]
    # Stating the fact inside a question or confirmation request is not delivering it.
    delivering = [p for p in naming if p not in asks]
    cues = {"asks": len(asks), "naming": len(naming), "delivering": len(delivering)}
    if delivering:
        if asks or _CAVEAT.search(_plain(text)):
            return Decision("PROCEED-WITH-CAVEAT", "fact delivered with a caveat or question about it", cues)
        return Decision("PROCEED", "fact delivered without doubt", cues)
    fact_placeholders = [
        ph for ph in _PLACEHOLDER.findall(text) if nouns is not None and nouns.search(ph)
    ]
    cues["placeholders"] = len(fact_placeholders)
    if any(_PLACEHOLDER_ASK.search(ph) for ph in fact_placeholders):
        return Decision("HEDGE", "placeholder inside the output asks for the fact", cues)
    if asks:
        return Decision("HEDGE", "output withheld pending the fact", cues)
    if fact_placeholders:
        return Decision("TEMPLATE", "output shape with a placeholder for the fact", cues)
    return Decision("CONFAB-COMMIT", "output delivered with another value in place of the fact", cues)


# ---------------------------------------------------------------------------------------------
# Memory notes (write task; paper §4.3, App. B.1)

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    r"\b(?:\d{4}-\d{2}(?:-\d{2})?|\d{1,2}/\d{1,2}/\d{2,4}|" + _MONTH + r"\.?(?:\s+\d{1,2}(?:st|nd|rd|th)?,?)?\s+\d{4}"
    r"|\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH + r"\.?,?\s+\d{4})\b",
    re.IGNORECASE,
)
_BOUND = re.compile(
    r"\b(?:until|till|through|thru|ending|ends|ending in|to the end of|up to)\s+(?:the end of\s+|end of\s+)?"
    + _MONTH + r"\b",
    re.IGNORECASE,
)
# Explicit claims that the fact holds now: they manufacture a durable present.
_CURRENCY = re.compile(
    r"\b(?:currently|current|still|presently|at present|right now|nowadays|these days|to this day"
    r"|as of (?:now|today|this writing|writing|the time of writing))\b",
    re.IGNORECASE,
)
_PAST = re.compile(r"\b(?:previously|formerly|used to|no longer|in the past|once)\b", re.IGNORECASE)
_PERF_PROG = re.compile(r"\b(?:has|have|'s|'ve)\s+been\s+\w+ing\b", re.IGNORECASE)
_PARTICIPLE = (
    r"(?:\w+ed|\w+en|\w+wn|done|had|kept|held|led|run|taught|built|made|got|gotten|worn|sat|stood|lent|spent|sung|swum)"
)
_PERF_SIM = re.compile(r"\b(?:has|have|'s|'ve)\s+(?:\w+ly\s+)?" + _PARTICIPLE + r"\b", re.IGNORECASE)
_BE_PROG = re.compile(r"\b(?:is|are|am|'s|'re|'m)\s+(?:\w+ly\s+)?\w+ing\b", re.IGNORECASE)
_SUBJECT_SIMPLE = re.compile(r"\b(?:user|he|she|they|i|who)\s+(?:\w+ly\s+)?\w+s\b", re.IGNORECASE)

# Verb forms of the frames (the builder's lexicon plus common paraphrases).
_PROG_VERBS = {
    "staying", "living", "working", "driving", "taking", "using", "volunteering", "serving", "building",
    "leading", "running", "renting", "borrowing", "playing", "attending", "studying", "training", "sharing",
    "hosting", "housing", "subletting", "commuting", "managing", "developing", "coordinating", "chairing",
    "coaching", "teaching", "lodging", "boarding", "interning", "contracting", "freelancing", "learning",
}
_SIMPLE_VERBS = {
    "lives", "stays", "works", "drives", "takes", "uses", "volunteers", "serves", "builds", "leads", "runs",
    "rents", "borrows", "plays", "attends", "studies", "trains", "shares", "hosts", "owns", "manages",
    "develops", "coordinates", "chairs", "coaches", "teaches", "resides", "lodges", "boards", "interns",
    "learns", "has", "holds", "keeps", "belongs",
}
_PAST_VERBS = {
    "stayed", "lived", "worked", "drove", "took", "used", "volunteered", "served", "built", "led", "ran",
    "rented", "borrowed", "played", "attended", "studied", "trained", "shared", "hosted", "owned", "managed",
    "resided", "taught", "coached", "learned", "learnt", "held", "kept",
}


def _aspect(line: str) -> str | None:
    text = _plain(line).lower()
    words = re.findall(r"[a-z']+", text)
    if _PERF_PROG.search(text):
        return "perf_prog"
    if _PERF_SIM.search(text):
        return "perf_sim"
    if _PAST.search(text) or any(w in _PAST_VERBS for w in words):
        return "past"
    if _BE_PROG.search(text) or any(w in _PROG_VERBS for w in words):
        return "prog"
    if any(w in _SIMPLE_VERBS for w in words) or _SUBJECT_SIMPLE.search(text):
        return "simple"
    return None


def _witness_line(response: str, witness: str, wit_token: str) -> str | None:
    for line in (response or "").splitlines():
        if _names_fact(line, witness, wit_token):
            return line
    return None


def _memory_note(response: str, witness: str, wit_token: str, form: str) -> Decision:
    line = _witness_line(response, witness, wit_token)
    if line is None:
        return Decision("WITNESS-DROPPED", "no note names the fact")
    aspect = _aspect(line)
    bound_free = _BOUND.sub(" ", line)
    cues = {
        "aspect": aspect,
        "currency": bool(_CURRENCY.search(line)),
        "anchored": bool(_DATE.search(bound_free) and not re.search(r"as of this writing", line, re.IGNORECASE)),
        "bounded": bool(_BOUND.search(line)),
    }
    if aspect is None:
        return Decision("RESIDUAL", "the note names the fact without a verb the rules can read", cues)
    currency, anchored, bounded = cues["currency"], cues["anchored"], cues["bounded"]

    if form == "perf_sim":
        # Perfect-simple control: an experiential/past note is faithful; any present reading is extraction.
        if aspect in ("perf_sim", "past") and not currency:
            return Decision("PRESERVED", "perfect/past kept", cues)
        return Decision("EXTRACTED-AS-CURRENT", "perfect simple rewritten as a present fact", cues)

    if form == "bound":
        if aspect in ("past", "perf_sim") and not currency:
            return Decision("PRESERVED", "bounded fact stored as past", cues)
        if not bounded:
            return Decision("BOUND-DROPPED", "the stated end point is gone", cues)
        if currency:
            return Decision("MANUFACTURE", "currency claim added to a bounded fact", cues)
        if aspect == "simple":
            return Decision("COERCED-STATIVE", "bound kept but the progressive became a simple state", cues)
        return Decision("PRESERVED", "progressive and bound kept", cues)

    if form in ("prog", "perf_prog"):
        if currency:
            return Decision("MANUFACTURE", "currency claim added", cues)
        if aspect == "simple":
            return Decision("COERCED-STATIVE", "progressive became a simple state", cues)
        if aspect in ("past", "perf_sim"):
            return Decision("PRESERVED", "stored as past", cues)
        if anchored or bounded:
            return Decision("PRESERVED", "progressive kept with its date", cues)
        return Decision("MANUFACTURE", "undated progressive reads as a durable present", cues)

    if form == "simple":
        if currency:
            return Decision("MANUFACTURE", "currency claim added", cues)
        if aspect in ("simple", "past", "perf_sim"):
            return Decision("PRESERVED", "simple statement kept", cues)
        return Decision("RESIDUAL", "simple statement gained progressive wording", cues)

    return Decision("RESIDUAL", f"unknown source form '{form}'", cues)


# ---------------------------------------------------------------------------------------------
# Validity question (explicit) and send-or-check (anchor)

_NEGATIVE_PARAPHRASE = re.compile(
    r"\b(?:(?:would|should|could)\s*(?:not|n't)\s+(?:assume|rely|count on)|probably not|not safe|unsafe"
    r"|better to check|i'?d check|check (?:first|with you)|wouldn't assume|can't assume|cannot assume)\b",
    re.IGNORECASE,
)
_POSITIVE_PARAPHRASE = re.compile(r"\b(?:should be safe|safe to assume|probably yes|i think so)\b", re.IGNORECASE)


def _validity(response: str) -> Decision:
    text = _plain(response or "").strip()
    first = re.match(r"^\W*(yes|no)\b", text, re.IGNORECASE)
    if first:
        return Decision(first.group(1).upper(), "leading yes/no")
    negative = _NEGATIVE_PARAPHRASE.search(text)
    positive = _POSITIVE_PARAPHRASE.search(text) and not re.search(r"\bnot\b|n't\b", text, re.IGNORECASE)
    if negative and not positive:
        return Decision("NO", "negative paraphrase")
    if positive and not negative:
        return Decision("YES", "positive paraphrase")
    return Decision("UNPARSED", "no yes/no answer")


_ACTION = re.compile(
    r"\b(?:action|decision|choice)\s*(?::|-|–|—)\s*(send|check[\s_-]?first)\b", re.IGNORECASE
)


def _send_or_check(response: str) -> Decision:
    found = {re.sub(r"[\s_-]", "", m.group(1)).upper() for m in _ACTION.finditer(_plain(response or ""))}
    if len(found) == 1:
        value = found.pop()
        return Decision("SEND" if value == "SEND" else "CHECK-FIRST", "one action line")
    if not found:
        return Decision("UNPARSED", "no action line")
    return Decision("UNPARSED", "both actions named")
