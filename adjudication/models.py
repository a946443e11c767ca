"""Adjudication decisions and their history. (Gold keys and errata join this app.)"""

from django.conf import settings
from django.db import models

from annotation.models import Campaign
from items.models import GoldType, Item


class Action(models.TextChoices):
    KEEP = "keep", "keep"
    DROP = "drop", "drop"
    RELABEL = "relabel", "relabel"


class Decision(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="decisions")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="decisions")
    action = models.CharField(max_length=10, choices=Action.choices)
    new_gold = models.CharField(max_length=30, blank=True)  # relabel: a GoldType or a Lapse label
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


__all__ = ["Action", "Decision", "DecisionRevision", "GoldType"]
