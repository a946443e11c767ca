"""Admin for gold keys and errata. Frozen keys are read-only here (and in the database); system runs are
scoring's (scoring/admin.py)."""

from django.contrib import admin, messages
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, Sum
from django.urls import reverse
from django.utils.html import format_html

from annotation.access import blind_campaigns
from annotation.admin import CampaignAdmin
from annotation.models import Campaign
from goldkey.errors import ApplicationError
from goldkey.lib.admin_readonly import ReadOnlySaysWhy
from items.admin import RoleAdminMixin
from keys import jobs
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import Erratum, GoldKey, KeyEntry, KeyJob


class KeyEntryInline(admin.TabularInline):
    model = KeyEntry
    verbose_name_plural = "key entries"
    extra = 0
    can_delete = False
    show_change_link = False
    fields = ["external_id", "gold", "evidence", "quote", "family", "history_turns", "provenance", "detail"]
    readonly_fields = fields
    max_num = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GoldKey)
class GoldKeyAdmin(ReadOnlySaysWhy, admin.ModelAdmin):
    read_only_reason = "A frozen key never changes: corrections are errata, released in a derived version."
    list_display = ["version", "benchmark", "status", "published", "parent", "frozen_at", "sha256"]
    list_filter = ["status", "benchmark"]
    actions = ["freeze_drafts", "publish_keys", "derive_next_versions"]
    inlines = [KeyEntryInline]

    def get_queryset(self, request):
        # No key that shows an item this user has open work on (keys.selectors.keys_hidden_from).
        return super().get_queryset(request).select_related("publication").exclude(
            pk__in=key_selectors.keys_hidden_from(request.user)
        )

    @admin.display(description="published", boolean=True)
    def published(self, obj):
        return hasattr(obj, "publication")  # read with the row (select_related)

    def add_view(self, request, form_url="", extra_context=None):
        """A key is made from a campaign, on the build page, where the draft is reviewed before it is frozen:
        the admin's add page leads there (for every closed campaign ready for a key) instead of a raw form."""
        if not self.has_add_permission(request):
            return self.read_only_page(request)
        ready = key_selectors.campaigns_ready_for_a_key(request.user)
        return self.read_only_page(
            request, status=200, title="Gold keys are built from a campaign",
            reason="A key is built from a closed, adjudicated campaign on its build page: you review the draft "
                   "(counts, kept-set kappa against the bar, the datasheet) and then freeze it."
                   + ("" if ready else " No closed campaign is waiting for a key right now."),
            links=[(f"Build the key of {c.slug}", reverse("keys:build", args=[c.slug])) for c in ready]
            + [("All gold keys and the campaigns ready for one", reverse("keys:list"))],
        )

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []  # entries come from the campaign, not a form

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

    # The freeze and the derive run as key jobs in the worker, as from the key pages: a large key's would
    # outlive the web server's request timeout. Each message links to its job's page.
    def _started(self, request, selected: str, **job) -> None:
        try:
            started, created = jobs.key_job_start(user=request.user, **job)
        except ApplicationError as exc:
            self.message_user(request, f"{selected}: {exc.message}", messages.ERROR)
            return
        verb = "started" if created else f"already {started.status}"
        self.message_user(request, format_html(
            '{}: <a href="{}">{} {}</a>.', selected, reverse("keys:job", args=[started.pk]),
            started.get_action_display(), verb,
        ), messages.INFO)

    @admin.action(description="Freeze the selected draft keys (irreversible)")
    def freeze_drafts(self, request, queryset):
        for key in queryset.filter(status=GoldKey.Status.DRAFT).select_related("campaign"):
            self._started(request, key.version, action=KeyJob.Action.FREEZE, key=key, version=key.version)

    @admin.action(description="Publish the selected frozen keys (their files become public)")
    def publish_keys(self, request, queryset):
        for key in queryset.filter(status=GoldKey.Status.FROZEN):
            try:
                key_services.key_publish(key=key, user=request.user)
            except ApplicationError as exc:
                self.message_user(request, f"{key.version}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, f"{key.version} is published.", messages.SUCCESS)

    @admin.action(description="Derive the next version from accepted errata")
    def derive_next_versions(self, request, queryset):
        for parent in queryset.filter(status=GoldKey.Status.FROZEN):
            try:
                version = key_services.next_version(parent.version)
            except ApplicationError as exc:
                self.message_user(request, f"{parent.version}: {exc.message}", messages.ERROR)
                continue
            self._started(request, parent.version, action=KeyJob.Action.DERIVE, key=parent, version=version)


@admin.register(Erratum)
class ErratumAdmin(ReadOnlySaysWhy, admin.ModelAdmin):
    read_only_reason = ("Errata are filed on the key's page, through the API or with manage.py erratum_file, and "
                        "decided there; what was filed stays as it was.")
    list_display = ["id", "key", "item_external_id", "kind", "status", "filed_by", "decided_by", "applied_in"]
    list_filter = ["status", "kind"]
    readonly_fields = ["key", "item_external_id", "kind", "value", "description", "filed_by", "filed_at", "status",
                       "decided_by", "decided_at", "decision_note", "applied_in"]

    def has_add_permission(self, request):
        return False  # filed through the key page, the API or `erratum_file` (validated there)


class CampaignFiguresAdmin(CampaignAdmin):
    """The campaign list as the design card has it: progress, kappa, queue size and key status per campaign,
    each linking to its page. Every figure is a stored one (the enrollments' counters, the stored queue's
    counts and figures cache, the frozen key's manifest), read in a fixed number of queries: agreement is
    never recomputed per row. Registered here, above annotation, because the figures belong to the layers
    that compute them. Campaigns the user still annotates show none of it."""

    list_display = ["slug", "name", "protocol", "status", "progress", "kappa", "queue", "key_status", "created_at"]
    list_filter = ["status", "protocol"]

    def get_queryset(self, request):
        # What this user may not see of each campaign rides along as columns (the admin instance is shared
        # between requests: nothing per user is kept on it).
        user = request.user
        return super().get_queryset(request).select_related("item_set", "queue_state").annotate(
            answered=Sum("enrollments__phase1_done_count"), required=Sum("enrollments__assigned_count"),
            enrolled=Count("enrollments"), finished=Count("enrollments", filter=Q(enrollments__submitted_at__isnull=False) | Q(enrollments__ended_at__isnull=False)),
            blind=Exists(blind_campaigns(user).filter(pk=OuterRef("pk"))),
            key_hidden=Exists(GoldKey.objects.filter(campaign=OuterRef("pk"), pk__in=key_selectors.keys_hidden_from(user))),
        ).prefetch_related(Prefetch(
            "gold_keys", queryset=GoldKey.objects.only("id", "version", "status", "campaign_id", "manifest").order_by("version"),
        ))

    @staticmethod
    def _blind(obj) -> bool:
        return bool(getattr(obj, "blind", True))  # without the column (another page's row): hide

    @staticmethod
    def _state(obj):
        try:
            return obj.queue_state
        except ObjectDoesNotExist:
            return None

    @admin.display(description="progress")
    def progress(self, obj):
        if not obj.enrolled:
            return "no annotators"
        return f"{obj.answered or 0} of {obj.required or 0} answered · {obj.finished} of {obj.enrolled} annotators done"

    @admin.display(description="kappa (κ)")
    def kappa(self, obj):
        if self._blind(obj):
            return "hidden while you annotate"
        url = reverse("adjudication:agreement", args=[obj.slug])
        state = self._state(obj)
        figures = state.figures if state is not None and state.figures_version == state.version else {}
        found = next((f for f in figures.values() if isinstance(f, dict) and f.get("kappa") is not None), None)
        if found is not None:
            return format_html('<a href="{}">{} (kept set)</a>', url, f"{found['kappa']:.3f}")
        frozen = [k for k in obj.gold_keys.all() if k.is_frozen]
        kept = ((frozen[-1].manifest or {}).get("agreement") or {}).get("kappa_kept_set") if frozen else None
        if kept and kept.get("kappa") is not None:
            return format_html('<a href="{}">{} (kept set, {})</a>', url, f"{kept['kappa']:.3f}", frozen[-1].version)
        return format_html('<a href="{}">agreement</a>', url)

    @admin.display(description="queue")
    def queue(self, obj):
        if self._blind(obj):
            return "hidden while you annotate"
        url = reverse("adjudication:queue", args=[obj.slug])
        state = self._state(obj)
        if state is None:
            return format_html('<a href="{}">not built yet: open</a>', url)
        undecided = f" · {state.n_undecided} undecided" if state.counts_version == state.version else ""
        return format_html('<a href="{}">{} queued{}</a>', url, state.n_queued, undecided)

    @admin.display(description="key")
    def key_status(self, obj):
        if self._blind(obj) or getattr(obj, "key_hidden", True):
            return "hidden while you annotate"
        keys = list(obj.gold_keys.all())
        if not keys:
            if obj.status == Campaign.Status.CLOSED:
                return format_html('<a href="{}">build the key</a>', reverse("keys:build", args=[obj.slug]))
            return "—"
        latest = keys[-1]
        return format_html('<a href="{}">{} ({})</a>', reverse("keys:detail", args=[latest.version]), latest.version,
                           latest.status)


admin.site.unregister(Campaign)
admin.site.register(Campaign, CampaignFiguresAdmin)


@admin.register(KeyJob)
class KeyJobAdmin(RoleAdminMixin, admin.ModelAdmin):
    read_only_reason = ("Key jobs are started from the key pages and the actions above, and written by the worker "
                        "that runs them; each one's page is /keys/jobs/<id>/.")
    list_display = ["id", "action", "version", "status", "stage", "requested_by", "created_at", "finished_at", "result"]
    list_filter = ["status", "action"]
    readonly_fields = ["action", "status", "target", "campaign", "key", "version", "notes", "requested_by", "stage",
                       "created_at", "started_at", "finished_at", "error", "result"]

    def get_queryset(self, request):
        # A job's messages may name a campaign's items: not for an author still blind to it.
        blind = blind_campaigns(request.user)
        return super().get_queryset(request).select_related("requested_by", "result").exclude(
            campaign__in=blind).exclude(key__in=key_selectors.keys_hidden_from(request.user))
