"""What a protocol declares. A protocol is one module in this package exporting `SPEC`, a `ProtocolSpec`;
everything outside the protocol modules asks the spec (through `protocols.get` / `protocols.for_kind`)
instead of branching on the protocol's name.

Pure: no database access and no imports from any app — so that every app, `items` included, may ask a
spec. The one library it uses is pydantic, for the typed schema of an item's content (`ItemContent`).
"""

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

# A free-text answer (a note) is copied into every revision; a page of text is plenty for a reason.
MAX_NOTE_CHARS = 10_000
# Queue reasons every protocol may raise (PROTOCOL §3, §4); each protocol adds its own.
MISSING_ANSWERS = "missing_answers"
COUNCIL_MAJORITY_AGAINST = "council_majority_against"
# Suggestions: what the adjudicator will most likely decide.
DROP, DISCUSS, KEEP = "drop", "discuss", "keep"

# PROTOCOL §4 council bands, in display order.
UNANIMOUS_MATCH, MAJORITY_MATCH, ABSTAIN_HEAVY, MAJORITY_AGAINST = (
    "unanimous_match", "majority_match", "abstain_heavy", "majority_against",
)
BANDS = (UNANIMOUS_MATCH, MAJORITY_MATCH, ABSTAIN_HEAVY, MAJORITY_AGAINST)


def council_band(gold_verdict: str, votes: Sequence[str | None], *, opposing: Collection[str]) -> str:
    """PROTOCOL §4, the one band rule: the council's primary answers against the gold verdict.

    `votes` holds one entry per council member, None or "" where the member gave no vote on this item
    (its call failed, or it has not run yet); `opposing` the answers that actively vote against the
    gold verdict. The denominator is every member: an abstention (e.g. cannot-tell) and a missing vote
    are neither a match nor an opposing vote, but they count towards "more than half" — so a failed call can never make the council look more certain,
    e.g. turn three matches of five members into `unanimous_match`, or two opposing votes of five into
    `majority_against`. '' when there is no council."""
    n = len(votes)
    if not n:
        return ""
    match = sum(bool(v) and v == gold_verdict for v in votes)
    against = sum(v in opposing for v in votes)
    if match == n:
        return UNANIMOUS_MATCH
    if against * 2 > n:
        return MAJORITY_AGAINST
    if match * 2 > n:
        return MAJORITY_MATCH
    return ABSTAIN_HEAVY


def one_label_queue_rules(key: str, disagreement: str) -> Callable[..., list[str]]:
    """The queue rule of a protocol whose annotators each give one label under `key` (Lapse's label, a judged
    answer's verdict): the labels differ (`disagreement`), or one is missing. Detector labels (council,
    judge) never queue an item there: gold is human."""

    def queue_rules(spec, gold: str, answers: Sequence[dict | None], council_votes: Sequence[dict] | None = None) -> list[str]:
        labels = [(a or {}).get(key, "") for a in answers]
        present = [label for label in labels if label]
        reasons = []
        if len(set(present)) > 1:
            reasons.append(disagreement)
        if len(present) < max(2, len(labels)):
            reasons.append(MISSING_ANSWERS)
        return reasons

    return queue_rules


def format_kappa(section: dict | None) -> str:
    """One figure of a command's summary: "kappa 0.812 [0.70, 0.92], 150/161 agree"."""
    if not section or section.get("kappa") is None:
        return "kappa n/a"
    fleiss = section.get("statistic") == "fleiss"  # more than two annotators: a bootstrap interval only
    ci = section.get("ci95_bootstrap" if fleiss else "ci95") or [None, None]
    ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else ""
    name = "Fleiss' kappa" if fleiss else "kappa"
    return f"{name} {section['kappa']:.3f}{ci_text}, {section['agree']}/{section['n']} agree"


class ItemContent(BaseModel):
    """The typed schema of one protocol's item content (`Item.content`): every value an item of the protocol
    carries beyond the columns all items share. A protocol declares one subclass in its module; import, the
    API, the admin, council prompts and `blind_view` read and write content through it, so a value that does
    not fit is refused naming the field, never stored. Strict: a number is not a string, an unknown field is
    an error. Field descriptions become the OpenAPI and Croissant descriptions (JSON Schema)."""

    model_config = ConfigDict(extra="forbid", strict=True)


@cache
def _field_names(schema: type[BaseModel]) -> tuple[str, ...]:
    """A schema's field names, kept per schema class: an import asks once per item, and pydantic builds its
    field map anew on every read."""
    return tuple(schema.model_fields)


def content_problems(schema: type[ItemContent], values: Any) -> list[str]:
    """"field 'x': why" for every value of `values` that does not fit `schema` (empty: it fits)."""
    if not isinstance(values, Mapping):
        return [f"content must be an object, got {type(values).__name__}"]
    try:
        schema.model_validate(dict(values))
    except ValidationError as error:
        return [f"field '{field_path(problem['loc'])}': {problem['msg']}" for problem in error.errors(include_url=False)]
    return []


def inline_refs(schema: Any, defs: Mapping[str, dict]) -> Any:
    """A JSON Schema with every local `{"$ref": "#/$defs/X"}` replaced by X itself (pydantic's nested
    models are not recursive here, so this ends)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref", "")
        if ref.startswith("#/$defs/"):
            return inline_refs({**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
        return {key: inline_refs(value, defs) for key, value in schema.items()}
    if isinstance(schema, list):
        return [inline_refs(value, defs) for value in schema]
    return schema


def field_path(loc: Sequence[str | int]) -> str:
    """Where in an item's content a value sits, as a JSON path: ("steps", 1, "value") → "steps[1].value"."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "content"


@dataclass(frozen=True)
class Question:
    """One question of a protocol.

    key: the answer key ("q1"); phase: 1 or 2; choices: the allowed values (None: free text);
    applies_to: the gold values whose items are asked it (TWIST Phase 2; None: every item);
    label: the question as the annotator's page asks it; column: its short name in adjudication's
    side-by-side answers ('' : the label); note: the phase's free-text note field (one per phase);
    shows: item facts the annotator's page shows with this question (names of readers in
    annotation.selectors.PAGE_FACTS, e.g. "quote", "recipient_turns"); optional: a flag beside the
    answer that an annotator may raise (the judged protocol's "the gold answer is wrong"): the phase is
    done without it, and the council is not asked it."""

    key: str
    phase: int
    choices: tuple[str, ...] | None  # None: free text
    applies_to: tuple[str, ...] | None = None  # gold values (TWIST Phase 2); None: every item
    label: str = ""
    column: str = ""
    note: bool = False
    shows: tuple[str, ...] = ()
    optional: bool = False

    @property
    def column_label(self) -> str:
        return self.column or self.label


@dataclass(frozen=True)
class Citation:
    """What a benchmark asks to be cited as (CITATION.cff's preferred-citation, the card's citation).
    `authors` are names as the publication gives them; a group name is written as a CFF entity."""

    title: str
    authors: tuple[str, ...]
    year: int
    url: str = ""
    kind: str = "article"  # the CFF reference type


@dataclass(frozen=True)
class Benchmark:
    """The benchmark and track an item kind belongs to (created on first import), and what its releases
    declare about themselves: the licence its item files carry unless an import says otherwise (a Hugging
    Face licence id), languages, the Hub's task categories and tags, the datasets its items derive from,
    and the publication to cite."""

    slug: str
    name: str
    track_slug: str
    track_name: str
    license: str = "unknown"
    homepage: str = ""
    languages: tuple[str, ...] = ("en",)
    task_categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source_datasets: tuple[str, ...] = ("original",)
    citation: Citation | None = None


@dataclass(frozen=True)
class AnswerFile:
    """The released file format of one annotator's answers (import and export).

    layout "document": one JSON object {"annotator", "exported", "answers": {item_id: {key: value}}}
    (every question key as is). layout "records": JSON lines, one record per item: `id_field` names the
    item, `fields` are answer keys written as record fields (`required` ones must be strings), plus
    "annotator" and "ts" (when the answer last changed); any other record field is kept verbatim and
    given back on export. The file is named `<campaign>_<stem>_<pseudonym><suffix>`."""

    layout: str  # "document" | "records"
    stem: str
    suffix: str
    id_field: str = ""
    fields: tuple[str, ...] = ()
    required: tuple[str, ...] = ()

    @property
    def record_keys(self) -> tuple[str, ...]:
        return (self.id_field, *self.fields, "annotator", "ts")


@dataclass(frozen=True)
class Panel:
    """An extra section of a page contributed by a protocol: `data` is the dotted path of the function
    that computes it (resolved when the page is drawn, so the page's app never imports the protocol's
    app) and `template` renders its result. Agreement panels: data(campaign), rendered as `s`. Queue
    panels: data(campaign data, queue entries), rendered as `retained`."""

    data: str
    template: str


# What every council member is told first, whatever the protocol.
COUNCIL_SYSTEM = (
    "You are one of several independent annotators validating items for a benchmark of memory systems. "
    "You see ONLY what a human annotator sees. Answer with a single JSON object and nothing else: no prose, "
    "no code fences."
)


@dataclass(frozen=True)
class CouncilPrompt:
    """The blind protocol as the council's LLM members are asked it (PROTOCOL §4): the same view and
    questions a human annotator gets. `name`: the default prompt version; `system`, `phase1`, `phase2`:
    its templates (str.format with the blind fields, {excerpts}, {schema}, {schema_marker}; Phase 2 with
    {questions}, {quote_block}, {index_block}). `phase2_questions`: the text of each Phase 2 question
    asked (by key; formatted with the blind fields); `quote_block` / `index_block`: shown when a question
    asked shows the quote / the recipient's turns ({quote}, {index})."""

    name: str
    system: str
    phase1: str
    phase2: str = ""
    phase2_questions: Mapping[str, str] = field(default_factory=dict)
    quote_block: str = ""
    index_block: str = ""


@dataclass(frozen=True)
class CouncilFlag:
    """A council member's answer worth a look in triage (PROTOCOL §4): `key` = `value` is flagged as
    `name`, with the turn the member named in `turn_key` ('' : none)."""

    key: str
    value: str
    name: str
    turn_key: str = ""


@dataclass(frozen=True)
class Wording:
    """How the adjudication pages name this protocol's things."""

    relabel: str = "relabel"  # the relabel action
    relabel_prompt: str = "new gold type…"  # the empty choice of its select
    council: str = "Council votes"  # the council section's title
    forest_caption: str = ""  # after "Kappa with 95% interval"
    confusion_caption: str = ""  # after "Confusion matrix"


@dataclass(frozen=True)
class LeakageAudit:
    """The shortcut-leakage audit (PROTOCOL §6) a protocol's keys carry: can the gold value `positive` be
    read off the content field `text` alone? Run on every key frozen or derived (keys/leakage.py)."""

    text: str
    positive: str


@dataclass(frozen=True)
class DetectorBars:
    """Pre-registered bars for a detector (rule cascade, LLM judge, any scorer) against human gold: kappa
    at or above `passes` passes; below `revise` the detector is revised, re-frozen and re-validated before
    unblinding. Between the two the protocol prescribes no action: the figure is reported as it is, the
    detector neither passed nor sent back (`between` says so wherever the verdict is shown)."""

    passes: float
    revise: float
    between: str = "between the bars: neither passed nor sent back; reported as is"

    def verdict(self, kappa: float | None) -> str:
        """'pass', 'revise' or 'between'; '' when kappa is undefined (no pairs, or no variation)."""
        if kappa is None or kappa != kappa:  # NaN: undefined
            return ""
        if kappa >= self.passes:
            return "pass"
        if kappa < self.revise:
            return "revise"
        return "between"


# The key-field source prefix naming an item content field frozen into a key entry (ProtocolSpec.key_fields).
KEY_CONTENT_SOURCE = "content."


@dataclass(frozen=True)
class ProtocolSpec:
    """Everything Goldkey needs to know about one protocol. Fields:

    name: the campaign's protocol value ("twist_b"); label: its display name.
    item_kind / item_kind_label: the Item.kind it annotates ("twist") and its display name.
    benchmark: the benchmark and track its item sets are filed under.
    importer: dotted path of the items service that imports an uploaded items file of this kind
      (called as importer(path=, item_set_name=, dry_run=[, rejects_path=])); accepts_rejects: whether
      an upload may come with a generation-rejects file; upload_label: the choice on the import page.
    version: cited in key manifests ("twist-b-two-phase/1").
    content: the typed schema (an `ItemContent` subclass, declared in the protocol's module) of the item's
      `content`: every value of its items beyond the columns all items share.
    context: the typed schema of the shared context an item may cite (`Item.context`: a question answered by
      several runs, stored once); its values read as the item's own where the item's content leaves them
      out (None: the protocol's items cite no context).
    blind_fields: the only item fields (content fields or shared columns) an annotator may ever see; hidden_fields: those holding gold,
      generator output or hidden conditions (audits and blindness tests).
    derived_view: (blind view) -> extra entries of the view computed from the blind fields alone (e.g. a
      rubric chosen by the question type); it never sees the item, so it cannot unblind anything.
    shows_excerpts: items carry dated excerpts (cited turns) shown to annotators, council and adjudicator.
    excerpt_role: the role of the citations that are the item's excerpts and its key's / release's "evidence"
      (an item may cite turns in other roles; roles are the protocol's words); excerpts_in_record_order:
      show them in the conversation's order rather than in cited order (cited order would tell a reader
      something the protocol hides, e.g. which step of a chain a turn is).
    questions: the questions with their phases and choices; primary_key: the answer compared between
      annotators (kappa, the queue, the council band); abstain: the primary answer that is an abstention.
    agreement_keys: the answer keys agreement and the queue read (pages load the full answers themselves).
    gold_values: what a key entry's gold may be (and so what a relabel may set).
    gold_verdict: gold value -> the primary answer that agrees with it (empty: the gold is the answer).
    gold_from_answers: the gold is the label both annotators gave, else the adjudicated one (Lapse),
      rather than the item's own gold type: "keep" then needs the annotators to agree.
    binary / binary_label: label -> binary class for binary agreement (labels absent are excluded;
      None: no binary figure).
    conventions / phase2_conventions: shown to annotators (Phase 2 ones only once Phase 2 is open).
    item_template: the annotator's item page.
    phase2_complete: extra checks a complete answer must satisfy beyond its choice questions.
    reasons: queue reason -> its help text, in the order PROTOCOL lists them.
    queue_rules: (spec, gold, answers, council votes) -> the queue reasons of one item (pure; see
      `queue_reasons`); suggest: (spec, gold, answers, reasons) -> (action, why) for a queued item.
    agreement_panels: extra sections of the agreement page (e.g. Lapse's scorer validation).
    agreement_summary: (agreement figures) -> the lines `manage.py agreement` prints for them;
      forest_rows: (agreement figures) -> the kappa forest rows of the agreement page.
    agreement_template: the protocol's figures on the agreement page; agreement_main: the key of the
      agreement figures whose confusion matrix the page draws ("q1", "five_way").
    adjudication_template: the item (and its gold) on the adjudicator's side-by-side page.
    queue_panels: extra sections of the queue page (e.g. TWIST's retained set against the bar); their data
      is (campaign, *, undecided) -> JSON-ready figures, cached per campaign state.
    wording: how the adjudication pages name the protocol's things.
    council_prompt: how the council is asked (None: no council for this protocol); council_flags: the
      member answers triage flags; generation_gates: its item sets pass the generation gates (§5).
    decoy_set: dotted path of the judges wing's builder of this protocol's judge calibration set
      ((item_set=, seed=) -> judges.services.CalibrationSet; '' : decoys from judged answers).
    detectors_sealed_until_decided: detector labels (council votes, scorer labels) and every figure
      comparing them with gold stay out of the adjudication pages and reports while any queued item of
      the campaign is undecided (the gold validates the detectors, so nobody deciding it may see them);
      detector_bars: the pass / revise bars for detector-gold kappa (None: no bars).
    leakage_audit: the shortcut-leakage audit its keys carry in their manifest and release (None: none).
    set_gates: dotted path of the protocol wing's gate run over one of its item sets ((item_set_id=,
      llm_member_id=) -> the summary `gates_run` gives: "item_set", "checked", "passed", "rejected_by_gate",
      "warnings", "llm"), through a council member, which the council's gates page and `gates_run` run instead of
      PROTOCOL §5's generation gates; '' : none (or those, when `generation_gates`).
    score_page: the url name of the protocol's own score page of a frozen key (called with the key's version),
      which the key's score pages link for authors; '' : its runs are scored by the core's pages only.
    """

    name: str
    label: str
    item_kind: str
    item_kind_label: str
    benchmark: Benchmark
    version: str
    blind_fields: tuple[str, ...]
    hidden_fields: tuple[str, ...]
    questions: tuple[Question, ...]
    primary_key: str
    gold_values: tuple[str, ...]
    answer_file: AnswerFile
    content: type[ItemContent] = ItemContent
    context: type[ItemContent] | None = None
    importer: str = ""
    derived_view: Callable[[dict], dict] | None = None
    accepts_rejects: bool = False
    upload_label: str = ""
    shows_excerpts: bool = False
    excerpt_role: str = "evidence"
    excerpts_in_record_order: bool = False
    abstain: str = ""
    agreement_keys: tuple[str, ...] = ()
    gold_verdict: Mapping[str, str] = field(default_factory=dict)
    gold_from_answers: bool = False
    binary: Mapping[str, str] | None = None
    binary_label: str = ""
    conventions: tuple[str, ...] = ()
    phase2_conventions: tuple[str, ...] = ()
    item_template: str = ""
    phase2_complete: Callable[[dict], bool] | None = None
    reasons: Mapping[str, str] = field(default_factory=dict)
    queue_rules: Callable | None = None
    suggest: Callable | None = None
    agreement_panels: tuple[Panel, ...] = ()
    # (name, dotted path of a function(campaign) -> JSON-ready figures or None): sections a key's manifest
    # (its datasheet and release) records about the campaign beyond the core ones; None leaves it out.
    manifest_sections: tuple[tuple[str, str], ...] = ()
    agreement_summary: Callable[[dict], list[str]] | None = None
    forest_rows: Callable[[dict], list[tuple[str, dict]]] | None = None
    agreement_template: str = ""
    agreement_main: str = ""
    adjudication_template: str = ""
    queue_panels: tuple[Panel, ...] = ()
    wording: Wording = field(default_factory=Wording)
    council_prompt: CouncilPrompt | None = None
    council_flags: tuple[CouncilFlag, ...] = ()
    generation_gates: bool = False
    detectors_sealed_until_decided: bool = False
    detector_bars: DetectorBars | None = None
    decoy_set: str = ""
    leakage_audit: LeakageAudit | None = None
    # (answer values) -> problems of the answer as a whole, each naming its field: rules across questions
    # (a flag that needs its note), checked on the merged answer of every save. None: no such rule.
    answer_rules: Callable[[dict], list[str]] | None = None
    # Sections of the adjudicator's item page: data(campaign, item) -> JSON-ready figures, rendered as `p`
    # (e.g. the flags raised on every answer to the item's question, across items).
    adjudication_panels: tuple[Panel, ...] = ()
    # The content field of the shared context (`context`) that a fix-reference erratum corrects: the
    # question's reference (gold) answer, against which every item citing it is re-judged ('' : none).
    reference_field: str = ""
    # Dotted path of (erratum=, member=) -> {key entry external id: verdict ('' : the reply said neither)}:
    # a council member's verdict on each answer re-judged against a fix-reference erratum's corrected
    # reference, shown to the author as a suggestion ('' : none can be asked).
    rejudge_suggestions: str = ""
    set_gates: str = ""
    score_page: str = ""

    # --- agreement, the queue and keys (read by adjudication and keys) ---------------------------------
    # Which figure set adjudication.agreement computes: "gold_verdict" (primary answer against the item's
    # gold, evidence questions, strata, retained set) or "labels" (labels, binary collapse, judges).
    agreement_figures: str = "labels"
    # A key record: (record field, source) in order. Sources are key-entry attributes (external_id, gold,
    # evidence, quote, family, history_turns, provenance), "verdict" (verdict_of(gold)), or
    # "content.<field>": the item's content field, frozen into the entry's detail at the freeze and
    # covered by the key's hash like the rest.
    key_fields: tuple[tuple[str, str], ...] = (("id", "external_id"), ("label", "gold"), ("provenance", "provenance"))
    # Gold values whose key entry carries the item's quote (others carry ""), and the content field it is
    # read from: TWIST Track B's contradicted quote, Track C's proposed answer.
    quoted_gold: tuple[str, ...] = ()
    quote_field: str = "contradicted_quote"
    # A candidate record in a release bundle: (record field, source) in order. A source is a content field
    # (its default when the item's content lacks it), an Item field path, or "evidence" (the item's evidence
    # turn ids); a missing related object (a path through "__") exports as "".
    candidate_fields: tuple[tuple[str, str], ...] = (("id", "external_id"),)

    def key_content_fields(self) -> tuple[str, ...]:
        """The content fields a freeze copies into each key entry's detail, in key-field order."""
        return tuple(source.removeprefix(KEY_CONTENT_SOURCE) for _, source in self.key_fields
                     if source.startswith(KEY_CONTENT_SOURCE))

    # --- questions -------------------------------------------------------------------------------------
    def question_map(self) -> dict[str, Question]:
        return {q.key: q for q in self.questions}

    def validate_values(self, values: dict, gold: str = "") -> list[str]:
        """Problems with a (partial) answer: unknown keys, values outside the allowed choices, questions
        that do not apply to this item. Messages name the field only, never the item."""
        problems = []
        questions = self.question_map()
        for key, value in values.items():
            question = questions.get(key)
            if question is None:
                problems.append(f"field '{key}': not a question of this protocol (allowed: {', '.join(questions)})")
                continue
            if not isinstance(value, str):
                problems.append(f"field '{key}': must be a string, got {type(value).__name__}")
                continue
            if question.choices is None and len(value) > MAX_NOTE_CHARS:
                problems.append(f"field '{key}': {len(value):,} characters; a note holds at most {MAX_NOTE_CHARS:,}")
                continue
            if question.choices is not None and value != "" and value not in question.choices:
                problems.append(f"field '{key}': '{value}' is not one of {', '.join(question.choices)}")
            if question.applies_to is not None and gold and gold not in question.applies_to and value != "":
                problems.append(f"field '{key}': does not apply to this item")
        return problems

    def answer_problems(self, values: dict) -> list[str]:
        """Problems of a whole (merged) answer across its questions (`answer_rules`); names fields only."""
        return self.answer_rules(values) if self.answer_rules is not None else []

    def phase_of(self, key: str) -> int:
        return self.question_map()[key].phase

    @property
    def phases(self) -> tuple[int, ...]:
        return tuple(sorted({q.phase for q in self.questions}))

    @property
    def has_phase2(self) -> bool:
        return any(q.phase == 2 for q in self.questions)

    def phase1_done(self, values: dict) -> bool:
        """Every Phase 1 choice question is answered (notes and optional flags are optional)."""
        return all(values.get(q.key) for q in self.questions if q.phase == 1 and q.choices is not None and not q.optional)

    def asked(self, phase: int, gold: str = "") -> tuple[Question, ...]:
        """The questions of a phase asked of an item with this gold ('' : before the gold may be used,
        every question of the phase)."""
        return tuple(
            q for q in self.questions
            if q.phase == phase and (q.applies_to is None or not gold or gold in q.applies_to)
        )

    def phase2_keys_for(self, gold: str) -> tuple[str, ...]:
        """The Phase 2 questions asked of an item (they depend on its gold: never show before Phase 2)."""
        return tuple(
            q.key for q in self.questions if q.phase == 2 and (q.applies_to is None or gold in q.applies_to)
        )

    def phase2_done(self, values: dict, gold: str) -> bool:
        """Phase 2 is answered for this item; a protocol without Phase 2 is done when Phase 1 is."""
        if not self.has_phase2:
            return self.phase1_done(values)
        questions = self.question_map()
        for key in self.phase2_keys_for(gold):
            if questions[key].choices is not None and not questions[key].optional and not values.get(key):
                return False
        return self.phase2_complete is None or self.phase2_complete(values)

    def note_key(self, phase: int) -> str:
        """The free-text note of a phase ('' when it has none)."""
        return next((q.key for q in self.questions if q.phase == phase and q.note), "")

    @property
    def primary_choices(self) -> tuple[str, ...]:
        return self.question_map()[self.primary_key].choices or ()

    @property
    def answer_columns(self) -> tuple[tuple[str, str], ...]:
        """(key, column label) of every question, for side-by-side answers."""
        return tuple((q.key, q.column_label) for q in self.questions)

    # --- gold --------------------------------------------------------------------------------------------
    def verdict_of(self, gold: str) -> str:
        """The primary answer that agrees with a gold value ('' for an unknown gold). The one gold-verdict map."""
        if self.gold_verdict:
            return self.gold_verdict.get(gold, "")
        return gold if gold in self.gold_values else ""

    def collapse(self, label: str | None) -> str | None:
        """The binary class of a label (None: excluded from binary agreement, or no binary figure)."""
        if self.binary is None:
            return None
        return self.binary.get(label or "")

    @property
    def binary_classes(self) -> tuple[str, ...]:
        """The binary classes in first-seen order ("PROCEED", "WITHHOLD")."""
        return tuple(dict.fromkeys((self.binary or {}).values()))

    def detectors_sealed(self, undecided: int) -> bool:
        """Are detector labels sealed in a campaign with `undecided` queued items still to decide? The one
        check: the adjudication item page, the agreement figures and scorer validation all ask it."""
        return self.detectors_sealed_until_decided and undecided > 0

    # --- the queue ---------------------------------------------------------------------------------------
    def band(self, verdict: str, votes: Sequence[str | None]) -> str:
        """The PROTOCOL §4 band of primary answers (one per council member, None: no vote) against a gold
        verdict: every primary choice other than the verdict and the abstention opposes it."""
        opposing = {c for c in self.primary_choices if c not in (verdict, self.abstain)} if verdict else set()
        return council_band(verdict, votes, opposing=opposing)

    def council_band(self, gold: str, votes: Sequence[dict] | None) -> str:
        """The band of council votes (one answer dict per council member, {} for a member without a
        vote on this item) against this item's gold ('' without a council)."""
        if not votes:
            return ""
        return self.band(self.verdict_of(gold), [(v or {}).get(self.primary_key) for v in votes])

    def queue_reasons(self, gold: str, answers: Sequence[dict | None], council_votes: Sequence[dict] | None = None) -> list[str]:
        """Every queue reason that applies to one item (empty: not queued). `answers` holds one dict per
        assigned annotator ({} when that annotator has not answered); `council_votes` one per council
        member ({} for a member without a vote), or None without a council."""
        if self.queue_rules is None:
            return []
        return self.queue_rules(self, gold, answers, council_votes)

    def suggestion(self, gold: str, answers: Sequence[dict | None], reasons: Sequence[str]) -> tuple[str, str]:
        """(action, why): what the adjudicator will most likely decide; not queued → keep."""
        if not reasons:
            return KEEP, "not queued"
        if self.suggest is None:
            return DISCUSS, "weigh the answers and notes"
        return self.suggest(self, gold, [a or {} for a in answers], reasons)

    @property
    def class_prefix(self) -> str:
        """The protocol's name as the prefix of the classes (and so of the OpenAPI components) built from
        its spec: "twist_b" -> "TwistB"."""
        return self.name.title().replace("_", "")

    # --- items -------------------------------------------------------------------------------------------
    @property
    def content_fields(self) -> tuple[str, ...]:
        return _field_names(self.content)

    def content_defaults(self) -> dict[str, Any]:
        """Each content field's value where an item's content does not hold it (a fresh copy: a default
        list or dict handed out is the caller's)."""
        defaults = {name: f.get_default(call_default_factory=True) for name, f in self.content.model_fields.items()}
        # A nested schema's default is stored as what an item without it held: its non-default values only.
        return {
            name: value.model_dump(mode="json", exclude_defaults=True) if isinstance(value, BaseModel) else value
            for name, value in defaults.items()
        }

    def content_problems(self, values: Any) -> list[str]:
        """What is wrong with an item's content for this protocol ("field 'x': why"; empty: it fits)."""
        return content_problems(self.content, values)

    def context_defaults(self) -> dict[str, Any]:
        """Each context field's value where a context's content does not hold it (empty: no context)."""
        if self.context is None:
            return {}
        return {name: f.get_default(call_default_factory=True) for name, f in self.context.model_fields.items()}

    def context_problems(self, values: Any) -> list[str]:
        """What is wrong with a shared context's content for this protocol (empty: it fits)."""
        if self.context is None:
            return ["this protocol's items cite no shared context"]
        return content_problems(self.context, values)

    def content_of(self, item) -> dict[str, Any]:
        """An item's content with every field present (defaults where the stored value leaves one out), over
        the shared context it cites: the item's own value wins where both hold one. Reading the context costs
        a query unless the caller loaded it (`select_related("context")`)."""
        if self.context is None:
            return {**self.content_defaults(), **(item.content or {})}
        shared = item.context.content if getattr(item, "context_id", None) else {}
        return {**self.content_defaults(), **self.context_defaults(), **(shared or {}), **(item.content or {})}

    def content_json_schema(self) -> dict:
        """The content's JSON Schema (the OpenAPI component and the Croissant field descriptions)."""
        return self.content.model_json_schema()

    def content_field_schemas(self) -> dict[str, dict]:
        """Each content field's JSON Schema, self-contained (nested schemas written in place of their
        `$ref`): where the OpenAPI schema and a release's Croissant describe a content value. A field is
        documented once, in the protocol's schema class."""
        schema = self.content_json_schema()
        return {name: inline_refs(value, schema.get("$defs", {})) for name, value in schema["properties"].items()}

    def stored_field_schemas(self) -> dict[str, dict]:
        """Each field's JSON Schema as an item's values are read (`content_of`): the content's, and the shared
        context's where the item leaves a field to it (a LongMemEval question's gold answer, an integer or a
        string as released)."""
        schemas = self.content_field_schemas()
        if self.context is not None:
            shared = self.context.model_json_schema()
            schemas.update({name: inline_refs(value, shared.get("$defs", {}))
                            for name, value in shared["properties"].items()})
        return schemas

    def blind_view(self, item) -> dict:
        """What an annotator may see of an item: built from the whitelist only (content fields read
        through the schema, shared columns from the row), and what the spec derives from that whitelist."""
        content = self.content_of(item)
        view = {name: content[name] if name in content else getattr(item, name) for name in self.blind_fields}
        if self.derived_view is not None:
            view.update(self.derived_view(dict(view)))
        return view
