"""Campaigns, per-annotator seeded assignments, answers and their history."""

from django.conf import settings
from django.db import models

import protocols
from items.models import Item, ItemSet


class Campaign(models.Model):
    class Status(models.TextChoices):
        # The one lifecycle (annotation.services): annotators write only while annotating; an author
        # closes the campaign once every enrollment is submitted (or ends the rest, on the record);
        # decisions are made while closed; freezing a key from it makes everything read-only.
        ANNOTATING = "annotating", "annotating"
        CLOSED = "closed", "closed"
        FROZEN = "frozen", "frozen"

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="campaigns")
    protocol = models.CharField(max_length=10, choices=protocols.protocol_choices)
    per_item = models.PositiveSmallIntegerField(default=2)
    # Seeds agreement bootstraps and, when given explicitly (the released trails' order), the orders.
    seed = models.BigIntegerField()
    # The secret the annotators' orders and item sets are drawn from when no explicit seed was given:
    # 256 random bits kept server-side (never on a page an annotator can reach), published with the
    # release once the campaign is closed (annotation.selectors.order_disclosure). Empty for a campaign
    # whose order was given by its seed. (Nullable rather than defaulted: on SQLite adding a defaulted
    # column rebuilds the table, which would drop the sealing triggers the keys app installs on it.)
    order_secret = models.CharField(max_length=64, null=True, blank=True)
    crisis_block = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ANNOTATING)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    # What the authors tell the annotators of this campaign, in Markdown (rendered without raw HTML:
    # annotation.selectors.guidelines_html), shown on an annotator's first visit and from the item page's
    # help. Changing them shows them again to everyone (guidelines_updated_at). Nullable: see order_secret.
    guidelines = models.TextField(null=True, blank=True)
    guidelines_updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(per_item__gte=1), name="campaign_per_item_positive"),
            models.CheckConstraint(
                condition=models.Q(status="annotating") | models.Q(closed_at__isnull=False),
                name="campaign_closed_has_time",
            ),
            models.CheckConstraint(
                condition=~models.Q(status="frozen") | models.Q(frozen_at__isnull=False),
                name="campaign_frozen_has_time",
            ),
        ]

    def __str__(self) -> str:
        return self.slug


class Enrollment(models.Model):
    """One annotator in one campaign: their seed, pseudonym and milestones (recorded for disclosure)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="enrollments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="enrollments")
    pseudonym = models.CharField(max_length=50)  # "A", "B": the name in released answer files
    # The annotator's own order seed when the campaign's order comes from its explicit seed; null when
    # it comes from the campaign's order secret (a small integer per annotator could be searched).
    order_seed = models.BigIntegerField(null=True, blank=True)

    class OrderSource(models.TextChoices):
        DRAWN = "drawn", "drawn by Goldkey from the campaign's seed or secret"
        IMPORTED = "imported", "answers imported from a file: the order the annotator saw is not known"
        GIVEN = "given", "answers imported, with the seed of the tool that ordered them"

    # Where the order the annotator worked in came from, for the datasheet: an imported answer file says
    # nothing about the order its annotator saw, so the campaign's own seed must not be credited with it.
    order_source = models.CharField(
        max_length=10, choices=OrderSource.choices, default=OrderSource.DRAWN, db_default=OrderSource.DRAWN
    )
    imported_order_seed = models.BigIntegerField(null=True, blank=True)  # with order_source "given"
    phase1_completed_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    crisis_declined_at = models.DateTimeField(null=True, blank=True)
    crisis_notice_seen_at = models.DateTimeField(null=True, blank=True)
    # When the annotator last read the campaign's guidelines through to "Start" (first visit, or after a change).
    guidelines_seen_at = models.DateTimeField(null=True, blank=True)
    # Set when an author closed the campaign with this enrollment still open: the work was ended, not
    # handed in, and the release says so.
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Denormalised progress (kept by answer_save inside its transaction) so that "my work", the item
    # page and every save stay constant-time whatever the campaign size. Completion of a phase is
    # always confirmed by an exact query before it is recorded; these counters are only the hint.
    assigned_count = models.PositiveIntegerField(default=0)
    crisis_count = models.PositiveIntegerField(default=0)
    phase1_done_count = models.PositiveIntegerField(default=0)
    phase2_done_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["campaign", "pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], name="enrollment_unique_annotator"),
            models.UniqueConstraint(fields=["campaign", "pseudonym"], name="enrollment_unique_pseudonym"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.slug}/{self.pseudonym}"


class Assignment(models.Model):
    """Item `item` is the annotator's `position`-th item (a seeded permutation, stored)."""

    # Neither has an index of its own: the unique pair (enrollment, position) serves every lookup by the
    # enrollment (and the cascade), the pair (item, enrollment) every lookup by the item (protecting it
    # from deletion), and each index is one more B-tree that `campaign_create` fills with a row per
    # assignment. On PostgreSQL neither is a foreign key constraint: statement triggers check and lock
    # what every write names (annotation 0011), where a constraint's check per row was half of a
    # 200,000-assignment campaign's creation.
    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="assignments", db_index=False)
    position = models.PositiveIntegerField()
    crisis = models.BooleanField(default=False)
    # Copies of the answer's phase flags, written by answer_save in the transaction that sets the
    # answer's: "resume at the first open item" is then one index scan of the open assignments
    # (the partial indexes below), where reading the answers would walk every answered item first.
    phase1_done = models.BooleanField(default=False, db_default=False)
    phase2_done = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["enrollment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "enrollment"], name="assignment_unique_item"),
            models.UniqueConstraint(fields=["enrollment", "position"], name="assignment_unique_position"),
        ]
        indexes = [
            models.Index(fields=["enrollment", "position"], condition=models.Q(phase1_done=False),
                         name="assignment_open_phase1"),
            models.Index(fields=["enrollment", "position"], condition=models.Q(phase2_done=False),
                         name="assignment_open_phase2"),
        ]


class Answer(models.Model):
    """The current answer for one assignment: `values` holds the protocol's keys (q1, q1note, …)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="answer")
    values = models.JSONField(default=dict)
    time_on_item_ms = models.PositiveBigIntegerField(default=0)
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    phase1_done = models.BooleanField(default=False)
    phase2_done = models.BooleanField(default=False)
    # When the answer last changed ("ts" of the released Lapse files; set from the file on import).
    answered_at = models.DateTimeField(null=True, blank=True)
    # Fields of an imported released record that Goldkey does not interpret (e.g. Lapse "ui"),
    # kept so that an export gives back the file that was imported.
    extra = models.JSONField(default=dict, blank=True)


class AnswerRevision(models.Model):
    """Every save, kept: no save ever erases an earlier answer without trace."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="history")
    revision = models.PositiveIntegerField()
    values = models.JSONField()
    source = models.CharField(max_length=20)  # "web", "api", "import"
    saved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    saved_at = models.DateTimeField(auto_now_add=True)
    # Which page wrote it (a random id per loaded item page) and that page's running number: a change
    # from another page over a newer revision is a conflict (answer_save), and a page's own older
    # request overtaken on the network by its newer one is not applied after it.
    writer = models.CharField(max_length=40, null=True, blank=True)  # nullable: see Campaign.order_secret
    writer_seq = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["answer", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "revision"], name="answer_revision_unique"),
        ]


class Skip(models.Model):
    """The annotator explicitly skipped this item in this phase (annotation.services.assignment_skip): it
    stays unanswered, and Resume and the next skip pass over it until the rest of the phase is answered.
    Its own table: assignments are written in bulk by campaign_create, and a skip is rare."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="skips")
    phase = models.PositiveSmallIntegerField()
    skipped_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assignment", "phase"], name="skip_unique_phase")]


class Preferences(models.Model):
    """How one user wants the keyboard to behave on the annotation and adjudication pages. Kept per user
    (every device, every session); copied into the session at login and on change, so that a page reads
    it without a query (annotation.selectors.session_preferences)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="goldkey_preferences")
    # Off: no letter, digit or symbol key does anything by itself (WCAG 2.1.4); buttons, links and Tab
    # still reach everything.
    single_key_shortcuts = models.BooleanField(default=True)
    # On: the item page moves to the next item once every choice question of the phase is answered.
    auto_advance = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)
