from django.contrib import admin

from annotation import access
from council.models import CouncilMember, CouncilRun, CouncilVote, GateVerdict, PromptVersion, ResponseCache
from council.selectors import detector_sealed_campaigns
from goldkey.lib.admin_readonly import ReadOnlySaysWhy


@admin.register(CouncilMember)
class CouncilMemberAdmin(admin.ModelAdmin):
    list_display = ("name", "model", "base_url", "requests_per_minute", "concurrency", "timeout_seconds", "is_generator")
    list_filter = ("is_generator",)
    search_fields = ("name", "model")


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):
    list_display = ("name", "protocol", "created_at")

    def get_readonly_fields(self, request, obj=None):
        # A prompt with votes under it is frozen: a change is a new version.
        if obj is not None and obj.runs.exists():
            return ("name", "protocol", "system", "phase1", "phase2")
        return ()


@admin.register(CouncilRun)
class CouncilRunAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "prompt_version", "status", "cancelled", "total_items", "created_at")
    list_filter = ("status",)
    readonly_fields = ("campaign", "prompt_version", "total_items", "created_by", "created_at", "finished_at")


@admin.register(CouncilVote)
class CouncilVoteAdmin(ReadOnlySaysWhy, admin.ModelAdmin):
    read_only_reason = "Council votes come from council runs and vote imports, which know their campaign and member."
    list_display = ("campaign", "member", "item", "prompt_version", "status", "attempts", "created_at")
    list_filter = ("status", "prompt_version", "member")
    list_select_related = ("campaign", "member", "item")
    readonly_fields = ("campaign", "member", "item", "prompt_version", "status", "values", "error", "run", "attempts")

    def get_queryset(self, request):
        # Council votes are hidden from annotators (PROTOCOL §4), superusers who annotate included, in every
        # campaign over an item they have open work on. A sealing protocol's detector votes (Lapse: the
        # judge's labels) stay hidden until its key is frozen.
        return (
            super().get_queryset(request).exclude(campaign__in=access.blind_campaigns(request.user))
            .exclude(campaign__in=detector_sealed_campaigns())
        )

    def has_add_permission(self, request):
        return False  # votes come from runs and imports, which know their campaign


@admin.register(GateVerdict)
class GateVerdictAdmin(ReadOnlySaysWhy, admin.ModelAdmin):
    read_only_reason = "Gate verdicts are written by the generation gates (council page, or manage.py gates_run)."
    list_display = ("item", "gate", "passed", "blocking", "detail")
    list_filter = ("gate", "passed", "blocking")
    list_select_related = ("item",)

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(item__item_set__in=access.blind_item_sets(request.user))

    def has_add_permission(self, request):
        return False  # verdicts come from gates_run


@admin.register(ResponseCache)
class ResponseCacheAdmin(admin.ModelAdmin):
    list_display = ("model", "prompt_hash", "created_at")
    search_fields = ("model", "prompt_hash")
