"""Admin pages of records nobody edits by hand say so, instead of a bare refusal.

A model whose rows are written only by a service (an import, a run, a freeze) refuses the admin's add
form; its add page then explains where such rows come from (403, in the admin's own frame), and its
change page carries the same sentence as its subtitle. `read_only_reason` is that sentence."""

from django.template.response import TemplateResponse


class ReadOnlySaysWhy:
    read_only_reason = "These records are written by Goldkey's own imports and services, not by hand."

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            return self.read_only_page(request)
        return super().add_view(request, form_url, extra_context)

    def read_only_page(self, request, *, status: int = 403, **context):
        meta = self.model._meta
        return TemplateResponse(request, "admin/read_only.html", {
            **self.admin_site.each_context(request), "opts": meta, "title": f"{meta.verbose_name_plural.capitalize()} are read-only",
            "reason": self.read_only_reason, **context,
        }, status=status)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        if obj is not None and not self.has_change_permission(request, obj):
            extra_context = {**(extra_context or {}), "subtitle": f"Read-only: {self.read_only_reason}"}
        return super().change_view(request, object_id, form_url, extra_context)
