"""Who is trying to log in, for django-axes' lockouts."""

from django.conf import settings


def client_ip(request) -> str | None:
    """The address a login attempt came from. In production Goldkey runs behind one TLS-terminating proxy
    (the one SECURE_PROXY_SSL_HEADER trusts); it appends the real client to X-Forwarded-For, so the last entry
    is the one a client cannot forge. Without that, every attempt would come from the proxy's address and one
    address lockout would lock everyone out."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.GOLDKEY_PRODUCTION and forwarded:
        return forwarded.split(",")[-1].strip() or None
    return request.META.get("REMOTE_ADDR")
