"""Who is trying to log in, for django-axes' lockouts; the password change, throttled as a login is."""

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.core.exceptions import ValidationError


def client_ip(request) -> str | None:
    """The address a login attempt came from. In production Goldkey runs behind one TLS-terminating proxy
    (the one SECURE_PROXY_SSL_HEADER trusts); it appends the real client to X-Forwarded-For, so the last entry
    is the one a client cannot forge. Without that, every attempt would come from the proxy's address and one
    address lockout would lock everyone out."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.GOLDKEY_PRODUCTION and forwarded:
        return forwarded.split(",")[-1].strip() or None
    return request.META.get("REMOTE_ADDR")


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """The old password is checked by `authenticate()`, as a login is, not by `check_password()`: django-axes
    then counts a wrong one and refuses a locked account (the middleware answers 429). Otherwise a stolen
    session could try passwords here without limit, and learn the one that opens every other session."""

    def __init__(self, user, *args, request=None, **kwargs):
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self):
        old_password = self.cleaned_data["old_password"]
        if authenticate(self.request, username=self.user.get_username(), password=old_password) is None:
            raise ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password


class PasswordChangeView(auth_views.PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}
