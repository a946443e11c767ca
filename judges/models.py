"""A judge's decoy calibration (TWIST §5.2, Appendix C): the mixed set it graded and what it said; the designed
sample of judged answers a campaign was drawn as."""

from django.conf import settings
from django.db import models

from annotation.models import Campaign
from council.models import CouncilMember
from items.models import ItemSet


class JudgeCalibration(models.Model):
    """One calibration run of one judge on the decoy set built from an item set. Written once, never
    changed: a new run is a new row, and the latest per judge is what pages show beside its labels."""

    item_set = models.ForeignKey(ItemSet, on_delete=models.PROTECT, related_name="judge_calibrations")
    member = models.ForeignKey(CouncilMember, null=True, on_delete=models.SET_NULL, related_name="calibrations")
    judge = models.CharField(max_length=100)  # the member's name when it ran
    judge_model = models.CharField(max_length=200, blank=True)  # the member's model when it ran
    response_models = models.CharField(max_length=400, blank=True)  # what the endpoint said answered
    template_version = models.CharField(max_length=50)
    seed = models.BigIntegerField()
    # Per class {"n", "rejected", "rate", "wilson"}, the gold answers' acceptance, "admissible" and the bar.
    results = models.JSONField(default=dict)
    # The graded set: the records (with their class and version) and each reply, keyed by record id.
    records = models.JSONField(default=list)
    replies = models.JSONField(default=dict)
    admissible = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["judge_model", "created_at"], name="calibration_by_model")]

    def __str__(self) -> str:
        return f"{self.judge} on {self.item_set_id} ({self.template_version})"


class JudgedSample(models.Model):
    """The designed sample a campaign over judged answers was drawn as (judges.sampling): which answers
    people read, out of which population, and with what weights. Written once with its campaign; the key's
    datasheet carries the design and the audit weights its figures back to the population with it."""

    campaign = models.OneToOneField(Campaign, on_delete=models.PROTECT, related_name="judged_sample")
    seed = models.BigIntegerField()
    half_width = models.FloatField()
    oversample = models.FloatField()
    # JSON-ready (judges.sampling.Sample.design): method, seed, half-width, sizes, strata with their weights.
    design = models.JSONField(default=dict)
    # The population as it was when drawn: [run, question id, question type, abstention, disputed, item id],
    # so that an import into the item set afterwards cannot change what the figures are weighted back to.
    population = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"sample of {self.campaign_id} (seed {self.seed})"
