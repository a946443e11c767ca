"""Roles are Django groups. Every authorization question in Goldkey is answered here: "is this user an
author" is `is_author` (a predicate) or `require_author` (refuses), and nothing else spells it."""

from django.contrib.auth.models import Group

from goldkey.errors import NotAllowed

ANNOTATOR = "annotator"
AUTHOR = "author"
ADMIN = "admin"
ROLES = (ANNOTATOR, AUTHOR, ADMIN)


def ensure_groups() -> None:
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def has_role(user, role: str) -> bool:
    if not user.is_authenticated:
        return False
    if role == ADMIN and user.is_superuser:
        return True
    cached = getattr(user, "_goldkey_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        user._goldkey_roles = cached
    return role in cached


def is_author(user) -> bool:
    return has_role(user, AUTHOR) or has_role(user, ADMIN)


def require_author(user, *, message: str = "Only authors may open this page.") -> None:
    """Refuse anyone but an author (or admin): NotAllowed, so 403 on pages and the API and a clear
    error in commands. `user` may be None (a command run without an acting user)."""
    if user is None or not is_author(user):
        raise NotAllowed(message)


def is_staff_author(user) -> bool:
    """Staff with the author (or admin) role: who may use the admin site's Goldkey pages."""
    return bool(user.is_active and user.is_staff and is_author(user))


def is_annotator(user) -> bool:
    return has_role(user, ANNOTATOR)


def context(request) -> dict:
    """Template context processor: which role-dependent links to show."""
    user = request.user
    return {"is_author": is_author(user), "is_annotator": is_annotator(user)}
