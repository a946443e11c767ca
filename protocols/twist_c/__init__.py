"""TWIST Track C, belief supersession (PROTOCOL.md §14; TWIST §3.4, §4.3, §5.2, Appendices B–C; the
authors' SCENARIOS.md "Track C"). An item is one query over one update chain: the chain's steps each cite a
turn of a conversation *version* (the original with injected turns; the original is never edited), the
query kind follows from the family, and the gold answer is the latest value (current-state), every state in
order (history-aware) or both facts (HN-C1 coexistence).

No one has released Track C items: the import shape, the blind view, the questions, the deterministic
self-containment check and the coexistence-retention metric are Goldkey's own design on top of the
authors' specification (docs/twist_c.md says which part is whose).

Pure, like every protocol module: pydantic and the standard library, no app. Gates return reject reasons;
the importer (`chains.importer`) prefixes FILE:LINE to the line validator's field errors and writes the
reasons into the release's rejects; the verification-as-seen gate runs through the council's client
(`chains.gates`); decoy calibration `chains.decoys`, a run's scores `chains.scores`: all in
the protocol's wing app `chains/`. Each is named here by dotted path, so no app branches on this protocol.

This module holds the spec: the blind view, the questions, the queue rules and the key entry; `chain`
holds the item schema and its gates, `decoys` the judge decoys built from chains, `metrics` a run's
scores.
"""

import re
from collections.abc import Mapping, Sequence

from protocols.base import (
    COUNCIL_MAJORITY_AGAINST,
    COUNCIL_SYSTEM,
    DISCUSS,
    DROP,
    MAJORITY_AGAINST,
    MISSING_ANSWERS,
    AnswerFile,
    Benchmark,
    CouncilPrompt,
    ProtocolSpec,
    Question,
    Wording,
    format_kappa,
    one_label_queue_rules,
)
from protocols.twist_b import SPEC as TWIST_B
from protocols.twist_c.chain import (
    CANNOT_TELL,
    COEXISTENCE,
    FAMILIES,
    RELATIONS,
    STEP_ROLE,
    SUPERSESSION,
    ChainContent,
    ChainItem,
    Step,
    Turn,
)

# --- the blind view and the questions -------------------------------------------------------------------
_TURN_ID = re.compile(r"^D(\d+):(\d+)$")


def _record_key(step: Step) -> tuple:
    match = _TURN_ID.match(step.turn_id)
    return (int(match.group(1)), int(match.group(2))) if match else (10**9, 0)


def blind_view(item: ChainItem, turns: Mapping[str, Turn] | None = None) -> dict:
    """What an annotator (and the council) sees: the cited turns in record order (turn id, date, speaker,
    verbatim text), the question and the proposed answer. Built from a whitelist: never the family, the
    query kind, the step values or the superseded values as labelled fields, nor the item id. Record order is
    the conversation version's (`turns`) where given, else read from LoCoMo-shaped turn ids ("D3:5")."""
    if turns is not None:
        cited = sorted(item.steps, key=lambda s: turns[s.turn_id].order if s.turn_id in turns else (10**9, 0))
    else:
        cited = sorted(item.steps, key=_record_key)
    return {
        "turns": [{"turn_id": s.turn_id, "date": s.date, "speaker": s.speaker, "text": s.text} for s in cited],
        "question": item.question,
        "proposed_answer": item.gold,
    }


# One phase: the proposed answer is part of what is validated (is it right for the question?), so there is
# no verdict to give blind to it, unlike Track B's q1.
QUESTIONS = (
    Question("q1", 1, (SUPERSESSION, COEXISTENCE, CANNOT_TELL),
             label="Do these turns show one belief replacing another, or are both still true?", column="Relation (q1)"),
    Question("q2", 1, ("yes", "no"),
             label="Is the proposed answer right for the question, as the turns stand?", column="Answer right (q2)"),
    Question("q3", 1, ("yes", "no"),
             label="Does each turn state its belief by itself, without the others?", column="Self-contained (q3)"),
    Question("q1note", 1, None, label="Note", note=True),
)
CONVENTIONS = (
    "Supersession: a later turn replaces an earlier belief. Coexistence: the turns look conflicting but both "
    "stay true (painting and pottery).",
    "An acknowledged revision (\"I know I said never, but…\") counts as a supersession here (in Track A it is a "
    "hard negative, not a contradiction).",
    "A question about the current state is answered by the latest belief; a question about change names every "
    "state in order; where both facts stay true, the answer names both.",
    "Read each turn on its own for q3: would it carry its belief if it were the only turn retrieved?",
    "The turns are the latest known record: do not imagine later changes.",
)

Q1_DISAGREEMENT = "q1_disagreement"
Q1_AGREED_AGAINST_GOLD = "q1_agreed_against_gold"
Q2_ANSWER_WRONG = "q2_answer_wrong"
Q3_NOT_SELF_CONTAINED = "q3_not_self_contained"
REASONS = {
    Q1_DISAGREEMENT: "the two q1 relations differ",
    Q1_AGREED_AGAINST_GOLD: "both annotators agree on a relation that differs from the chain's",
    Q2_ANSWER_WRONG: "an annotator says the proposed answer is wrong for its question (q2 = no)",
    Q3_NOT_SELF_CONTAINED: "an annotator says a turn does not state its belief by itself (q3 = no)",
    MISSING_ANSWERS: "an annotator's relation is missing (left out of kappa)",
    COUNCIL_MAJORITY_AGAINST: "more than half of the council members actively vote against the chain's relation",
}


# The relation question is one label per annotator: differing or missing relations queue the item as they do
# for any one-label protocol; Track C adds the Track B rules on top.
_relation_rules = one_label_queue_rules("q1", Q1_DISAGREEMENT)


def queue_rules(spec: ProtocolSpec, gold: str, answers: Sequence[dict | None],
                council_votes: Sequence[dict] | None = None) -> list[str]:
    """TWIST's queue rules (PROTOCOL §3, as Track B applies them) over the Track C questions; `gold` is the
    chain's relation (supersession / coexistence). Reasons come in REASONS' order."""
    answers = [a or {} for a in answers]
    found = set(_relation_rules(spec, gold, answers))
    relations = {a.get("q1") for a in answers}
    if not found and relations != {gold}:
        found.add(Q1_AGREED_AGAINST_GOLD)
    if any(a.get("q2") == "no" for a in answers):
        found.add(Q2_ANSWER_WRONG)
    if any(a.get("q3") == "no" for a in answers):
        found.add(Q3_NOT_SELF_CONTAINED)
    if council_votes and spec.council_band(gold, council_votes) == MAJORITY_AGAINST:
        found.add(COUNCIL_MAJORITY_AGAINST)
    return [reason for reason in REASONS if reason in found]


def suggest(spec: ProtocolSpec, gold: str, answers: list[dict], reasons: Sequence[str]) -> tuple[str, str]:
    """Both say a turn is not self-contained → drop; both agree against the chain's relation → drop;
    both say the answer is wrong → drop; otherwise discuss."""
    both = len(answers) >= 2
    if both and all(a.get("q3") == "no" for a in answers):
        return DROP, "both annotators say a turn does not state its belief by itself"
    if Q1_AGREED_AGAINST_GOLD in reasons:
        return DROP, "both annotators agree against the chain's relation"
    if both and all(a.get("q2") == "no" for a in answers):
        return DROP, "both annotators say the proposed answer is wrong"
    return DISCUSS, "no drop rule applies: weigh the answers and notes"


def key_entry(item: ChainItem) -> dict:
    """What a frozen key's entry carries for one item: the chain, the gold and the superseded values."""
    return {
        "id": item.id, "family": item.family, "query_kind": item.query_kind,
        "conversation_version": item.conversation_version, "question": item.question, "gold": item.gold,
        "chain": [{"turn_id": s.turn_id, "date": s.date, "value": s.value} for s in item.steps],
        "superseded": list(item.superseded),
    }


def agreement_summary(r: dict) -> list[str]:
    """What `manage.py agreement` prints for a Track C campaign: q1 (the relation) over every item, then per
    family."""
    lines = [f"  q1 relation, all items: {format_kappa(r['q1'])} ({r['q1']['left_out']} left out: missing q1)"]
    for family, s in r["strata"]["family"].items():
        lines.append(f"    {family}: {format_kappa(s)}")
    return lines


def forest_rows(agreement: dict) -> list[tuple[str, dict]]:
    """The agreement page's kappa forest: q1 over every item, then per family (with its catalog name)."""
    rows = [("all items", agreement["q1"])]
    rows += [(f"{name} ({FAMILIES.get(name, name)})", s) for name, s in agreement["strata"]["family"].items()]
    return rows


COUNCIL_PHASE1 = """You see the dated turns of a conversation record that a memory system would retrieve, a question
and a proposed answer.

Turns:
{excerpts}

Question: {question}
Proposed answer: {answer}

q1: Do the turns show one belief replacing another ("supersession") or are both still true ("coexistence")?
An acknowledged revision counts as a supersession. "cannot-tell" if the turns do not say.
q2: Is the proposed answer right for the question as the turns stand? "yes"/"no".
q3: Does each turn state its belief by itself? "yes"/"no". Optional "q1note".

Reply with ONLY a JSON object of this shape (lists give the allowed values):
{schema_marker} {schema}"""

SPEC = ProtocolSpec(
    name="twist_c",
    label="TWIST Track C (belief supersession)",
    item_kind="twist_c",
    item_kind_label="TWIST Track C chain query",
    benchmark=Benchmark(
        "twist", "TWIST", "track-c", "Track C (belief supersession)",
        license=TWIST_B.benchmark.license,
        homepage=TWIST_B.benchmark.homepage,
        task_categories=("question-answering",),
        tags=("conversational-memory", "belief-update", "human-validated", "evaluation"),
        source_datasets=("original", "extended|locomo"),
        citation=TWIST_B.benchmark.citation,  # one paper proposes every track
    ),
    importer="chains.importer.items_import_twist_c",
    upload_label="TWIST Track C chain queries (JSONL, Goldkey's shape)",
    version="twist-c/1",
    content=ChainContent,
    # The question and the proposed answer; the turns come as excerpts (the step citations, in record order).
    # Never the family, the step values or the superseded values, nor the id.
    blind_fields=("question", "answer"),
    hidden_fields=("external_id", "gold_label", "family", "step_values", "superseded"),
    shows_excerpts=True,
    excerpt_role=STEP_ROLE,
    excerpts_in_record_order=True,
    questions=QUESTIONS,
    primary_key="q1",
    abstain=CANNOT_TELL,
    agreement_keys=("q1", "q2", "q3"),
    gold_values=RELATIONS,
    answer_file=AnswerFile(layout="document", stem="answers", suffix=".json"),
    conventions=CONVENTIONS,
    item_template="annotation/item_twist_c.html",
    reasons=REASONS,
    queue_rules=queue_rules,
    suggest=suggest,
    agreement_figures="gold_verdict",
    agreement_summary=agreement_summary,
    forest_rows=forest_rows,
    agreement_template="adjudication/_agreement_twist_c.html",
    agreement_main="q1",
    adjudication_template="adjudication/_item_twist_c.html",
    # A frozen key's entry: the relation, the family, the chain (its step turns, in chain order), the
    # belief value each step states, the gold answer (the entry's quote) and the superseded values in order
    # (both frozen from the item's content into the entry, under the key's hash).
    key_fields=(
        ("id", "external_id"),
        ("relation", "gold"),
        ("family", "family"),
        ("chain", "evidence"),
        ("chain_values", "content.step_values"),
        ("gold", "quote"),
        ("superseded", "content.superseded"),
        ("provenance", "provenance"),
    ),
    quoted_gold=RELATIONS,
    quote_field="answer",
    candidate_fields=(
        ("id", "external_id"),
        ("conversation_version", "conversation__external_id"),
        ("conversation", "conversation__version_of__external_id"),
        ("family", "family"),
        ("relation", "gold_label"),
        ("question", "question"),
        ("gold", "answer"),
        ("chain", "evidence"),
        ("step_values", "step_values"),
        ("superseded", "superseded"),
    ),
    wording=Wording(forest_caption=" overall and per family", confusion_caption=" (q1, all items)"),
    council_prompt=CouncilPrompt(name="twist-c-v1", system=COUNCIL_SYSTEM, phase1=COUNCIL_PHASE1),
    # Track B's generation gates (recipient, quote, evidence ids) do not apply: a chain's deterministic gates
    # run at import, and its verification-as-seen gate is the one the gates page runs on its sets.
    generation_gates=False,
    set_gates="chains.gates.chain_verification_run",
    decoy_set="chains.decoys.chain_calibration_set",
    score_page="chains:scores",
)
