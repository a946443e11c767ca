"""Lapse scorer labels: what an automatic scorer (the rule cascade, the LLM judge) said about one output.

An item's `hidden` JSON is the record it was imported or built with (conditions, and any labels the
file itself carried, e.g. the released battery's `cascade`); Goldkey's own scorers never rewrite it.
Their labels live here, one row per item and scorer: re-running a scorer replaces its row.
The automatic label is not stored: `lapse.judge.automatic_label` derives it from these rows, so a
new judge label or a changed rule can never leave a stale copy behind.
"""

from django.db import models

from items.models import Item


class Scorer(models.TextChoices):
    CASCADE = "cascade", "Rule cascade"
    JUDGE = "judge", "LLM judge"


class ScorerLabel(models.Model):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="scorer_labels")
    scorer = models.CharField(max_length=20, choices=Scorer.choices)
    label = models.CharField(max_length=40)
    # The judge: which council member gave the label, under which prompt version.
    member = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    # Cascade: {"rule": the rule that fired}; judge: {"raw": the reply, cut to 2000 characters}.
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id", "scorer"]
        constraints = [models.UniqueConstraint(fields=["item", "scorer"], name="lapse_scorer_label_once_per_item")]

    def __str__(self) -> str:
        return f"{self.item_id} {self.scorer}: {self.label}"
