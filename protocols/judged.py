"""Judged answers (PROTOCOL.md §12): a benchmark question, its type, the gold answer and one system's
answer (the hypothesis), labelled correct / incorrect by humans who never see the LLM judge's verdict, so
that the judge can be audited against them; and TWIST's decoy calibration (§5.2, Appendix C): plausible
but wrong answers built from each item's own structure, which a sound judge must reject.

An item of this kind is a question, its gold answer and one system's answer, typed by `JudgedContent`
(the item's content); of the columns every item has it uses external_id (the benchmark's question_id,
hidden: LongMemEval ids name the abstention variant) and family, the item's stratum (the question type,
"_abs" appended for abstention).

Pure, like every spec: the judge prompts, the rubrics, the decoy templates and the decoy builder are data
and functions of plain values. The database side (import, audit figures, calibration runs) is the
`judges` app's.
"""

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from protocols.base import (
    COUNCIL_SYSTEM,
    DISCUSS,
    MISSING_ANSWERS,
    AnswerFile,
    Benchmark,
    Citation,
    CouncilPrompt,
    ItemContent,
    Panel,
    ProtocolSpec,
    Question,
    Wording,
    format_kappa,
    one_label_queue_rules,
)

# LongMemEval's six question types (PROTOCOL §12); a benchmark may bring its own (judged with the
# default rubric). Abstention items are those whose question_id ends in "_abs": counted in their type,
# reported separately.
TYPES = (
    "single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
    "knowledge-update", "temporal-reasoning",
)
ABSTENTION_SUFFIX = "_abs"
TYPE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,60}$")  # family holds type + "_abs" in 100 characters
VERDICTS = ("correct", "incorrect")
# A judge label file says yes / no; the humans say correct / incorrect.
JUDGE_LABELS = {"yes": "correct", "no": "incorrect"}

# The judge prompts of LongMemEval's evaluation (src/evaluation/evaluate_qa.py), per type: the instruction
# is the rubric an annotator is shown, word for word, so humans and the judge apply the same standard.
_CONTAINS = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if the "
    "response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct "
    "answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If "
    "the response only contains a subset of the information required by the answer, answer no."
)
RUBRICS = {
    "single-session-user": _CONTAINS,
    "single-session-assistant": _CONTAINS,
    "multi-session": _CONTAINS,
    "temporal-reasoning": _CONTAINS + (
        " In addition, do not penalize off-by-one errors for the number of days. If the question asks for the "
        "number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when "
        "the answer is 18), the model's response is still correct."
    ),
    "knowledge-update": (
        "I will give you a question, a correct answer, and a response from a model. Please answer yes if the "
        "response contains the correct answer. Otherwise, answer no. If the response contains some previous "
        "information along with an updated answer, the response should be considered as correct as long as the "
        "updated answer is the required answer."
    ),
    "single-session-preference": (
        "I will give you a question, a rubric for desired personalized response, and a response from a model. "
        "Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does "
        "not need to reflect all the points in the rubric. The response is correct as long as it recalls and "
        "utilizes the user's personal information correctly."
    ),
}
DEFAULT_RUBRIC = _CONTAINS  # a benchmark's own type
ABSTENTION_RUBRIC = (
    "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes "
    "if the model correctly identifies the question as unanswerable. The model could say that the information "
    "is incomplete, or some other information is given but the asked information is not."
)
# What the gold column is called in the prompt (and on the annotator's page).
GOLD_NAMES = {"single-session-preference": "Rubric"}
ABSTENTION_GOLD_NAME = "Explanation"
JUDGE_PROMPT = "{rubric}\n\nQuestion: {question}\n\n{gold_name}: {answer}\n\nModel Response: {response}\n\n{ask}"
ASK = "Is the model response correct? Answer yes or no only."
ABSTENTION_ASK = "Does the model correctly identify the question as unanswerable? Answer yes or no only."


# When council members label a judged-answer campaign (each member a judge, compared with the human gold
# like Lapse's judge): the type's rubric and the three texts, exactly as an annotator reads them.
COUNCIL_PHASE1 = """{rubric}

Question: {question}

{gold_name}: {answer}

Model Response: {hypothesis}

verdict: "correct" where the instruction above says answer yes, "incorrect" where it says no. Optional "notes".

Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""


class JudgeLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    label: str = Field(description="The benchmark judge's verdict (correct / incorrect).")
    judge_model: str = Field("", description="The model that judged.")


class JudgedHidden(BaseModel):
    """What stays hidden from annotators: the run, the judge's label, the superseded value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question_date: str = Field("", description="The question's date, as the benchmark gives it.")
    run: str = Field("", description="The system / run that answered.")
    previous_answer: str | None = Field(None, description="The superseded value of a history-aware item (for decoys).")
    judge: JudgeLabel | None = Field(None, description="The benchmark judge's label, if the file carried one.")


class SessionTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    role: str = Field(description="Who spoke: user or assistant.")
    content: str = Field(description="What was said.")
    has_answer: bool = Field(False, description="The benchmark marks this turn as holding the answer.")


class EvidenceSession(BaseModel):
    """One dated history session the question's answer rests on (never its session id: LongMemEval's ids
    name the question)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    date: str = Field(description="The session's date, as the benchmark gives it.")
    turns: list[SessionTurn] = Field(default_factory=list, description="The session's turns in order.")


class JudgedQuestion(ItemContent):
    """A benchmark question as several judged answers share it (the items' context, stored once): its text,
    type, date, gold answer and, when the question file has the history, the dated evidence sessions and
    the ids of every session."""

    question_type: str = Field("", description="The benchmark's question type.")
    question: str = Field("", description="The benchmark question.")
    answer: str | int = Field("", description="The gold answer exactly as released (an integer stays one).")
    question_date: str = Field("", description="The question's date, as the benchmark gives it.")
    evidence_sessions: list[EvidenceSession] | None = Field(
        None, description="The dated sessions holding the answer (None: the question file has no history).")
    answer_session_ids: list[str] | None = Field(None, description="The evidence sessions' ids (hidden).")
    haystack_session_ids: list[str] | None = Field(None, description="Every history session's id (hidden).")
    haystack_dates: list[str] | None = Field(None, description="Every history session's date (hidden).")


class JudgedContent(ItemContent):
    """A judged answer (PROTOCOL §12): the question, its gold answer and one system's answer. An answer that
    cites a shared question (`JudgedQuestion`) holds only its own values: the hypothesis and what is hidden."""

    question: str = Field("", description="The benchmark question.")
    answer: str = Field("", description="The gold answer (a rubric for preference questions, an explanation for abstention).")
    hypothesis: str = Field("", description="The system's answer to be judged.")
    hidden: JudgedHidden = Field(default_factory=JudgedHidden, description="Hidden from annotators.")


def split_family(family: str) -> tuple[str, bool]:
    """(question type, abstention) of an item's family column."""
    if family.endswith(ABSTENTION_SUFFIX):
        return family[: -len(ABSTENTION_SUFFIX)], True
    return family, False


def family_of(question_type: str, question_id: str) -> str:
    return question_type + (ABSTENTION_SUFFIX if question_id.endswith(ABSTENTION_SUFFIX) else "")


def rubric_for(question_type: str, abstention: bool) -> str:
    if abstention:
        return ABSTENTION_RUBRIC
    return RUBRICS.get(question_type, DEFAULT_RUBRIC)


def gold_name_for(question_type: str, abstention: bool) -> str:
    return ABSTENTION_GOLD_NAME if abstention else GOLD_NAMES.get(question_type, "Correct Answer")


def judge_prompt(*, question_type: str, abstention: bool, question: str, answer: str, response: str) -> str:
    """The prompt a judge grades one answer with: LongMemEval's, per type."""
    return JUDGE_PROMPT.format(
        rubric=rubric_for(question_type, abstention), question=question,
        gold_name=gold_name_for(question_type, abstention), answer=answer, response=response,
        ask=ABSTENTION_ASK if abstention else ASK,
    )


def judge_verdict(reply: str) -> str:
    """'correct' / 'incorrect' from a judge's yes / no reply ('' when it says neither first)."""
    word = re.match(r"\W*(yes|no)\b", reply.strip().lower())
    return JUDGE_LABELS[word.group(1)] if word else ""


# The per-type rule in a sentence (PROTOCOL §13), shown above the judge's own instruction.
RULES = {
    "temporal-reasoning": "Off-by-one days, weeks or months are not penalised.",
    "knowledge-update": "An answer that also mentions the old value is correct when it gives the updated one.",
    "single-session-preference": "Correct when it recalls and uses the user's information; it need not cover "
                                 "every point of the rubric.",
}
DEFAULT_RULE = "Correct when it contains the gold answer (or every step to it); a part of it is not enough."
ABSTENTION_RULE = "Correct only when it says the question cannot be answered from the history."


def rule_for(question_type: str, abstention: bool) -> str:
    return ABSTENTION_RULE if abstention else RULES.get(question_type, DEFAULT_RULE)


def derived_view(view: dict) -> dict:
    """What the annotator's page adds to the blind fields, computed from them alone: the type, whether the
    item is an abstention item, the per-type rule and the rubric exactly as the judge gets it."""
    question_type, abstention = split_family(view.get("family", ""))
    return {
        "question_type": question_type,
        "abstention": abstention,
        "rule": rule_for(question_type, abstention),
        "rubric": rubric_for(question_type, abstention),
        "gold_name": gold_name_for(question_type, abstention),
    }


# ---------------------------------------------------------------------------------------------------
# Decoys (TWIST Appendix C). The templates are data; a change to any of them is a new version, and the
# version is recorded on every decoy made with them.

DECOY_VERSION = "judged-decoys/1"
STALE, PERTURBED, NON_ANSWER, UNORDERED = "stale_as_current", "perturbed_detail", "fluent_non_answer", "unordered_both_states"
DECOY_CLASSES = (STALE, PERTURBED, NON_ANSWER, UNORDERED)
GOLD = "gold"
# TWIST: "a judge is admissible only if every class clears the >= 95% bar". The bar applies to the point
# rejection rate of each class, as TWIST words it; the Wilson interval is reported beside it so a reader
# sees how far a small class is from the bar. A class with no decoys has not cleared it.
ADMISSIBLE_RATE = 0.95
TEMPLATES = {
    # The gold answer and the perturbed one share a frame: only the content tells them apart.
    GOLD: "From what you've told me, the answer is {answer}.",
    PERTURBED: "From what you've told me, the answer is {answer}.",
    STALE: "Going by our latest conversations, it's {previous}.",
    NON_ANSWER: (
        "That's a good question: {restated}? It depends on a few things you've mentioned at different times, "
        "so I'd rather not commit to one answer without checking."
    ),
    UNORDERED: "You've mentioned both {previous} and {answer}.",
}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DIRECTIONS = {
    "increase": "decrease", "increased": "decreased", "more": "fewer", "up": "down", "earlier": "later",
    "before": "after", "north": "south", "east": "west", "left": "right", "higher": "lower", "longer": "shorter",
}
_DIRECTIONS.update({v: k for k, v in list(_DIRECTIONS.items())})
# Stand-ins for a named entity or place: plausible, and unlikely to be the gold itself.
_ENTITIES = ("Riverside", "Marlow", "Ashford", "Kestrel", "Brennan", "Oakhill")
_SKIP_ENTITY = {"I", "The", "A", "An", "My", "It", "In", "On", "At", *_MONTHS, *_WEEKDAYS}


@dataclass(frozen=True)
class DecoySource:
    """What a decoy is built from: one item's own parts."""

    question_id: str
    question_type: str
    abstention: bool
    question: str
    answer: str
    previous_answer: str = ""  # the superseded value; "" : not a history-aware item


@dataclass(frozen=True)
class Decoy:
    """One response of the calibration set: a decoy of one class, or the gold answer (`cls` "gold")."""

    source: str  # the question_id it was built from
    cls: str
    response: str
    slot: str = ""  # perturbed detail: which slot was changed (date, number, direction, entity)
    version: str = DECOY_VERSION


def perturb_detail(answer: str) -> tuple[str, str]:
    """(answer with one critical slot changed, the slot) or ('', '') when it has none. Dates first, then
    numbers (moved by more than one: temporal rubrics forgive off-by-one day counts), directions, entities.
    Public: the decoys built from Track C chains (protocols/twist_c/decoys.py) change a slot the same way."""
    for n, month in enumerate(_MONTHS):
        if re.search(rf"\b{month}\b", answer):
            return re.sub(rf"\b{month}\b", _MONTHS[(n + 4) % 12], answer, count=1), "date"
    for n, day in enumerate(_WEEKDAYS):
        if re.search(rf"\b{day}\b", answer):
            return re.sub(rf"\b{day}\b", _WEEKDAYS[(n + 3) % 7], answer, count=1), "date"
    number = re.search(r"\d+", answer)
    if number:
        value = int(number.group(0))
        return answer[: number.start()] + str(value + max(3, value // 2)) + answer[number.end():], "number"
    for word, opposite in _DIRECTIONS.items():
        found = re.search(rf"\b{word}\b", answer, flags=re.IGNORECASE)
        if found:
            return answer[: found.start()] + opposite + answer[found.end():], "direction"
    for found in re.finditer(r"\b[A-Z][a-z]+\b", answer):
        if found.group(0) not in _SKIP_ENTITY:
            stand_in = next(e for e in _ENTITIES if e != found.group(0))
            return answer[: found.start()] + stand_in + answer[found.end():], "entity"
    return "", ""


def restated_question(question: str) -> str:
    """The question as the clause a fluent non-answer restates ("I'd need more context on what …")."""
    text = question.strip().rstrip("?").strip()
    return text[:1].lower() + text[1:] if text else "what you asked"


def decoy_eligible(source: DecoySource) -> bool:
    """Decoys are built for free-text answers: not for abstention items (the gold is an explanation) nor
    preference items (the gold is a rubric, not an answer)."""
    return not source.abstention and source.question_type != "single-session-preference" and bool(source.answer.strip())


def decoys_for(source: DecoySource) -> tuple[list[Decoy], list[str]]:
    """The gold answer and one decoy per class that the item's structure allows, and the classes it could
    not give (with why). Stale-as-current and unordered both-states need the superseded value (history-aware
    items); perturbed detail needs a slot to change."""
    answer = source.answer.strip().rstrip(".")
    made = [Decoy(source.question_id, GOLD, TEMPLATES[GOLD].format(answer=answer))]
    missing = []
    previous = source.previous_answer.strip().rstrip(".")
    if previous:
        made.append(Decoy(source.question_id, STALE, TEMPLATES[STALE].format(previous=previous)))
    else:
        missing.append(f"{STALE}: no superseded value")
    perturbed, slot = perturb_detail(answer)
    if perturbed:
        made.append(Decoy(source.question_id, PERTURBED, TEMPLATES[PERTURBED].format(answer=perturbed), slot=slot))
    else:
        missing.append(f"{PERTURBED}: no date, number, direction or entity to change")
    made.append(Decoy(source.question_id, NON_ANSWER, TEMPLATES[NON_ANSWER].format(restated=restated_question(source.question))))
    if previous:
        made.append(Decoy(source.question_id, UNORDERED, TEMPLATES[UNORDERED].format(previous=previous, answer=answer)))
    else:
        missing.append(f"{UNORDERED}: not a history-aware item")
    return made, missing


def calibration_set(sources: Sequence[DecoySource], *, seed: int) -> tuple[list[dict], dict[str, list[str]]]:
    """The mixed calibration set: every eligible item's gold answer and decoys in one seeded random order,
    each given an id from its position ("c0001"…) so nothing in an id tells its provenance. Returns the
    records (id, source, question_type, abstention, question, answer, response, class, slot, version) and,
    per question_id, the classes it could not give."""
    pool, missing = [], {}
    by_id = {s.question_id: s for s in sources}
    for source in sorted(sources, key=lambda s: s.question_id):
        if not decoy_eligible(source):
            continue
        made, lacking = decoys_for(source)
        pool.extend(made)
        if lacking:
            missing[source.question_id] = lacking
    random.Random(seed).shuffle(pool)
    records = []
    for n, decoy in enumerate(pool, start=1):
        source = by_id[decoy.source]
        records.append({
            "id": f"c{n:04d}", "source": decoy.source, "question_type": source.question_type,
            "abstention": source.abstention, "question": source.question, "answer": source.answer,
            "response": decoy.response, "class": decoy.cls, "slot": decoy.slot, "version": decoy.version,
        })
    return records, missing


def calibration_prompt(record: dict) -> str:
    """The prompt for one record of the set: the type's judge prompt, nothing of its provenance."""
    return judge_prompt(
        question_type=record["question_type"], abstention=record["abstention"], question=record["question"],
        answer=record["answer"], response=record["response"],
    )


# ---------------------------------------------------------------------------------------------------
# The queue and the agreement figures.

VERDICT_DISAGREEMENT = "verdict_disagreement"
GOLD_FLAGGED = "gold_flagged"
REASONS = {
    VERDICT_DISAGREEMENT: "the two verdicts differ",
    MISSING_ANSWERS: "an annotator's verdict is missing",
    GOLD_FLAGGED: "an annotator flagged the question's gold answer as wrong",
}

# "The gold answer is wrong": an annotator's own flag beside the verdict, with the note that says why. It is
# part of their answer (saved, reloaded and guarded like the verdict, never shown to anyone else annotating)
# and queues the item; an accepted flag becomes a fix-reference erratum of the frozen key.
GOLD_WRONG, GOLD_WRONG_NOTE = "gold_wrong", "gold_wrong_note"
FLAGGED = "yes"


def gold_flagged(values: dict | None) -> bool:
    return (values or {}).get(GOLD_WRONG) == FLAGGED


def answer_rules(values: dict) -> list[str]:
    """A flag needs its note: an adjudicator must be able to tell what the annotator found wrong."""
    if gold_flagged(values) and not str(values.get(GOLD_WRONG_NOTE, "")).strip():
        return [f"field '{GOLD_WRONG_NOTE}': say why the gold answer is wrong (a flag needs a note)"]
    return []


# Verdicts differ, or one is missing. The judge's label never queues an item: the humans validate it.
_verdict_rules = one_label_queue_rules("verdict", VERDICT_DISAGREEMENT)


def queue_rules(spec, gold: str, answers: Sequence[dict | None], council_votes: Sequence[dict] | None = None) -> list[str]:
    """The verdict rules, and a flag on the gold answer: its own reason, so the adjudicator reads the flags
    on every answer to the question before the key is finalized."""
    reasons = _verdict_rules(spec, gold, answers, council_votes)
    if any(gold_flagged(a) for a in answers):
        reasons.append(GOLD_FLAGGED)
    return reasons


def suggest(spec: ProtocolSpec, gold: str, answers: list[dict], reasons: Sequence[str]) -> tuple[str, str]:
    # The gold is the agreed verdict, else the adjudicated one: a queued item always needs its verdict set.
    if GOLD_FLAGGED in reasons:
        return DISCUSS, ("set the verdict against the released gold; if the flags on this question hold, file a "
                         "fix-reference erratum with the corrected gold once the key is frozen")
    return DISCUSS, "set the adjudicated verdict"


def agreement_summary(r: dict) -> list[str]:
    lines = [f"  human–human verdict: {format_kappa(r['five_way'])}"]
    if r.get("detectors_sealed"):
        lines.append(f"  judges vs gold: sealed until every disagreement is decided ({r['gold']['undecided']} undecided)")
    for name, j in (r.get("judge_gold_by_judge") or {}).items():
        lines.append(f"  council judge {name} vs gold: {format_kappa(j['five_way'])}")
    return lines


def forest_rows(agreement: dict) -> list[tuple[str, dict]]:
    council = [(f"{name}–gold verdict", j["five_way"]) for name, j in (agreement.get("judge_gold_by_judge") or {}).items()]
    return [("human–human verdict", agreement["five_way"]), *council]


SPEC = ProtocolSpec(
    name="judged",
    label="Judged answers (judge audit)",
    item_kind="judged",
    item_kind_label="Judged answer",
    benchmark=Benchmark(
        "longmemeval", "LongMemEval", "judge-audit", "Judge audit",
        license="mit",
        homepage="https://github.com/xiaowu0162/LongMemEval",
        task_categories=("question-answering",),
        tags=("conversational-memory", "llm-as-a-judge", "human-validated", "evaluation"),
        citation=Citation(
            title="LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory",
            authors=("Di Wu", "Hongwei Wang", "Wenhao Yu", "Yuwei Zhang", "Kai-Wei Chang", "Dong Yu"),
            year=2025,
            url="https://arxiv.org/abs/2410.10813",
            kind="conference-paper",
        ),
    ),
    importer="judges.services.items_import_judged",
    upload_label="Judged answers (JSONL: question_id, question_type, question, answer, hypothesis[, label, judge_model])",
    version="judged-answers/1",
    content=JudgedContent,
    context=JudgedQuestion,
    blind_fields=("question", "answer", "question_date", "hypothesis", "evidence_sessions", "family"),
    hidden_fields=("external_id", "hidden", "answer_session_ids", "haystack_session_ids"),
    derived_view=derived_view,
    questions=(
        Question("verdict", 1, VERDICTS, label="Is the system's answer correct?"),
        Question(GOLD_WRONG, 1, ("yes", "no"), label="Is the gold answer itself wrong?", column="gold answer wrong",
                 optional=True),
        Question(GOLD_WRONG_NOTE, 1, None, label="Why the gold answer is wrong", column="why the gold is wrong",
                 optional=True),
        Question("notes", 1, None, label="Notes", note=True),
    ),
    primary_key="verdict",
    agreement_keys=("verdict", GOLD_WRONG),  # the flag queues an item
    gold_values=VERDICTS,
    gold_from_answers=True,
    binary={v: v for v in VERDICTS},
    binary_label="correct vs incorrect",
    answer_file=AnswerFile(
        layout="records", stem="verdicts", suffix=".jsonl", id_field="question_id",
        fields=("verdict", "notes", GOLD_WRONG, GOLD_WRONG_NOTE),
        required=("verdict",),
    ),
    conventions=(
        "Grade the system's answer against the gold answer by the rubric shown with the item, as written: where the "
        "rubric says answer yes, the answer is correct; where it says no, incorrect.",
        "A hedge that commits to nothing is incorrect, except on an unanswerable question, where declining is what "
        "is asked.",
        "Grade the answer's content, not its tone or fluency.",
        "If the gold answer itself is wrong, still grade against it, and flag it: answer \"Is the gold answer "
        "itself wrong?\" with yes and say why in its note (g). The adjudicator reads every flag on the question.",
    ),
    item_template="annotation/item_judged.html",
    agreement_figures="labels",
    # A key record's "id" is what the canonical key sorts and hashes by: here the benchmark's question_id.
    # "reference": the gold answer the verdict was given against, frozen into the entry (a fix-reference
    # erratum's derived version carries the corrected one).
    key_fields=(("id", "external_id"), ("verdict", "gold"), ("provenance", "provenance"), ("reference", "content.answer")),
    candidate_fields=(
        ("id", "external_id"),
        ("question_type", "family"),
        ("question", "question"),
        ("answer", "answer"),
        ("hypothesis", "hypothesis"),
        ("hidden", "hidden"),
    ),
    reasons=REASONS,
    queue_rules=queue_rules,
    suggest=suggest,
    answer_rules=answer_rules,
    # An accepted "the gold answer is wrong" flag: a fix-reference erratum corrects the question's answer.
    reference_field="answer",
    rejudge_suggestions="judges.services.rejudge_suggestions",
    adjudication_panels=(Panel("judges.selectors.gold_flags", "judges/_gold_flags.html"),),
    agreement_panels=(Panel("judges.selectors.judge_audit", "judges/_judge_audit.html"),),
    manifest_sections=(("sample_design", "judges.selectors.sample_design"),
                       ("judge_audit", "judges.selectors.judged_sample_audit")),
    agreement_summary=agreement_summary,
    forest_rows=forest_rows,
    agreement_template="adjudication/_agreement_judged.html",
    agreement_main="five_way",
    adjudication_template="adjudication/_item_judged.html",
    wording=Wording(
        relabel="set verdict", relabel_prompt="adjudicated verdict…", council="Judge labels",
        confusion_caption=" (verdicts)",
    ),
    council_prompt=CouncilPrompt(name="judged-v1", system=COUNCIL_SYSTEM, phase1=COUNCIL_PHASE1),
    # The human verdicts validate the judge: whoever decides one must not see what the judge said.
    detectors_sealed_until_decided=True,
)
