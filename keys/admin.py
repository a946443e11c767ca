"""Admin for gold keys, errata and system runs. Frozen keys are read-only here (and in the database);
runs and their predictions are read-only records of what a system said (they come from `score_import`),
shown to authors and admins only, by the same role rule as the corpus admin (items.admin.RoleAdminMixin)."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html

from annotation.access import blind_campaigns
from annotation.models import Campaign
from goldkey.errors import ApplicationError
from items.admin import RoleAdminMixin
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import Erratum, GoldKey, KeyEntry, RunPrediction, ScoreLevelIngest, SystemRun


class KeyEntryInline(admin.TabularInline):
    model = KeyEntry
    extra = 0
    can_delete = False
    show_change_link = False
    fields = ["external_id", "gold", "evidence", "quote", "family", "history_turns", "provenance"]
    readonly_fields = fields
    max_num = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GoldKey)
class GoldKeyAdmin(admin.ModelAdmin):
    list_display = ["version", "benchmark", "status", "parent", "frozen_at", "sha256"]
    list_filter = ["status", "benchmark"]
    actions = ["freeze_drafts", "derive_next_versions"]
    inlines = [KeyEntryInline]

    def get_queryset(self, request):
        # A draft is built from a campaign's decisions: not for an author who is still blind to it.
        qs = super().get_queryset(request)
        return qs.exclude(status=GoldKey.Status.DRAFT, campaign__in=blind_campaigns(request.user)).exclude(
            campaign__in=key_selectors.key_lines_hidden_from(request.user)
        )

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []  # entries come from the campaign, not a form

    def get_fields(self, request, obj=None):
        if obj is None:  # a key is made from a campaign: benchmark, kind and entries follow from it
            return ["campaign", "version", "notes"]
        return super().get_fields(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "campaign":
            kwargs["queryset"] = Campaign.objects.filter(status=Campaign.Status.CLOSED).exclude(
                pk__in=blind_campaigns(request.user)
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        try:
            built = key_services.key_build(
                campaign=form.cleaned_data["campaign"], version=form.cleaned_data["version"], user=request.user,
                notes=form.cleaned_data.get("notes", ""),
            )
        except ApplicationError as exc:
            raise ValidationError(exc.message) from exc
        obj.pk = built.pk
        obj.__dict__.update({k: v for k, v in built.__dict__.items() if not k.startswith("_")})

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_frozen:
            return [f.name for f in self.model._meta.fields]
        return ["status", "sha256", "frozen_at", "frozen_by", "manifest", "changelog", "parent"]

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.is_frozen:
            return False  # view only; a change POST is refused with 403
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_frozen:
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # bulk delete would bypass the per-object check
        return actions

    @admin.action(description="Freeze the selected draft keys (irreversible)")
    def freeze_drafts(self, request, queryset):
        for key in queryset.filter(status=GoldKey.Status.DRAFT).select_related("campaign"):
            try:
                frozen = key_services.key_freeze_draft(key=key, user=request.user)
            except ApplicationError as exc:
                self.message_user(request, f"{key.version}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{frozen.version} frozen: {frozen.sha256}", messages.SUCCESS)

    @admin.action(description="Derive the next version from accepted errata")
    def derive_next_versions(self, request, queryset):
        for parent in queryset.filter(status=GoldKey.Status.FROZEN):
            try:
                key = key_services.key_derive(
                    parent=parent, version=key_services.next_version(parent.version), user=request.user
                )
            except ApplicationError as exc:
                self.message_user(request, f"{parent.version}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{key.version} derived from {parent.version}: {len(key.changelog)} change(s)", messages.SUCCESS)


@admin.register(Erratum)
class ErratumAdmin(admin.ModelAdmin):
    list_display = ["id", "key", "item_external_id", "kind", "status", "filed_by", "decided_by", "applied_in"]
    list_filter = ["status", "kind"]
    readonly_fields = ["key", "item_external_id", "kind", "value", "description", "filed_by", "filed_at", "status",
                       "decided_by", "decided_at", "decision_note", "applied_in"]

    def has_add_permission(self, request):
        return False  # filed through the key page, the API or `erratum_file` (validated there)


@admin.register(SystemRun)
class SystemRunAdmin(RoleAdminMixin, admin.ModelAdmin):
    """A run is imported with its file's hash and never edited by hand: a changed prediction would be a
    score nobody ran. Its predictions are a linked list (100,000 rows do not fit an inline)."""

    list_display = ["id", "key", "system", "configuration", "ingest", "source_name", "imported_by", "imported_at"]
    list_filter = ["key", "system"]
    list_select_related = ["key", "imported_by"]
    search_fields = ["system", "configuration", "source_name"]
    fields = ["key", "system", "configuration", "ingest", "metadata", "source_name", "source_sha256", "imported_by",
              "imported_at", "predictions_link", "scores_link"]
    readonly_fields = fields

    @admin.display(description="predictions")
    def predictions_link(self, obj):
        url = reverse("admin:keys_runprediction_changelist")
        return format_html('<a href="{}?run__id__exact={}">{} predictions</a>', url, obj.pk, obj.predictions.count())

    @admin.display(description="scores")
    def scores_link(self, obj):
        return format_html('<a href="{}">{} against {}</a>', reverse("keys:score-run", args=[obj.key.version, obj.pk]),
                           obj.name, obj.key.version)


@admin.register(RunPrediction)
class RunPredictionAdmin(RoleAdminMixin, admin.ModelAdmin):
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

    list_display = ["id", "key", "system", "configuration", "ingest", "scores", "source_name", "imported_at"]
    list_filter = ["key"]
    list_select_related = ["key"]
    fields = ["key", "system", "configuration", "ingest", "scores", "note", "metadata", "source_name", "source_sha256",
              "imported_by", "imported_at"]
    readonly_fields = fields
