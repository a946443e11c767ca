"""Council tuning knobs: Django settings when set, else environment, else defaults."""

from django.conf import settings

from goldkey.env import env_int, env_str


def _float(name: str, default: float) -> float:
    value = getattr(settings, name, None)
    if value is not None:
        return float(value)
    raw = env_str(name)
    if raw in (None, ""):
        return default
    try:
        return float(raw)
    except ValueError as exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc


def soft_time_limit() -> int:
    return getattr(settings, "COUNCIL_SOFT_TIME_LIMIT", None) or env_int("COUNCIL_SOFT_TIME_LIMIT", 150)


def hard_time_limit() -> int:
    return getattr(settings, "COUNCIL_TIME_LIMIT", None) or env_int("COUNCIL_TIME_LIMIT", 180)


def max_transient_retries() -> int:
    return int(_float("COUNCIL_MAX_RETRIES", 5))


def backoff_base() -> float:
    """Seconds; the n-th retry waits base * 2**n (capped), unless the server sent Retry-After."""
    return _float("COUNCIL_BACKOFF_BASE", 1.0)


def backoff_cap() -> float:
    return _float("COUNCIL_BACKOFF_CAP", 60.0)
