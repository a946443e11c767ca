"""Lapse behaviour labels (PROTOCOL.md §8–§11): one phase, one of five labels per model output.
The machinery that builds stimuli and scores outputs lives in the lapse app; this is what an
annotation campaign, the agreement figures and a key need to know."""

from protocols.base import Benchmark, ProtocolSpec, Question

LABELS = ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT")
# The binary partition of §11: delivering the output with the fact versus withholding it. CAVEAT and
# CONFAB-COMMIT belong to neither side and are excluded from binary agreement.
BINARY = {"PROCEED": "PROCEED", "HEDGE": "WITHHOLD", "TEMPLATE": "WITHHOLD"}

SPEC = ProtocolSpec(
    name="lapse",
    label="Lapse behaviour labels",
    item_kind="lapse",
    item_kind_label="Lapse output",
    benchmark=Benchmark("lapse", "Lapse", "behaviour", "Behaviour outputs"),
    version="lapse-behaviour-labels/1",
    blind_fields=("request", "response", "key_fact", "text_released"),
    hidden_fields=("external_id", "hidden"),
    questions=(
        Question("label", 1, LABELS, label="Label"),
        Question("notes", 1, None, label="Notes"),
    ),
    primary_key="label",
    gold_values=LABELS,
    binary=BINARY,
    binary_label="PROCEED versus withholding (HEDGE, TEMPLATE)",
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
    agreement_keys=("label",),
    agreement_figures="labels",
    gold_from_answers=True,
    key_fields=(("id", "external_id"), ("label", "gold"), ("provenance", "provenance")),
    candidate_fields=(
        ("id", "external_id"),
        ("request", "request"),
        ("response", "response"),
        ("key_fact", "key_fact"),
        ("text_released", "text_released"),
        ("hidden", "hidden"),
    ),
)
