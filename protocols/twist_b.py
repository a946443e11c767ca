"""TWIST Track B, two-phase (PROTOCOL.md §2): Phase 1 asks for the verdict blind to gold; Phase 2,
opened only after Phase 1 is locked, asks gold-dependent questions (is the contradicted claim stated,
is the quote right; or does any recipient turn conflict with an aligned draft). The queue reasons and
suggestions are PROTOCOL §3's, plus the council's §4 band."""

from collections.abc import Sequence

from pydantic import Field

from protocols.base import (
    COUNCIL_MAJORITY_AGAINST,
    COUNCIL_SYSTEM,
    DISCUSS,
    DROP,
    MAJORITY_AGAINST,
    MISSING_ANSWERS,
    AnswerFile,
    Benchmark,
    Citation,
    CouncilFlag,
    CouncilPrompt,
    ItemContent,
    LeakageAudit,
    Panel,
    ProtocolSpec,
    Question,
    Wording,
    format_kappa,
)


class TwistContent(ItemContent):
    """A TWIST Track B draft (PROTOCOL §2). Its gold type is the item's gold label and its family the
    item's stratum; its cited turns are its evidence."""

    recipient: str = Field("", max_length=100, description="The speaker the draft is written to (one of the conversation's two speakers).")
    draft: str = Field("", description="The generated message an assistant might send the recipient.")
    contradicted_quote: str = Field("", description="The recipient's own words the draft contradicts (contradicting drafts; '' otherwise).")
    rationale: str = Field("", description="The generator's rationale (hidden from annotators).")
    history_turns: int | None = Field(None, ge=0, description="How many turns of the conversation precede the draft.")


CONTRADICTING, ALIGNED, HARD_NEGATIVE = "contradicting", "aligned", "hard_negative"
GOLD_TYPES = (CONTRADICTING, ALIGNED, HARD_NEGATIVE)
CONTRADICTS, CONSISTENT, CANNOT_TELL = "contradicts", "consistent", "cannot-tell"
Q1 = (CONTRADICTS, CONSISTENT, CANNOT_TELL)
GOLD_VERDICT = {CONTRADICTING: CONTRADICTS, ALIGNED: CONSISTENT, HARD_NEGATIVE: CONSISTENT}

QUESTIONS = (
    Question("q1", 1, Q1, label="Would SENDING the draft contradict what the recipient said?", column="Verdict (q1)"),
    Question("q1note", 1, None, label="Note", note=True),
    Question("q2", 2, ("yes", "no"), (CONTRADICTING,),
             label="Is the contradicted claim explicitly stated in the excerpts, in the recipient's own words?",
             column="Claim stated (q2)", shows=("quote",)),
    Question("q2quote", 2, ("yes", "no"), (CONTRADICTING,),
             label="Is the quoted text (shown above) the right words?", column="Quote right (q2quote)"),
    Question("q3", 2, ("clean", "conflict"), (ALIGNED, HARD_NEGATIVE),
             label="Does ANY turn the recipient said anywhere in the conversation contradict the draft?",
             column="Any conflict (q3)", shows=("recipient_turns",)),
    Question("q3turn", 2, None, (ALIGNED, HARD_NEGATIVE), label="Conflicting turn"),
    Question("p2note", 2, None, label="Phase 2 note", note=True),
)

# Queue reasons (PROTOCOL §3), in the order they are listed there.
Q1_DISAGREEMENT = "q1_disagreement"
Q1_AGREED_AGAINST_GOLD = "q1_agreed_against_gold"
Q2_NOT_SELF_CONTAINED = "q2_not_self_contained"
Q2_QUOTE_WRONG = "q2_quote_wrong"
Q3_UNCITED_CONFLICT = "q3_uncited_conflict"
REASONS = {
    Q1_DISAGREEMENT: "the two q1 verdicts differ",
    Q1_AGREED_AGAINST_GOLD: "both annotators agree on a q1 verdict that differs from the gold verdict",
    Q2_NOT_SELF_CONTAINED: "an annotator says the contradicted claim is not stated in the excerpts (q2 = no)",
    Q2_QUOTE_WRONG: "an annotator says the quoted words are not the right ones (q2quote = no)",
    Q3_UNCITED_CONFLICT: "an annotator found a conflicting turn outside the cited excerpts (q3 = conflict)",
    MISSING_ANSWERS: "an annotator's verdict is missing (left out of kappa)",
    COUNCIL_MAJORITY_AGAINST: "more than half of the council members actively vote against the gold verdict",
}


# The council's prompt (PROTOCOL §4): the same blind view and questions.
TWIST_SYSTEM = COUNCIL_SYSTEM

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

COUNCIL_PROMPT = CouncilPrompt(
    name="twist-b-v1",
    system=TWIST_SYSTEM,
    phase1=TWIST_PHASE1,
    phase2=TWIST_PHASE2,
    phase2_questions={"q2": TWIST_Q2_TEXT, "q3": TWIST_Q3_TEXT},
    quote_block='\nQuoted text: "{quote}"\n',
    index_block="\nEvery turn {recipient} said in the conversation:\n{index}\n",
)


def _phase2_complete(values: dict) -> bool:
    # "conflict" must name the turn it found.
    return not (values.get("q3") == "conflict" and not values.get("q3turn"))


def queue_rules(spec: ProtocolSpec, gold_type: str, answers: Sequence[dict | None],
                council_votes: Sequence[dict] | None = None) -> list[str]:
    """PROTOCOL §3 reasons, plus `council_majority_against` when the §4 band says so."""
    verdict = GOLD_VERDICT.get(gold_type, "")
    # Runs once per item (100,000 times for a large campaign): the common case, two answers agreeing
    # with gold and raising no flag, returns before building anything (a test checks it agrees).
    if len(answers) == 2 and answers[0] and answers[1] and not council_votes:
        a, b = answers
        q1 = a.get("q1")
        if q1 and q1 == b.get("q1") == verdict:
            if gold_type == CONTRADICTING:
                if "no" not in (a.get("q2"), b.get("q2"), a.get("q2quote"), b.get("q2quote")):
                    return []
            elif a.get("q3") != "conflict" and b.get("q3") != "conflict":
                return []
    return _reasons(spec, gold_type, [a or {} for a in answers], council_votes)


def _reasons(spec: ProtocolSpec, gold_type: str, answers: list[dict], council_votes) -> list[str]:
    verdicts = [a.get("q1") for a in answers]
    present = [v for v in verdicts if v]
    reasons = []
    if len(set(present)) > 1:
        reasons.append(Q1_DISAGREEMENT)
    elif len(present) == len(verdicts) and len(present) >= 2 and present[0] != GOLD_VERDICT.get(gold_type):
        reasons.append(Q1_AGREED_AGAINST_GOLD)
    if gold_type == CONTRADICTING:
        if any(a.get("q2") == "no" for a in answers):
            reasons.append(Q2_NOT_SELF_CONTAINED)
        if any(a.get("q2quote") == "no" for a in answers):
            reasons.append(Q2_QUOTE_WRONG)
    elif any(a.get("q3") == "conflict" for a in answers):
        reasons.append(Q3_UNCITED_CONFLICT)
    if len(present) < 2 or len(present) < len(verdicts):
        reasons.append(MISSING_ANSWERS)
    if council_votes and spec.council_band(gold_type, council_votes) == MAJORITY_AGAINST:
        reasons.append(COUNCIL_MAJORITY_AGAINST)
    return reasons


def suggest(spec: ProtocolSpec, gold_type: str, answers: list[dict], reasons: Sequence[str]) -> tuple[str, str]:
    """PROTOCOL §3's helpful suggestions: both say not self-contained → drop; both agreed against gold →
    drop; both found the same conflicting turn → drop; otherwise discuss."""
    both = len(answers) >= 2
    if both and gold_type == CONTRADICTING and all(a.get("q2") == "no" for a in answers):
        return DROP, "both annotators say the contradicted claim is not self-contained"
    if Q1_AGREED_AGAINST_GOLD in reasons:
        return DROP, "both annotators agree against the gold verdict"
    turns = [a.get("q3turn", "").strip() for a in answers]
    if both and all(a.get("q3") == "conflict" for a in answers) and turns[0] and len(set(turns)) == 1:
        return DROP, f"both annotators found the same conflicting turn ({turns[0]})"
    return DISCUSS, "no drop rule applies: weigh the answers and notes"


def agreement_summary(r: dict) -> list[str]:
    """What `manage.py agreement` prints for a TWIST campaign's figures."""
    lines = [f"  q1 all items: {format_kappa(r['q1'])} ({r['q1']['left_out']} left out: missing q1)"]
    for gold_type, s in r["q1"]["by_gold_type"].items():
        lines.append(f"    {gold_type}: {s['agree']}/{s['n']} agree")
    lines.append(
        f"  q2 (contradicting): {r['q2']['agree']}/{r['q2']['n']} agree; both not self-contained: "
        f"{r['not_self_contained']['n']}"
    )
    ret = r["retained"]
    if ret["complete"]:
        verdict = "passes" if ret["passes"] else "FAILS"
        lines.append(f"  retained {ret['n']} {ret['by_type']}, dropped {ret['dropped']['n']} {ret['dropped']['by_type']}")
        lines.append(f"  retained-set kappa {ret['kappa']:.3f}: {verdict} the bar {ret['bar']}")
    else:
        lines.append(f"  retained set: {ret['undecided']} queued item(s) still undecided")
    return lines


def forest_rows(agreement: dict) -> list[tuple[str, dict]]:
    """(label, figures) rows of the agreement page's kappa forest."""
    rows = [("all items", agreement["q1"])]
    rows += [(f"gold: {t}", s) for t, s in agreement["q1"]["by_gold_type"].items()]
    rows += [(f"history {name}", s) for name, s in agreement["strata"]["history"].items()]
    rows += [(f"family: {name}", s) for name, s in agreement["strata"]["family"].items()]
    if agreement["retained"]["complete"]:
        rows.append(("retained set", {**agreement["retained"], "n": agreement["retained"]["kappa_n"]}))
    return rows


SPEC = ProtocolSpec(
    name="twist_b",
    label="TWIST Track B two-phase",
    item_kind="twist",
    item_kind_label="TWIST Track B draft",
    benchmark=Benchmark(
        "twist", "TWIST", "track-b", "Track B (draft vetting)",
        license="cc-by-4.0",  # the released items and annotation trail (data and docs CC BY 4.0)
        homepage="https://github.com/subratpanda/twist-benchmark",
        task_categories=("text-classification",),
        tags=("conversational-memory", "contradiction-detection", "long-context", "human-validated", "evaluation"),
        # Drafts are generated against LoCoMo conversations and cite (and quote) their turns.
        source_datasets=("original", "extended|locomo"),
        citation=Citation(
            title="TWIST: A Proposed Benchmark for Intervention Quality in Conversational Memory, "
            "with a Human-Validated Draft-Alignment Track",
            authors=("The TWIST authors",),
            year=2026,
            url="https://arxiv.org/abs/2609.28575",
        ),
    ),
    importer="items.services.items_import_twist",
    accepts_rejects=True,
    upload_label="TWIST Track B items (JSONL, v1 or v0 pilot schema)",
    version="twist-b-two-phase/1",
    content=TwistContent,
    blind_fields=("recipient", "draft"),
    hidden_fields=("external_id", "gold_label", "family", "contradicted_quote", "rationale", "batch", "history_turns"),
    shows_excerpts=True,
    questions=QUESTIONS,
    primary_key="q1",
    abstain=CANNOT_TELL,
    agreement_keys=("q1", "q2", "q2quote", "q3", "q3turn"),
    gold_values=GOLD_TYPES,
    gold_verdict=GOLD_VERDICT,
    answer_file=AnswerFile(layout="document", stem="answers", suffix=".json"),
    conventions=(
        "Would SENDING the draft contradict what the recipient said in the excerpts?",
        "Asking whether something changed is not a contradiction.",
        "Acknowledging a change is not a contradiction.",
        "The record not mentioning something is not contradiction evidence.",
        "The excerpts are the latest known record: do not imagine later changes.",
    ),
    phase2_conventions=(
        "Phase 2, q2: could you underline the contradicted claim in the recipient's own words in the excerpts?",
        "Phase 2, q2quote: are the quoted words the right ones for that claim?",
        "Phase 2, q3: search every turn the recipient said; if any contradicts the draft, answer conflict and "
        "pick its turn id.",
    ),
    item_template="annotation/item_twist.html",
    phase2_complete=_phase2_complete,
    agreement_figures="gold_verdict",
    key_fields=(
        ("id", "external_id"),
        ("type", "gold"),
        ("verdict", "verdict"),
        ("family", "family"),
        ("evidence", "evidence"),
        ("contradicted_quote", "quote"),
        ("history_turns", "history_turns"),
        ("provenance", "provenance"),
    ),
    quoted_gold=(CONTRADICTING,),
    candidate_fields=(
        ("id", "external_id"),
        ("conv", "conversation__external_id"),
        ("speaker", "recipient"),
        ("type", "gold_label"),
        ("family", "family"),
        ("draft", "draft"),
        ("evidence", "evidence"),
        ("contradicted_quote", "contradicted_quote"),
        ("rationale", "rationale"),
        ("history_turns", "history_turns"),
    ),
    reasons=REASONS,
    queue_rules=queue_rules,
    suggest=suggest,
    agreement_summary=agreement_summary,
    forest_rows=forest_rows,
    agreement_template="adjudication/_agreement_twist.html",
    agreement_main="q1",
    adjudication_template="adjudication/_item_twist.html",
    queue_panels=(Panel("adjudication.agreement.queue_retained", "adjudication/_retained.html"),),
    wording=Wording(forest_caption=" per gold type and stratum", confusion_caption=" (q1, all items)"),
    council_prompt=COUNCIL_PROMPT,
    council_flags=(CouncilFlag("q2", "no", "q2_no"), CouncilFlag("q3", "conflict", "q3_conflict", turn_key="q3turn")),
    generation_gates=True,
    leakage_audit=LeakageAudit(text="draft", positive=CONTRADICTING),
)
