"""Versioned gold keys, their entries and errata.

A frozen key is content-addressed (sha256 over its canonical JSONL) and cannot change: the database
itself refuses UPDATE/DELETE of a frozen key and any INSERT/UPDATE/DELETE of its entries (triggers
installed by this app's migrations, whose SQL keys/triggers.py re-exports for tests). Corrections go
through errata into a new, derived key; the parent stays byte-identical.
"""

import re

from django.conf import settings
from django.db import models
from django.utils import timezone

import protocols
from annotation.models import Campaign
from items.models import Benchmark, Item

# What a key version may be: it names the release's zip and its folder in it, the download's file name,
# every URL of the key, and every score cites it. keys.services.key_version_check refuses anything else
# with a message; the database refuses it too (keys/migrations/0015_goldkey_version_plain.py).
VERSION_PATTERN = re.compile(r"[A-Za-z0-9][-A-Za-z0-9._+]*")
VERSION_MAX_LENGTH = 50


class GoldKey(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        FROZEN = "frozen", "frozen"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="gold_keys")
    kind = models.CharField(max_length=10, choices=protocols.kind_choices)
    version = models.CharField(max_length=VERSION_MAX_LENGTH, unique=True)  # "TWIST-v1.0": what every score cites
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    campaign = models.ForeignKey(Campaign, null=True, blank=True, on_delete=models.PROTECT, related_name="gold_keys")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    notes = models.TextField(blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    # Derived keys: one record per changed item {item, before, after, erratum, kind, reason}.
    changelog = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "adjudication_goldkey"  # created by the adjudication app; kept so databases migrate in place
        ordering = ["benchmark", "version"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status="draft") | (~models.Q(sha256="") & models.Q(frozen_at__isnull=False)),
                name="goldkey_frozen_has_hash",
            ),
        ]

    def __str__(self) -> str:
        return self.version

    @property
    def is_frozen(self) -> bool:
        return self.status == self.Status.FROZEN


class KeyPublication(models.Model):
    """A frozen key made public: until an author publishes it, a frozen key is sealed but embargoed (its
    pages, files and API are for authors only), so that a reliability pass over it stays blind whether its
    annotators are signed in or not. A row of its own, written once: the frozen key's row never changes, and
    the database refuses an update or delete of a publication and one of a key that is not frozen."""

    key = models.OneToOneField(GoldKey, on_delete=models.PROTECT, primary_key=True, related_name="publication")
    published_at = models.DateTimeField(default=timezone.now)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return f"publication of {self.key_id}"


class Provenance(models.TextChoices):
    KEPT_UNANIMOUS = "kept_unanimous", "kept unanimous"
    KEPT_AFTER_ADJUDICATION = "kept_after_adjudication", "kept after adjudication"
    RELABELLED = "relabelled", "relabelled in adjudication"
    ADDED_BY_ERRATUM = "added_by_erratum", "added by erratum"
    CHANGED_BY_ERRATUM = "changed_by_erratum", "changed by erratum"


class KeyEntry(models.Model):
    """One item of a key, with its final gold. Every field here is covered by the key's hash."""

    # No index of its own: the unique (key, external_id) pair leads with key_id and serves every lookup
    # by key; a second index only cost each of a freeze's 100,000 inserts.
    key = models.ForeignKey(GoldKey, on_delete=models.CASCADE, related_name="entries", db_index=False)
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="key_entries")
    external_id = models.CharField(max_length=120)
    gold = models.CharField(max_length=30)  # TWIST gold type or Lapse label
    evidence = models.JSONField(default=list, blank=True)  # cited turn ids, in order
    quote = models.TextField(blank=True)
    family = models.CharField(max_length=100, blank=True)
    history_turns = models.PositiveIntegerField(null=True, blank=True)
    provenance = models.CharField(max_length=30, choices=Provenance.choices)
    # The item's content fields the protocol freezes into its entries (its key fields sourced
    # "content.<field>"), as {field: value}. NULL where the protocol freezes none, and for entries frozen
    # before it did: their records are built as they were, so their keys still verify. Nullable with no
    # default so that adding it is an ALTER TABLE on SQLite too, which keeps the table's triggers.
    detail = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "adjudication_keyentry"  # created by the adjudication app; kept so databases migrate in place
        ordering = ["key", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["key", "external_id"], name="keyentry_unique_external_id"),
        ]

    def __str__(self) -> str:
        return f"{self.key_id}:{self.external_id}"


class Erratum(models.Model):
    class Kind(models.TextChoices):
        DROP = "drop", "drop the item"
        RELABEL = "relabel", "relabel the gold"
        FIX_EVIDENCE = "fix-evidence", "fix the evidence"
        FIX_QUOTE = "fix-quote", "fix the quote"
        # value: the frozen key version (of another campaign) whose kept item is added, with its trail
        ADD = "add", "add an item from another frozen key"
        # item_external_id: a shared question (items.Context) that several items cite; value: its corrected
        # reference (gold) answer. Every entry citing it is re-judged against it (`rejudged`).
        FIX_REFERENCE = "fix-reference", "fix the reference answer of a question (its answers are re-judged)"

    class Status(models.TextChoices):
        FILED = "filed", "filed"
        ACCEPTED = "accepted", "accepted"
        REJECTED = "rejected", "rejected"

    key = models.ForeignKey(GoldKey, on_delete=models.PROTECT, related_name="errata")
    item_external_id = models.CharField(max_length=120)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    value = models.TextField(blank=True)  # relabel: new gold; fix-evidence: comma-separated ids; fix-quote: text
    description = models.TextField()
    filed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    filed_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.FILED)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    applied_in = models.ForeignKey(
        GoldKey, null=True, blank=True, on_delete=models.PROTECT, related_name="applied_errata"
    )
    # A fix-reference erratum's re-judged entries, set when an author accepts it: entry external id ->
    # {"gold": the label the author confirmed against the corrected reference, "suggested": an LLM judge's
    # verdict shown beside it ('' : none asked), "judge": the member that suggested it}.
    rejudged = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "adjudication_erratum"  # created by the adjudication app; kept so databases migrate in place
        ordering = ["key", "id"]
        verbose_name_plural = "errata"

    def __str__(self) -> str:
        return f"erratum {self.pk} on {self.key_id}:{self.item_external_id}"


class Release(models.Model):
    """A frozen key's release bundle, rendered once at the freeze and served as the same bytes forever.
    `sha256` is the hash of its MANIFEST.sha256, which lists the hash of every other file: one value
    names the whole release (the ETag of every download)."""

    key = models.OneToOneField(GoldKey, on_delete=models.PROTECT, related_name="release")
    sha256 = models.CharField(max_length=64)
    sealed_at = models.DateTimeField(default=timezone.now)
    # The bundle format it was rendered in (keys.bundle.FORMATS); null: sealed before formats were
    # recorded, which is format 1. Nullable so that adding it rewrites no sealed row.
    format = models.PositiveSmallIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"release of {self.key.version}"


class ReleaseFile(models.Model):
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="files")
    path = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)  # of the file's bytes, as listed in MANIFEST.sha256
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()  # a Zstandard frame, or a zlib stream if sealed before (keys/releases.py)

    class Meta:
        ordering = ["release", "path"]
        constraints = [models.UniqueConstraint(fields=["release", "path"], name="releasefile_unique_path")]

    def __str__(self) -> str:
        return self.path


class ReliabilityPass(models.Model):
    """A campaign over a frozen key's items by annotators who were not in the key's campaign: its kappa
    against the key and against each original annotator is the independent reliability estimate for
    that key version (the kept-set kappa is conditioned on the adjudicated selection; this is not)."""

    key = models.ForeignKey(GoldKey, on_delete=models.PROTECT, related_name="reliability_passes")
    campaign = models.OneToOneField(Campaign, on_delete=models.PROTECT, related_name="reliability_pass")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # Started on a published key, with the author's acknowledgment: its annotators could read the gold
    # they are measured against, and the report says so.
    key_public_during_pass = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"reliability pass {self.campaign_id} over {self.key_id}"


class KeyJob(models.Model):
    """A build, freeze or derive started from the web, run by a worker (keys/jobs.py): the page polls it.
    One open job per target, by the database: a double click or a second tab shows the running one."""

    class Action(models.TextChoices):
        BUILD = "build", "build a draft"
        FREEZE = "freeze", "freeze a draft"
        DERIVE = "derive", "derive the next version"

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    OPEN = (Status.QUEUED, Status.RUNNING)

    action = models.CharField(max_length=10, choices=Action.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # What one job at a time is enforced on: "campaign:<id>" for a build or freeze (both rewrite the
    # campaign's key line, under its lock), "key:<id>" for a derive from a parent.
    target = models.CharField(max_length=40)
    campaign = models.ForeignKey(Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    key = models.ForeignKey(GoldKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")  # draft / parent
    version = models.CharField(max_length=VERSION_MAX_LENGTH)  # the version built, frozen or derived
    notes = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stage = models.CharField(max_length=60, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)  # the service's refusal, or a plain line for an unexpected error
    result = models.ForeignKey(GoldKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["target"], condition=models.Q(status__in=["queued", "running"]), name="keyjob_one_open_per_target"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.version} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN
