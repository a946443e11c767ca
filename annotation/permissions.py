"""DRF permission classes: the role half of authorization, declared once. The object half (whose
assignment is it?) is `annotation.access.get_assignment_for_user`."""

from rest_framework.permissions import BasePermission

from goldkey import roles


class IsAnnotator(BasePermission):
    message = "Only annotators may use this endpoint."

    def has_permission(self, request, view) -> bool:
        return roles.is_annotator(request.user)


class IsAuthor(BasePermission):
    message = "Only authors may use this endpoint."

    def has_permission(self, request, view) -> bool:
        return roles.is_author(request.user)
