"""Admin for stored Track C runs: read-only records of what a judge said about a system's answers (they come from
`chain_score`), shown to authors and admins only, by the same role rule as the corpus admin
(items.admin.RoleAdminMixin)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from chains.models import ChainRun
from items.admin import RoleAdminMixin
from keys import selectors as key_selectors


@admin.register(ChainRun)
class ChainRunAdmin(RoleAdminMixin, admin.ModelAdmin):
    """A run is graded once by a pinned judge and never edited by hand: a changed grade would be a score no
    judge gave."""

    read_only_reason = "A Track C run is graded and stored by manage.py chain_score, its judge pinned; it is never edited."
    list_display = ["id", "key", "system", "judge", "judge_model", "source_name", "imported_by", "imported_at"]
    list_filter = ["key"]
    list_select_related = ["key", "imported_by"]
    search_fields = ["system", "source_name"]
    fields = ["key", "system", "source_name", "source_sha256", "judge", "judge_model", "judge_prompt_version",
              "calibration", "grades", "imported_by", "imported_at", "scores_link"]
    readonly_fields = fields

    def get_queryset(self, request):
        # A run's grades are keyed by the key's item ids: none of a key this user has open work on.
        return super().get_queryset(request).exclude(key__in=key_selectors.keys_hidden_from(request.user))

    @admin.display(description="scores")
    def scores_link(self, obj):
        return format_html('<a href="{}">judged runs against {}</a>', reverse("chains:scores", args=[obj.key.version]),
                           obj.key.version)
