"""Admin for system runs, their predictions and score-level ingests: read-only records of what a system
said (they come from `score_import`), shown to authors and admins only, by the same role rule as the corpus
admin (items.admin.RoleAdminMixin)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from items.admin import RoleAdminMixin
from scoring.models import RunPrediction, ScoreLevelIngest, SystemRun


@admin.register(SystemRun)
class SystemRunAdmin(RoleAdminMixin, admin.ModelAdmin):
    """A run is imported with its file's hash and never edited by hand: a changed prediction would be a
    score nobody ran. Its predictions are a linked list (100,000 rows do not fit an inline)."""

    read_only_reason = "A system run is imported with manage.py score_import, with its file's hash; it is never edited."
    list_display = ["id", "key", "system", "configuration", "ingest", "source_name", "imported_by", "imported_at"]
    list_filter = ["key", "system"]
    list_select_related = ["key", "imported_by"]
    search_fields = ["system", "configuration", "source_name"]
    fields = ["key", "system", "configuration", "ingest", "metadata", "source_name", "source_sha256", "imported_by",
              "imported_at", "predictions_link", "scores_link"]
    readonly_fields = fields

    @admin.display(description="predictions")
    def predictions_link(self, obj):
        url = reverse("admin:scoring_runprediction_changelist")
        return format_html('<a href="{}?run__id__exact={}">{} predictions</a>', url, obj.pk, obj.predictions.count())

    @admin.display(description="scores")
    def scores_link(self, obj):
        return format_html('<a href="{}">{} against {}</a>', reverse("scoring:score-run", args=[obj.key.version, obj.pk]),
                           obj.name, obj.key.version)


@admin.register(RunPrediction)
class RunPredictionAdmin(RoleAdminMixin, admin.ModelAdmin):
    read_only_reason = "Predictions come with their system run (manage.py score_import) and are never edited."
    list_display = ["item_external_id", "run", "aligned", "evidence", "attributed", "cited_fact_only"]
    list_filter = ["run"]
    list_select_related = ["run__key"]
    search_fields = ["=item_external_id"]
    fields = ["run", "item_external_id", "aligned", "evidence", "attributed", "cited_fact_only"]
    readonly_fields = fields
    list_per_page = 200


@admin.register(ScoreLevelIngest)
class ScoreLevelIngestAdmin(RoleAdminMixin, admin.ModelAdmin):
    """Imported with `score_import --format scores`, as given; read-only like the runs."""

    read_only_reason = "Score-level ingests are imported with manage.py score_import --format scores, as given."
    list_display = ["id", "key", "system", "configuration", "ingest", "scores", "source_name", "imported_at"]
    list_filter = ["key"]
    list_select_related = ["key"]
    fields = ["key", "system", "configuration", "ingest", "scores", "note", "metadata", "source_name", "source_sha256",
              "imported_by", "imported_at"]
    readonly_fields = fields
