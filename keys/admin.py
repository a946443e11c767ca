"""Admin for gold keys and errata. Frozen keys are read-only here (and in the database)."""

from django.contrib import admin, messages

from goldkey.errors import ApplicationError
from keys import services as key_services
from keys.models import Erratum, GoldKey, KeyEntry


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
                frozen = key_services.key_freeze(campaign=key.campaign, version=key.version, user=request.user)
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
