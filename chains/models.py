"""A stored TWIST Track C run: a memory system's free-text answers to a frozen Track C key, graded once by a judge
that was admissible on Track C decoys when it graded them (docs/twist_c.md).

What is stored is what costs a judge's calls and cannot be recomputed without them: the judge's two yes / no grades
per answered item, with the judge pinned (its name, model, judge prompt version and the calibration that admitted
it). Every figure is computed from these grades and the key's chains when a report is asked for
(`chains.selectors.chain_run_reports`), the way Track B's runs are (scoring/models.py)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from council.models import CouncilMember
from judges.models import JudgeCalibration
from keys.models import GoldKey


class ChainRun(models.Model):
    key = models.ForeignKey(GoldKey, on_delete=models.PROTECT, related_name="chain_runs")
    system = models.CharField(max_length=100)  # the memory system and configuration, as its authors name it
    source_name = models.CharField(max_length=255)
    source_sha256 = models.CharField(max_length=64)  # the answers file's bytes
    # The judge as it graded: a member may later change its model or be removed; the run keeps what graded it.
    member = models.ForeignKey(CouncilMember, null=True, on_delete=models.SET_NULL, related_name="+")
    judge = models.CharField(max_length=100)
    judge_model = models.CharField(max_length=200)
    judge_prompt_version = models.CharField(max_length=50)
    calibration = models.ForeignKey(JudgeCalibration, on_delete=models.PROTECT, related_name="chain_runs")
    # {item external id: {"gold": bool, "stale": bool}}, answered items only ("stale" only for update chains):
    # an unanswered item counts as "other" in every report.
    grades = models.JSONField(default=dict)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["key", "id"]
        constraints = [models.UniqueConstraint(fields=["key", "system"], name="chainrun_unique_per_key")]

    def __str__(self) -> str:
        return f"{self.system} on {self.key_id} (judged by {self.judge})"
