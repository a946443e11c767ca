"""Adjudication decisions and their history, and the stored queue. (Gold keys live in the keys app.)"""

from django.conf import settings
from django.db import models

from annotation.models import Campaign
from items.models import Item


class Action(models.TextChoices):
    KEEP = "keep", "keep"
    DROP = "drop", "drop"
    RELABEL = "relabel", "relabel"


class Decision(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="decisions")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="decisions")
    action = models.CharField(max_length=10, choices=Action.choices)
    new_gold = models.CharField(max_length=30, blank=True)  # relabel: one of the protocol's gold values
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)
    revision = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "item"], name="decision_unique_item")]


class DecisionRevision(models.Model):
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="history")
    revision = models.PositiveIntegerField()
    action = models.CharField(max_length=10, choices=Action.choices)
    new_gold = models.CharField(max_length=30, blank=True)
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["decision", "revision"]


class QueueItem(models.Model):
    """One item of a campaign as the adjudication queue sees it: its queue reasons and suggestion,
    computed by the queue's one rule (`selectors.queue_from_data`) and stored so that the queue pages
    read a page of rows instead of recomputing the campaign. Kept current by `services.queue_sync`.

    Every item of the campaign has a row (queued or not): `ordinal` is its place in external-id order,
    fixed when the queue is built, and `sort_key` = the suggestion's rank · 2³² + ordinal, so that the
    queue order (drop suggestions first, then by item id) is one indexed column: no database collation
    has to agree with Python's on the ids, and the next undecided item is one index seek.
    `place`: a queued entry's index in that order (from 0), so that "item 12 of 300", a page of the
    queue and an item's neighbours are index lookups, not a count that grows with the place; renumbered
    (one statement) by the build and by a refresh that changes which items are queued or their order.
    `decided`: the item has a decision (any path that writes one: see `services.queue_sync`)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="queue_items")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    ordinal = models.PositiveIntegerField()
    sort_key = models.BigIntegerField()
    queued = models.BooleanField(default=False)
    place = models.PositiveIntegerField(default=0)  # meaningful only while queued
    reasons = models.JSONField(default=list)
    suggestion = models.CharField(max_length=10, blank=True)
    suggestion_why = models.TextField(blank=True)
    blocking = models.BooleanField(default=False)  # queued for a human reason (holds a key back)
    decided = models.BooleanField(default=False)
    # The council's §4 band against the gold, for the queue page's filter ('' without a council). The page
    # offers the filter only where the protocol does not seal detector labels (ProtocolSpec.detectors_sealed).
    band = models.CharField(max_length=24, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "item"], name="queue_item_unique_item"),
            models.UniqueConstraint(fields=["campaign", "ordinal"], name="queue_item_unique_ordinal"),
        ]
        # Partial indexes: a boolean column in an index prefix is no help on SQLite, which reads
        # `WHERE queued` as an expression, not an equality it can seek on.
        indexes = [
            models.Index(fields=["campaign", "sort_key"], condition=models.Q(queued=True), name="queue_item_order"),
            models.Index(fields=["campaign", "place"], condition=models.Q(queued=True), name="queue_item_place"),
            # The next undecided item (a seek), and the decision counts read from the index alone.
            models.Index(fields=["campaign", "sort_key", "blocking"], condition=models.Q(queued=True, decided=False),
                         name="queue_item_undecided"),
        ]


class QueueState(models.Model):
    """What the stored queue of one campaign was built from, and its figures cache.

    `votes_mark` / `answers_mark` / `decisions_mark`: every council vote / answer revision / decision with
    an id up to the mark is in the stored entries; `*_seen` the ids above it already applied (see
    `services.queue_sync` for why the mark lags). `version` changes with every change to the entries and
    every decision (on the service path at once, on any other path at the next sync): it is the state
    token of the cached counts and figures."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, primary_key=True, related_name="queue_state")
    n_items = models.PositiveIntegerField(default=0)
    n_queued = models.PositiveIntegerField(default=0)
    council_members = models.JSONField(default=list)  # every member with a counted vote, sorted
    votes_mark = models.BigIntegerField(default=0)
    votes_seen = models.JSONField(default=list)
    answers_mark = models.BigIntegerField(default=0)
    answers_seen = models.JSONField(default=list)
    decisions_mark = models.BigIntegerField(default=0)
    decisions_seen = models.JSONField(default=list)
    answers_final = models.BooleanField(default=False)  # the campaign was closed when the marks were last read
    version = models.PositiveBigIntegerField(default=0)
    # The queue page's decision counts and protocol figures, as of `counts_version` / `figures_version`.
    n_decided = models.PositiveIntegerField(default=0)
    n_undecided = models.PositiveIntegerField(default=0)
    counts_version = models.BigIntegerField(default=-1)
    figures = models.JSONField(default=dict, blank=True)
    figures_version = models.BigIntegerField(default=-1)
    built_at = models.DateTimeField(auto_now_add=True)


__all__ = ["Action", "Decision", "DecisionRevision", "QueueItem", "QueueState"]
