"""Each user's keyboard preferences, as the pages read them: from the session, where they are copied at
login and on every change (annotation.services.preferences_update writes the row), so that no page pays a
query for them. The row is the record; the session copy is how a page asks it."""

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from annotation.models import Preferences

SESSION_KEY = "goldkey_keyboard"
DEFAULTS = {"single_key_shortcuts": True, "auto_advance": False}


def preferences_get(user) -> dict:
    """The user's preferences from their row (the defaults when they never changed any)."""
    row = Preferences.objects.filter(user=user).values("single_key_shortcuts", "auto_advance").first()
    return {**DEFAULTS, **(row or {})}


def remember(session, preferences: dict) -> None:
    session[SESSION_KEY] = {name: bool(preferences.get(name, default)) for name, default in DEFAULTS.items()}


def from_session(request) -> dict:
    kept = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    return {**DEFAULTS, **(kept or {})}


@receiver(user_logged_in, dispatch_uid="goldkey-keyboard-preferences")
def _copy_at_login(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        remember(request.session, preferences_get(user))


def context(request) -> dict:
    """Template context processor: base.html marks the page when single-key shortcuts are off, and every
    page script that has them asks that mark."""
    return {"keyboard": from_session(request)}
