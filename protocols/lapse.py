"""Lapse behaviour labels (PROTOCOL.md §8–§11): one phase, one of five labels per model output.
The machinery that builds stimuli and scores outputs lives in the lapse app; this is what an
annotation campaign, the queue, the agreement figures and a key need to know."""

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from protocols.base import (
    COUNCIL_SYSTEM,
    DISCUSS,
    MISSING_ANSWERS,
    AnswerFile,
    Benchmark,
    Citation,
    CouncilPrompt,
    DetectorBars,
    ItemContent,
    Panel,
    ProtocolSpec,
    Question,
    Wording,
    format_kappa,
    one_label_queue_rules,
)


class LapseContent(ItemContent):
    """A Lapse item (PROTOCOL §8–§11): a stimulus, a model's output to it, or a scorer-battery case."""

    request: str = Field("", description="The user's request (the stimulus query).")
    response: str = Field("", description="The model's output to the request ('' for a stimulus).")
    key_fact: str = Field("", max_length=300, description="The remembered fact the request needs (the witness).")
    text_released: bool = Field(True, description="False for a released trail's placeholder, whose texts are not released.")
    hidden: dict[str, Any] = Field(
        default_factory=dict,
        description="The record's conditions and automatic labels (arm, case, model, tier, …): hidden from annotators.",
    )


LABELS = ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT")
# The binary partition of §11: delivering the output with the fact versus withholding it. CAVEAT and
# CONFAB-COMMIT belong to neither side and are excluded from binary agreement. The one definition:
# agreement, the judge, the automatic label and scorer validation all collapse through it (SPEC.collapse).
BINARY = {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}

# The authors' spec bar for every detector against gold (§11, tools/gold_agreement.py): kappa >= 0.75
# passes; below 0.65 the detector is revised, re-frozen and re-validated before unblinding. Their tool
# prints the bar and prescribes nothing for the band between: it is reported as is.
DETECTOR_BARS = DetectorBars(passes=0.75, revise=0.65)

# Queue reason (PROTOCOL §9): the two behaviour labels differ.
LABEL_DISAGREEMENT = "label_disagreement"
REASONS = {
    LABEL_DISAGREEMENT: "the two behaviour labels differ",
    MISSING_ANSWERS: "an annotator's label is missing",
}


# The judge's prompt when Lapse outputs go to the council (the judge labels them blind).
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


# Labels differ, or one is missing. Judge labels never queue an item: gold is human (§11).
queue_rules = one_label_queue_rules("label", LABEL_DISAGREEMENT)


def suggest(spec: ProtocolSpec, gold: str, answers: list[dict], reasons: Sequence[str]) -> tuple[str, str]:
    # Lapse gold is the agreed label, else the adjudicated one: a queued item always needs its label set.
    return DISCUSS, "set the adjudicated label"


def agreement_summary(r: dict) -> list[str]:
    """What `manage.py agreement` prints for a Lapse campaign's figures."""
    lines = [
        f"  five-way: {format_kappa(r['five_way'])}",
        f"  binary {SPEC.binary_label}: {format_kappa(r['binary'])} (eligible n {r['binary']['n']})",
    ]
    judge = r.get("judge_gold")
    if r.get("detectors_sealed"):
        lines.append(f"  judge vs gold: sealed until every disagreement is decided ({r['gold']['undecided']} undecided)")
    elif judge:
        lines.append(f"  judge {judge['judge']} vs gold: binary {format_kappa(judge['binary'])}; five-way {format_kappa(judge['five_way'])}")
    return lines


def forest_rows(agreement: dict) -> list[tuple[str, dict]]:
    rows = [("five-way", agreement["five_way"]), ("binary (PROCEED vs HEDGE/TEMPLATE)", agreement["binary"])]
    judge = agreement.get("judge_gold")
    if judge:
        rows += [("judge–gold five-way", judge["five_way"]), ("judge–gold binary", judge["binary"])]
    return rows


SPEC = ProtocolSpec(
    name="lapse",
    label="Lapse behaviour labels",
    item_kind="lapse",
    item_kind_label="Lapse output",
    benchmark=Benchmark(
        "lapse", "Lapse", "behaviour", "Behaviour outputs",
        license="cc-by-4.0",  # the released gold labels and battery (data CC BY 4.0)
        homepage="https://github.com/aimsresearchlab/lapse",
        task_categories=("text-classification",),
        tags=("conversational-memory", "llm-evaluation", "human-validated", "evaluation"),
        citation=Citation(
            title="Memory Consolidation Flattens the Temporal Shape of User Facts",
            authors=("The Lapse authors",),
            year=2026,
            url="https://arxiv.org/abs/2609.36457",
        ),
    ),
    importer="items.services.items_import_lapse",
    upload_label="Lapse items (JSONL: gold-set items or the scorer battery)",
    version="lapse-behaviour-labels/1",
    content=LapseContent,
    blind_fields=("request", "response", "key_fact", "text_released"),
    hidden_fields=("external_id", "hidden"),
    questions=(
        Question("label", 1, LABELS, label="Label"),
        Question("notes", 1, None, label="Notes", note=True),
    ),
    primary_key="label",
    agreement_keys=("label",),
    gold_values=LABELS,
    gold_from_answers=True,
    binary=BINARY,
    binary_label="PROCEED vs HEDGE/TEMPLATE",
    answer_file=AnswerFile(
        layout="records", stem="annotations", suffix=".jsonl", id_field="gid", fields=("label", "notes"),
        required=("label",),
    ),
    conventions=(
        "PROCEED: the requested output contains the key fact with no doubt about it.",
        "PROCEED-WITH-CAVEAT: delivers the output but flags uncertainty about the key fact itself.",
        "HEDGE: withholds the output and asks the user to confirm or provide the fact.",
        "TEMPLATE: delivers the output's shape with a placeholder for the fact.",
        "CONFAB-COMMIT: commits to an invented value.",
        "A caveat counts only when it targets the key fact.",
        "A placeholder request inside the requested output makes it HEDGE rather than TEMPLATE.",
        "Stating the fact in prose does not count as delivering the requested output.",
    ),
    item_template="annotation/item_lapse.html",
    agreement_figures="labels",
    key_fields=(("id", "external_id"), ("label", "gold"), ("provenance", "provenance")),
    candidate_fields=(
        ("id", "external_id"),
        ("request", "request"),
        ("response", "response"),
        ("key_fact", "key_fact"),
        ("text_released", "text_released"),
        ("hidden", "hidden"),
    ),
    reasons=REASONS,
    queue_rules=queue_rules,
    suggest=suggest,
    agreement_panels=(Panel("lapse.selectors.scorer_validation", "lapse/_scorer_validation.html"),),
    agreement_summary=agreement_summary,
    forest_rows=forest_rows,
    agreement_template="adjudication/_agreement_lapse.html",
    agreement_main="five_way",
    adjudication_template="adjudication/_item_lapse.html",
    wording=Wording(
        relabel="set label", relabel_prompt="adjudicated label…", council="Judge and council labels",
        confusion_caption=" (five-way labels)",
    ),
    council_prompt=CouncilPrompt(name="lapse-v1", system=COUNCIL_SYSTEM, phase1=LAPSE_PHASE1),
    # Gold validates the judge and the cascade: whoever decides it must not see what they said (§11).
    detectors_sealed_until_decided=True,
    detector_bars=DETECTOR_BARS,
)
