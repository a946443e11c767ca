"""LLM council members, prompt versions, runs, votes and gate verdicts."""

from django.conf import settings
from django.db import models

import protocols
from annotation.models import Campaign
from items.models import Item, ItemSet


class CouncilMember(models.Model):
    name = models.CharField(max_length=100, unique=True)  # "openai-gpt-4o"
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=800)
    requests_per_minute = models.PositiveIntegerField(default=60)
    concurrency = models.PositiveSmallIntegerField(default=4)
    is_generator = models.BooleanField(default=False, help_text="Also generated the items (circularity).")
    timeout_seconds = models.FloatField(default=60.0, help_text="Client timeout per request.")

    def __str__(self) -> str:
        return self.name


class CouncilVote(models.Model):
    """One member's answer to one item under one prompt version, in the annotators' answer format."""

    class Status(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="council_votes")
    member = models.ForeignKey(CouncilMember, on_delete=models.PROTECT, related_name="votes")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="council_votes")
    prompt_version = models.CharField(max_length=50)  # "imported" for replayed files
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    values = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    run = models.ForeignKey("CouncilRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="votes")
    attempts = models.PositiveSmallIntegerField(default=0)  # API calls made (0: cache or import)
    # What the endpoint said answered (`model`, `system_fingerprint` of its replies; several, comma-separated,
    # if the steps of one vote differ): a member named "gpt-4o" is served by whichever snapshot is current.
    # Empty for imported votes and for replies cached before these were recorded.
    response_model = models.CharField(max_length=400, blank=True)
    system_fingerprint = models.CharField(max_length=400, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "member", "item", "prompt_version"], name="vote_unique_member_item_prompt"
            ),
        ]


class GateVerdict(models.Model):
    item_set = models.ForeignKey(ItemSet, on_delete=models.CASCADE, related_name="gate_verdicts")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gate_verdicts")
    gate = models.CharField(max_length=50)
    passed = models.BooleanField()
    blocking = models.BooleanField(default=True)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "gate"], name="gate_verdict_unique")]


class PromptVersion(models.Model):
    """A versioned council prompt. Its `name` is what CouncilVote.prompt_version records; templates are
    frozen once votes exist under them (a change is a new version)."""

    name = models.CharField(max_length=50, unique=True)  # "twist-b-v1"
    # No default: a prompt is always of the protocol it was written for (council.services.prompt_version_default).
    protocol = models.CharField(max_length=10, choices=protocols.protocol_choices)
    system = models.TextField()
    phase1 = models.TextField(help_text="Phase 1 template: {recipient}, {draft}, {excerpts}, {schema}.")
    phase2 = models.TextField(help_text="Phase 2 template: {questions}, {quote_block}, {index_block}, {schema}.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class CouncilRun(models.Model):
    """One council run: every chosen member answers every item of the campaign under one prompt version."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        CANCELLED = "cancelled", "cancelled"
        STALLED = "stalled", "stalled"  # cannot finish by itself; `stalled_reason` says why

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="council_runs")
    members = models.ManyToManyField(CouncilMember, related_name="runs")
    prompt_version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    cancelled = models.BooleanField(default=False)
    total_items = models.PositiveIntegerField(default=0)
    members_count = models.PositiveSmallIntegerField(default=0)  # fixed at start: expected rows = items × members
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    stalled_reason = models.TextField(blank=True)
    # Each member's configuration when the run started ({name: {model, base_url, temperature, ...}}): a
    # member edited later does not rewrite what produced this run's votes.
    member_config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} on {self.campaign_id}"


class CouncilBatch(models.Model):
    """One member's share of a run, a slice of its items: the unit one task works on.

    The broker message is only a wake-up; this row says who works on the batch (`holder`, a task id, until
    `lease_until`, after which the holder is presumed dead) and when it was last sent, so the sweep can
    tell a batch that is queued or in flight from one whose message or worker was lost."""

    run = models.ForeignKey(CouncilRun, on_delete=models.CASCADE, related_name="batches")
    member = models.ForeignKey(CouncilMember, on_delete=models.CASCADE, related_name="+")
    item_ids = models.JSONField(default=list)
    holder = models.CharField(max_length=255, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    resends = models.PositiveIntegerField(default=0)  # times the sweep had to send it again (work was lost)
    finished = models.BooleanField(default=False)
    # Set while the batch waits to retry after a transient error (a 429, a 5xx, a timeout), so that the
    # run page can say why a member is not moving; stale once the time has passed.
    waiting_until = models.DateTimeField(null=True, blank=True)
    waiting_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "finished"], name="council_batch_open")]


class ResponseCache(models.Model):
    """A raw completion keyed by model and the hash of the exact messages sent: a re-run never calls again."""

    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    content = models.TextField()
    response_model = models.CharField(max_length=200, blank=True)  # as the endpoint reported it
    system_fingerprint = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "prompt_hash"], name="response_cache_unique")]


class MemberSlot(models.Model):
    """One of a member's `concurrency` call slots, leased by a task id until `expires_at`.

    A lease in the database (not in the broker or in process memory) works with every broker and with
    SQLite, and a redelivered task reclaims its own lease after a worker is killed."""

    member = models.ForeignKey(CouncilMember, on_delete=models.CASCADE, related_name="slots")
    index = models.PositiveSmallIntegerField()
    holder = models.CharField(max_length=255, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["member", "index"], name="member_slot_unique")]


class MemberPace(models.Model):
    """Rate limit: the earliest time the member's next request may start (requests spaced 60/rpm s)."""

    member = models.OneToOneField(CouncilMember, on_delete=models.CASCADE, related_name="pace")
    next_at = models.FloatField(default=0.0)  # unix seconds
