"""Admin for campaigns: authors and admins only (annotators are never staff, and these admins check
the author role again). Creating a campaign here calls the same `campaign_create` service as the
command. Answers are not in the admin at all: they are reachable only through adjudication, behind
`annotation.access.require_unblinded`."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model

from annotation import access
from annotation.models import Campaign, Enrollment
from annotation.services import campaign_create
from goldkey import roles
from goldkey.errors import ApplicationError
from items.admin import GenerationRejectAdmin, ItemAdmin
from items.models import GenerationReject, Item


class AuthorOnlyAdmin(admin.ModelAdmin):
    def has_module_permission(self, request):
        return roles.is_staff_author(request.user)

    def has_view_permission(self, request, obj=None):
        return self.has_module_permission(request)

    def has_add_permission(self, request):
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CampaignCreateForm(forms.ModelForm):
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(groups__name=roles.ANNOTATOR).order_by("username"),
        help_text="Pseudonyms A, B, … follow this alphabetical order of usernames.",
    )
    seed = forms.IntegerField(required=False, help_text="Leave empty for a random seed (it is recorded).")

    class Meta:
        model = Campaign
        fields = ["slug", "name", "item_set", "per_item", "crisis_block"]

    def clean(self):
        cleaned = super().clean()
        annotators = cleaned.get("annotators") or []
        per_item = cleaned.get("per_item") or 0
        if annotators and per_item > len(annotators):
            raise forms.ValidationError(f"{per_item} annotators per item needs at least {per_item} annotators")
        return cleaned


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    fields = ["pseudonym", "annotator", "assigned_count", "crisis_count", "phase1_completed_at",
              "submitted_at", "crisis_declined_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Campaign)
class CampaignAdmin(AuthorOnlyAdmin):
    # No seed in the list: an explicit seed is the annotators' order, and an author may annotate here.
    list_display = ["slug", "name", "item_set", "protocol", "per_item", "crisis_block", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [EnrollmentInline]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = CampaignCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["slug", "name", "item_set", "annotators", "per_item", "seed", "crisis_block"]
        fields = ["slug", "name", "item_set", "protocol", "per_item", "seed", "crisis_block", "created_by", "created_at"]
        if not access.can_view_unblinded(request.user, obj):
            fields.remove("seed")  # it gives each position's item to whoever annotates this campaign
        return fields

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj) if obj is not None else []

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        # The same service as `manage.py campaign_create`: seeded permutation, k distinct annotators.
        try:
            created = campaign_create(
                slug=form.cleaned_data["slug"],
                item_set=form.cleaned_data["item_set"],
                annotators=list(form.cleaned_data["annotators"]),
                per_item=form.cleaned_data["per_item"],
                seed=form.cleaned_data.get("seed"),
                name=form.cleaned_data.get("name") or "",
                crisis_block=form.cleaned_data.get("crisis_block") or False,
                created_by=request.user,
            )
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message) from exc
        obj.__dict__.update({k: v for k, v in created.__dict__.items() if not k.startswith("_")})
        obj._state.adding = False

    def save_related(self, request, form, formsets, change):
        pass  # annotators are enrollments, written by campaign_create


class BlindItemAdmin(ItemAdmin):
    """The items admin, without the item sets this user has open work in (their gold and hidden fields)."""

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(item_set__in=access.blind_item_sets(request.user))


class BlindRejectAdmin(GenerationRejectAdmin):
    """The generation rejects, without those of an item set this user has open work in."""

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(item_set__in=access.blind_item_sets(request.user))


admin.site.unregister(Item)
admin.site.register(Item, BlindItemAdmin)
admin.site.unregister(GenerationReject)
admin.site.register(GenerationReject, BlindRejectAdmin)
