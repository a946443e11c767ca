"""A system's runs against a frozen key version, their per-item predictions, and score-level-only ingests.

Scores cite keys; keys do not know scores. Only what a system said is stored; every figure is computed from
these rows and the key's entries when a report is asked for (scoring/selectors.py). The tables were created
by the keys app and keep their names: the models moved here with state-only migrations, so an existing
database migrates in place (scoring/migrations/0001_runs_from_keys.py).
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from keys.models import GoldKey


def run_base_name(system: str, configuration: str) -> str:
    """The system and configuration, as the released results name them ("flatrag:openai")."""
    return f"{system}:{configuration}" if configuration else system


def run_name(system: str, configuration: str, ingest: int) -> str:
    """What a report calls a run or a score-level ingest: ingests after the first carry their number."""
    base = run_base_name(system, configuration)
    return base if ingest == 1 else f"{base}@ingest{ingest}"


class _RunNames:
    """The names a run of a system is reported under (SystemRun and ScoreLevelIngest alike)."""

    @property
    def base_name(self) -> str:
        return run_base_name(self.system, self.configuration)

    @property
    def name(self) -> str:
        return run_name(self.system, self.configuration, self.ingest)


class SystemRun(_RunNames, models.Model):
    """One system configuration's predictions on every item of the key version it cites."""

    class ProducedBy(models.TextChoices):
        # TWIST §8: a benchmark claim needs N >= 2 external systems run by their own authors; a run the
        # key's authors made of someone's system (or of their own) is not one of those.
        SYSTEM_AUTHORS = "system_authors", "the system's own authors, independent of the key's authors"
        KEY_AUTHORS = "key_authors", "the key's authors"
        UNSTATED = "unstated", "not stated"

    key = models.ForeignKey(GoldKey, on_delete=models.PROTECT, related_name="system_runs")
    system = models.CharField(max_length=100)  # e.g. "flatrag" or "mindtwin"
    configuration = models.CharField(max_length=100, blank=True)  # e.g. "openai"; blank when there is one
    ingest = models.PositiveSmallIntegerField(default=1)  # several ingests of one system are separate runs
    metadata = models.JSONField(default=dict, blank=True)  # model, date, commit, …: free, never scored
    produced_by = models.CharField(max_length=20, choices=ProducedBy.choices, default=ProducedBy.UNSTATED)
    source_name = models.CharField(max_length=255)
    source_sha256 = models.CharField(max_length=64)  # the imported file's bytes
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "keys_systemrun"  # created by the keys app; kept so databases migrate in place
        ordering = ["key", "id"]  # import order: the McNemar table's `a` is the run imported first
        constraints = [
            models.UniqueConstraint(fields=["key", "system", "configuration", "ingest"], name="systemrun_unique_per_key"),
            models.CheckConstraint(condition=models.Q(ingest__gte=1), name="systemrun_ingest_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.key_id}"


class RunPrediction(models.Model):
    """A system's output for one key item. `evidence` is null when the run only reports the outcome of
    the attribution check (the released results format); then `attributed` and `cited_fact_only` say it."""

    run = models.ForeignKey(SystemRun, on_delete=models.CASCADE, related_name="predictions")
    item_external_id = models.CharField(max_length=120)  # the key item's id: the run can be scored against a later version
    aligned = models.BooleanField()  # False = flagged as contradicting
    evidence = models.JSONField(null=True, blank=True)  # cited ids, best first
    attributed = models.BooleanField(null=True, blank=True)
    cited_fact_only = models.BooleanField(null=True, blank=True)

    class Meta:
        db_table = "keys_runprediction"  # created by the keys app; kept so databases migrate in place
        ordering = ["run", "item_external_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item_external_id"], name="runprediction_unique_item"),
        ]
        indexes = [
            # The report reads attribution outcomes only where a run recorded them (the released results
            # format): without this index that read scans every prediction of every run.
            models.Index(
                fields=["run"],
                condition=models.Q(attributed__isnull=False) | models.Q(cited_fact_only__isnull=False),
                name="runprediction_outcome_set",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.item_external_id}"


class ScoreLevelIngest(_RunNames, models.Model):
    """The figures a system reported for one ingest whose per-item outputs were lost (the released
    `track_b_results_v1.0_ingest2_scores.json`): points of the report's multi-ingest section, never a
    run. They are the system's own numbers against the key version they cite, shown as given: there is no
    item to rescore, so they do not move to another version either."""

    key = models.ForeignKey(GoldKey, on_delete=models.PROTECT, related_name="score_level_ingests")
    system = models.CharField(max_length=100)
    configuration = models.CharField(max_length=100, blank=True)
    ingest = models.PositiveSmallIntegerField(default=1)
    scores = models.JSONField()  # {"CR": 0.421, "AS": …}: the report's metric names, each in [0, 1]
    note = models.TextField(blank=True)  # the file's own account of why only scores survive
    metadata = models.JSONField(default=dict, blank=True)
    source_name = models.CharField(max_length=255)
    source_sha256 = models.CharField(max_length=64)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "keys_scorelevelingest"  # created by the keys app; kept so databases migrate in place
        ordering = ["key", "id"]
        constraints = [
            models.UniqueConstraint(fields=["key", "system", "configuration", "ingest"], name="scorelevel_unique_per_key"),
            models.CheckConstraint(condition=models.Q(ingest__gte=1), name="scorelevel_ingest_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.name} (scores only) on {self.key_id}"
