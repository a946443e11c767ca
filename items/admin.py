"""Admin for the corpus and items, and the "Import items…" upload page.

Imported material is read-only here: items and turns change only through a new import or the
errata process, never by hand-editing a row. Access is by role (staff with the author or admin
role), declared once in RoleAdminMixin, not by per-model Django permissions. Who is blind to which
items is annotation's rule (annotation.access): annotation/admin.py registers the item and reject
admins below again with it, since items come before annotation and may not import it.
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

import protocols
from goldkey import roles
from goldkey.lib.admin_readonly import ReadOnlySaysWhy
from goldkey.lib.jsonio import ImportFailed, column_length
from items.models import LICENSE_MAX, Conversation, Evidence, GenerationReject, Item, ItemSet, Session, Turn
from items.services import gate_rejects_sentence
from items.upload_services import CORPUS, Upload, upload_import


def can_manage_items(user) -> bool:
    """Staff with the author or admin role may browse the corpus and import items."""
    return roles.is_staff_author(user)


class RoleAdminMixin(ReadOnlySaysWhy):
    """Read-only admin for authors/admins, whatever their Django model permissions."""

    read_only_reason = "Imported material changes only through a new import or the errata process, never by hand."

    def has_module_permission(self, request):
        return can_manage_items(request.user)

    def has_view_permission(self, request, obj=None):
        return can_manage_items(request.user)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class SessionInline(RoleAdminMixin, admin.TabularInline):
    model = Session
    fields = ("number", "date_time_raw", "date_time", "turns_link")
    readonly_fields = fields
    extra = 0

    @admin.display(description="turns")
    def turns_link(self, obj):
        url = reverse("admin:items_turn_changelist")
        return format_html(
            '<a href="{}?conversation__id__exact={}&session__number={}">turns</a>', url, obj.conversation_id, obj.number
        )


@admin.register(Conversation)
class ConversationAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("external_id", "speaker_a", "speaker_b", "turn_count")
    search_fields = ("external_id", "speaker_a", "speaker_b")
    fields = ("external_id", "speaker_a", "speaker_b", "turns_link")
    readonly_fields = fields
    inlines = [SessionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_turns=Count("turns"))

    @admin.display(description="turns", ordering="n_turns")
    def turn_count(self, obj):
        return obj.n_turns

    @admin.display(description="all turns")
    def turns_link(self, obj):
        url = reverse("admin:items_turn_changelist")
        return format_html('<a href="{}?conversation__id__exact={}">{} turns</a>', url, obj.pk, obj.n_turns)


@admin.register(Turn)
class TurnAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("conversation", "dia_id", "session_date", "speaker", "text", "order")
    list_select_related = ("conversation", "session")
    search_fields = ("text", "=dia_id", "speaker")
    list_per_page = 200

    def lookup_allowed(self, lookup, value, request=None):
        return lookup in {"conversation__id__exact", "session__number"} or super().lookup_allowed(lookup, value, request)

    @admin.display(description="session date")
    def session_date(self, obj):
        return obj.session.date_time_raw


class EvidenceInline(RoleAdminMixin, admin.TabularInline):
    model = Evidence
    fields = ("position", "turn", "speaker", "text")
    readonly_fields = fields
    extra = 0

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("turn__conversation")

    @admin.display(description="speaker")
    def speaker(self, obj):
        return obj.turn.speaker

    @admin.display(description="text")
    def text(self, obj):
        return obj.turn.text


class ItemImportForm(forms.Form):
    KIND_CHOICES = [
        (CORPUS, "LoCoMo conversations (zip of 26.json files, one 26.json, or locomo10.json)"),
        *((spec.item_kind, spec.upload_label) for spec in protocols.specs()),
    ]
    kind = forms.ChoiceField(choices=KIND_CHOICES, widget=forms.RadioSelect)
    file = forms.FileField(help_text="The file to import.")
    item_set = forms.CharField(
        max_length=column_length(ItemSet, "name"), required=False,
        help_text="Item set name (every kind but the corpus), e.g. “TWIST Track B v1 candidates”.",
    )
    rejects = forms.FileField(required=False, help_text="Only for " + " and ".join(
        spec.item_kind_label for spec in protocols.specs() if spec.accepts_rejects
    ) + " items: generation rejects JSONL to keep with the set.")
    license = forms.CharField(
        max_length=LICENSE_MAX, required=False,
        help_text="Licence id the file was released under, e.g. cc-by-4.0 (blank: LoCoMo's own for the corpus, "
        "the benchmark's for items).",
    )
    dry_run = forms.BooleanField(required=False, label="Validate only (write nothing)")

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if not kind or kind == CORPUS:
            if data.get("rejects"):
                self.add_error("rejects", f"Generation rejects go with {self._rejects_kinds()} items only.")
            return data
        spec = protocols.for_kind(kind)
        if not (data.get("item_set") or "").strip():
            self.add_error("item_set", f"An item set name is required for {spec.item_kind_label} items.")
        if data.get("rejects") and not spec.accepts_rejects:
            self.add_error("rejects", f"Generation rejects go with {self._rejects_kinds()} items only.")
        return data

    @staticmethod
    def _rejects_kinds() -> str:
        return " and ".join(spec.benchmark.name for spec in protocols.specs() if spec.accepts_rejects)


@admin.register(ItemSet)
class ItemSetAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("name", "kind", "track", "license", "item_count", "reject_count", "created_at")
    list_filter = ("kind",)
    list_select_related = ("track__benchmark",)
    search_fields = ("name",)
    change_list_template = "items/admin/itemset_change_list.html"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(n_items=Count("items", distinct=True), n_rejects=Count("rejects", distinct=True))
        )

    @admin.display(description="items", ordering="n_items")
    def item_count(self, obj):
        url = reverse("admin:items_item_changelist")
        return format_html('<a href="{}?item_set__id__exact={}">{}</a>', url, obj.pk, obj.n_items)

    @admin.display(description="rejects", ordering="n_rejects")
    def reject_count(self, obj):
        return obj.n_rejects

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="items_itemset_import"),
            *super().get_urls(),
        ]

    def import_view(self, request):
        if not can_manage_items(request.user):
            raise PermissionDenied("Importing items needs the author or admin role.")
        errors: list[str] = []
        truncated = False
        if request.method == "POST":
            form = ItemImportForm(request.POST, request.FILES)
            if form.is_valid():
                data = form.cleaned_data
                rejects = data.get("rejects")
                try:
                    report = upload_import(
                        kind=data["kind"],
                        upload=Upload(data["file"].name, data["file"].chunks()),
                        item_set_name=data.get("item_set") or "",
                        rejects=Upload(rejects.name, rejects.chunks()) if rejects else None,
                        license=data.get("license") or "",
                        dry_run=data["dry_run"],
                    )
                except ImportFailed as exc:
                    errors, truncated = exc.errors, exc.truncated
                else:
                    messages.success(request, _report_message(data["kind"], report))
                    return redirect("admin:items_itemset_changelist")
        else:
            form = ItemImportForm()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import items",
            "form": form,
            "errors": errors,
            "truncated": truncated,
        }
        return TemplateResponse(request, "items/admin/import.html", context, status=400 if errors else 200)


def _report_message(kind: str, report) -> str:
    what = "conversation(s)" if kind == "locomo" else "item(s)"
    where = f" into '{report.item_set}'" if report.item_set else ""
    text = f"{report.created} {what}{where}; {report.unchanged} already present."
    if report.rejects_created or report.rejects_unchanged:
        text += f" Rejects: {report.rejects_created} new, {report.rejects_unchanged} already present."
    text += gate_rejects_sentence(report.gate_rejects)
    return ("Dry run, nothing written: would import " if report.dry_run else "Imported ") + text


@admin.register(Item)
class ItemAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("external_id", "kind", "item_set", "gold_label", "family", "batch", "recipient", "key_fact")
    list_filter = ("kind", "item_set", "gold_label")
    list_select_related = ("item_set",)
    search_fields = ("=external_id", "content")
    inlines = [EvidenceInline]
    readonly_fields = [f.name for f in Item._meta.fields]


@admin.register(GenerationReject)
class GenerationRejectAdmin(RoleAdminMixin, admin.ModelAdmin):
    list_display = ("external_id", "item_set", "conversation_external_id", "verdict", "dropped_by")
    list_filter = ("item_set", "dropped_by", "verdict")
    list_select_related = ("item_set",)
    search_fields = ("=external_id", "verdict")
    readonly_fields = [f.name for f in GenerationReject._meta.fields]
