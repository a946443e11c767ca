"""Benchmarks, item sets, the LoCoMo corpus, items and generation rejects.

An item is a TWIST Track B draft or a Lapse output. Both kinds live in one table so that campaigns,
answers, decisions and keys treat them alike; which fields an annotator may see is declared once,
in each protocol's spec (protocols/), and every blind view is built from that whitelist.
"""

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


class ItemKind(models.TextChoices):
    """The kinds registered today, as constants for the protocol modules' own apps (lapse, keys). The
    fields below take their choices from the protocol registry, so a new protocol needs no edit here."""

    TWIST = "twist", "TWIST Track B draft"
    LAPSE = "lapse", "Lapse output"


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
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
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


class GoldType(models.TextChoices):
    CONTRADICTING = "contradicting", "contradicting"
    ALIGNED = "aligned", "aligned"
    HARD_NEGATIVE = "hard_negative", "hard negative"


class Item(models.Model):
    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="items")
    kind = models.CharField(max_length=10, choices=protocols.kind_choices)
    external_id = models.CharField(max_length=120)  # TWIST "conv-26:v1b1", Lapse "g001" / battery id
    # TWIST Track B
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.PROTECT, related_name="items"
    )
    recipient = models.CharField(max_length=100, blank=True)
    draft = models.TextField(blank=True)
    gold_type = models.CharField(max_length=20, choices=GoldType.choices, blank=True)
    family = models.CharField(max_length=100, blank=True)
    contradicted_quote = models.TextField(blank=True)
    rationale = models.TextField(blank=True)
    history_turns = models.PositiveIntegerField(null=True, blank=True)
    batch = models.CharField(max_length=20, blank=True)  # "v1b", "v1c", … derived from the id
    # Lapse
    request = models.TextField(blank=True)
    response = models.TextField(blank=True)
    key_fact = models.CharField(max_length=300, blank=True)
    text_released = models.BooleanField(default=True)  # False for gold-trail placeholders
    hidden = models.JSONField(default=dict, blank=True)  # condition metadata and automatic labels
    # A blocking gate rejected this candidate (written by council.gates.gates_run with its verdicts):
    # it is kept for audit and ships as a reject, but no campaign takes it and no key holds it.
    gate_rejected = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)


    class Meta:
        ordering = ["item_set", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["item_set", "external_id"], name="item_unique_external_id"),
        ]
        indexes = [models.Index(fields=["item_set", "gold_type"], name="item_by_type")]

    def __str__(self) -> str:
        return self.external_id

    @property
    def gold_verdict(self) -> str:
        """The primary answer that agrees with the item's gold (its protocol's gold-verdict map)."""
        return protocols.for_kind(self.kind).verdict_of(self.gold_type)


class Evidence(models.Model):
    """A turn cited by a TWIST item, in cited order."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="evidence")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="citations")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "position"], name="evidence_unique_position"),
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
