"""Benchmarks, item sets, the LoCoMo corpus, items and generation rejects.

Items of every protocol live in one table so that campaigns, answers, decisions and keys treat them
alike. A row holds what every protocol shares (item set, kind, external id, conversation, batch, gate
state) and, under protocol-neutral names, the two values that queries and strata need (the gold label,
the family); everything else is the item's `content`, one JSON value whose shape the protocol declares
as a typed schema (`ProtocolSpec.content`, in protocols/). Which fields an annotator may see is declared
once, in each protocol's spec, and every blind view is built from that whitelist.
"""

import copy

from django.core.exceptions import ImproperlyConfigured
from django.db import models

import protocols

# The corpus TWIST items point into, as its own repository releases it: every imported conversation
# records this licence unless the import names another (a Hugging Face licence id).
LOCOMO_NAME = "LoCoMo"
LOCOMO_URL = "https://github.com/snap-research/locomo"
LOCOMO_LICENSE = "cc-by-nc-4.0"
LICENSE_MAX = 50


class Benchmark(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name


class Track(models.Model):
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="tracks")
    slug = models.SlugField()
    name = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["benchmark", "slug"], name="track_unique_slug")]

    def __str__(self) -> str:
        return f"{self.benchmark.name} {self.name}"


class ItemSet(models.Model):
    track = models.ForeignKey(Track, on_delete=models.PROTECT, related_name="item_sets")
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=10, choices=protocols.kind_choices)
    # The released file schema the items came in: "twist-v1" carries family, contradicted quote and
    # history length; "twist-v0" (the pilot) carries none of them, so a gate on quotes cannot apply.
    schema = models.CharField(max_length=20, blank=True)
    # The licence the items were released under (a Hugging Face licence id, e.g. "cc-by-4.0"), recorded at
    # import from the command or the protocol's benchmark; releases of keys over these items declare it.
    license = models.CharField(max_length=LICENSE_MAX, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Conversation(models.Model):
    external_id = models.CharField(max_length=50, unique=True)  # "conv-26"
    speaker_a = models.CharField(max_length=100)
    speaker_b = models.CharField(max_length=100)
    # The corpus's own licence, recorded at import: it governs the turns and quotes a release carries.
    license = models.CharField(max_length=LICENSE_MAX, default=LOCOMO_LICENSE)
    # A version of another conversation: the original with injected turns, stored as a conversation of its
    # own, so that the original an item set already cites is never edited (`corpus_import_version` checks
    # that a version only adds turns).
    version_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="versions"
    )

    def __str__(self) -> str:
        return self.external_id

    def other_speaker(self, name: str) -> str:
        return self.speaker_b if name == self.speaker_a else self.speaker_a


class Session(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="sessions")
    number = models.PositiveIntegerField()
    date_time_raw = models.CharField(max_length=100)  # as given: "1:56 pm on 8 May, 2023"
    date_time = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["conversation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "number"], name="session_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation.external_id} session {self.number}"


class Turn(models.Model):
    # No index of its own: the unique (conversation, dia_id) pair and the index by speaker both lead with it,
    # and an import of 60,000 turns fills one B-tree fewer.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns", db_index=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    dia_id = models.CharField(max_length=20)  # "D19:1"
    speaker = models.CharField(max_length=100)
    text = models.TextField()
    order = models.PositiveIntegerField()  # position in the whole conversation, from 0
    image_caption = models.TextField(blank=True)

    class Meta:
        ordering = ["conversation", "order"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "dia_id"], name="turn_unique_dia_id"),
        ]
        indexes = [models.Index(fields=["conversation", "speaker", "order"], name="turn_by_speaker")]

    def __str__(self) -> str:
        return f"{self.conversation.external_id}:{self.dia_id}"


class Context(models.Model):
    """What several items share, stored once and cited by each: a LongMemEval question (its text, date, gold
    answer and dated evidence sessions) answered by many runs, each answer an item; a question asked of several
    store versions or a scenario arc would be one too. Its `content` is shaped by the protocol's context schema
    (`ProtocolSpec.context`) and reads as the citing items' own (`ProtocolSpec.content_of`). Named within its
    item set by `external_id` (the benchmark's question id), hidden from annotators as item ids are."""

    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="contexts")
    external_id = models.CharField(max_length=120)
    content = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_set", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["item_set", "external_id"], name="context_unique_external_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class Item(models.Model):
    # No index of its own: every index of the table leads with it (the unique pair, the one by gold label),
    # and one more B-tree to fill was a tenth of the database's work in an import.
    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="items", db_index=False)
    kind = models.CharField(max_length=10, choices=protocols.kind_choices)
    external_id = models.CharField(max_length=120)  # TWIST "conv-26:v1b1", Lapse "g001" / battery id
    # The conversation whose turns the item cites, when there is one. Not indexed: items are read by item
    # set, never by conversation; only a delete of conversations (which nothing but a migration or a shell
    # does: the admin is read-only) looks for the items citing one, and reads the table for it.
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.PROTECT, related_name="items", db_index=False
    )
    # The item's own gold label, when its file carries one (TWIST's gold type); a protocol whose gold
    # comes from the annotators leaves it blank. One of the protocol's gold values.
    gold_label = models.CharField(max_length=40, blank=True)
    # The stratum agreement and scores break figures down by (TWIST's family, a judged question's type).
    family = models.CharField(max_length=100, blank=True)
    batch = models.CharField(max_length=20, blank=True)  # "v1b", "v1c", … derived from the id
    # The shared context the item cites (a question answered by several runs), when its protocol has one.
    # Indexed only where it is set (item_by_context): most items cite none, and an index of their nulls
    # was a tenth of the database's work in an import of 100,000 Track B items, for no lookup.
    context = models.ForeignKey(
        Context, null=True, blank=True, on_delete=models.PROTECT, related_name="items", db_index=False
    )
    # Everything else, shaped by the protocol's content schema (protocols/<name>.py): written only
    # through it, so a value that does not fit is refused naming the field, never stored.
    content = models.JSONField(default=dict, blank=True)
    # A blocking gate rejected this candidate (written by council.gates.gates_run with its verdicts):
    # it is kept for audit and ships as a reject, but no campaign takes it and no key holds it.
    gate_rejected = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_set", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["item_set", "external_id"], name="item_unique_external_id"),
        ]
        # No index by family: the strata are read with the whole campaign, never looked up by family, and
        # its B-tree was the costliest of an import's (a seventh of the database's work at 100,000 items).
        indexes = [
            models.Index(fields=["item_set", "gold_label"], name="item_by_gold_label"),
            models.Index(fields=["context"], name="item_by_context", condition=models.Q(context__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def gold_verdict(self) -> str:
        """The primary answer that agrees with the item's gold (its protocol's gold-verdict map)."""
        return protocols.for_kind(self.kind).verdict_of(self.gold_label)


def _content_attribute(name: str, default):
    """`item.<name>`: the content field read as an attribute (its schema default where the item's content
    lacks it), and settable, so that `Item(<name>=…)` fills the content. Values are checked by the schema
    where items are written (imports, the API), not here."""

    def read(item):
        value = item.content.get(name, _MISSING)
        # A value the item shares with others lives in its context; only a loaded context id is looked at,
        # so that reading an item of a protocol without contexts never costs a query.
        if value is _MISSING and item.__dict__.get("context_id"):
            value = item.context.content.get(name, _MISSING)
        return copy.deepcopy(default) if value is _MISSING else value

    def write(item, value):
        item.content = {**item.content, name: value}

    return property(read, write, doc=f"The content field '{name}' (protocols' content schemas).")


_MISSING = object()


def _install_content_attributes() -> None:
    """Every registered protocol's content fields become attributes of Item (generated from the schemas,
    so this module names none of them). Two protocols may share a field name only with the same default."""
    defaults: dict = {}
    for spec in protocols.specs():
        for name, default in spec.content_defaults().items():
            if name in defaults and defaults[name] != default:
                raise ImproperlyConfigured(f"content field '{name}' has two defaults ({defaults[name]!r}, {default!r})")
            defaults[name] = default
    for name, default in defaults.items():
        if hasattr(Item, name):
            raise ImproperlyConfigured(f"content field '{name}' would hide Item.{name}")
        setattr(Item, name, _content_attribute(name, default))


_install_content_attributes()


# The role of a TWIST Track B citation: the turns that show the gold. Other roles are their protocol's
# words (`ProtocolSpec.excerpt_role`); this module names only the default.
EVIDENCE_ROLE = "evidence"


class Evidence(models.Model):
    """A turn an item cites, in its role ("evidence" for TWIST Track B; a protocol may cite turns in roles
    of its own, e.g. the steps of an update chain), at its position within that role."""

    # No index of its own: the unique (item, position) pair leads with it.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="evidence", db_index=False)
    # No index either: citations are read by item, never by turn. Only a delete of turns (which nothing
    # but a migration or a shell does: the admin is read-only) looks for the citations of a turn, and reads
    # the table for it; filling this B-tree was a fifth of the database's work in a 100,000-item import.
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="citations", db_index=False)
    role = models.CharField(max_length=20, default=EVIDENCE_ROLE)
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item", "role", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "role", "position"], name="evidence_unique_role_position"),
        ]


class GenerationReject(models.Model):
    """A generated candidate that a gate rejected, kept with its verdict for audit."""

    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="rejects")
    external_id = models.CharField(max_length=120)
    conversation_external_id = models.CharField(max_length=50)
    record = models.JSONField()  # the item fields as generated
    evidence_text = models.JSONField(default=list)  # the dated excerpts the verifier saw
    verdict = models.CharField(max_length=200)
    dropped_by = models.CharField(max_length=50)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_set", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["item_set", "external_id"], name="reject_unique_external_id"),
        ]


class WorkerPing(models.Model):
    """A round trip through the task queue: written by a Celery worker, read by whoever enqueued it.

    Proves that a worker is consuming the configured broker and sees the same database."""

    token = models.CharField(max_length=64, unique=True)  # unique: a redelivered ping writes nothing new
    hostname = models.CharField(max_length=200, blank=True)
    conversations = models.PositiveIntegerField()
    items = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"ping {self.token} from {self.hostname or '?'}"
