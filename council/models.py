"""LLM council members, prompt versions, runs, votes and gate verdicts."""

from django.db import models

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
