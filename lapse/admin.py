"""Admin for scorer labels: read-only (the scoring services write them), by role, and blind like the items
admin — nobody sees the labels of an item set they have open work in, in any campaign."""

from django.contrib import admin

from annotation.access import blind_item_sets
from annotation.models import Campaign
from council.selectors import detector_sealed_campaigns
from items.admin import RoleAdminMixin
from lapse.models import ScorerLabel


@admin.register(ScorerLabel)
class ScorerLabelAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("item", "scorer", "label", "member", "prompt_version", "updated_at")
    list_filter = ("scorer", "label")
    search_fields = ("item__external_id", "label", "member")
    list_select_related = ("item",)
    readonly_fields = [f.name for f in ScorerLabel._meta.fields]
    read_only_reason = "Scorer labels are written by the scoring services (cascade, judge), never by hand."

    def get_queryset(self, request):
        # Labels of items in a campaign whose detector labels are still sealed (PROTOCOL §11) stay hidden.
        sealed_sets = Campaign.objects.filter(pk__in=detector_sealed_campaigns()).values("item_set_id")
        return (
            super().get_queryset(request).exclude(item__item_set__in=blind_item_sets(request.user))
            .exclude(item__item_set__in=sealed_sets)
        )
