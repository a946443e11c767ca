"""Council tuning knobs: Django settings when set, else environment, else defaults."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

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


def batch_size() -> int:
    """Items per (member, batch) task. One task keeps the member's concurrency in flight, so a batch can be
    large; smaller batches only spread one member over more worker processes (and shorten the tail)."""
    return max(1, int(_float("COUNCIL_BATCH_SIZE", 500)))


def batch_window() -> float:
    """Seconds a batch task keeps starting new votes; the rest goes on in a continuation task, so a task
    never nears its time limits however large the batch or slow the member."""
    return _float("COUNCIL_BATCH_WINDOW", soft_time_limit() / 2)


def task_deadline() -> float:
    """Seconds after its start a batch task stops its votes still in flight (they are left for the
    continuation, replies received so far cached): its own deadline, well before the soft limit."""
    soft = soft_time_limit()
    return max(1.0, soft - min(10.0, soft / 5))


def lease_seconds() -> float:
    """How long a claim on a batch or a member's slot is trusted: past the hard limit its task is dead."""
    hard = hard_time_limit()
    return hard + min(10.0, hard / 4)  # a margin for clocks of different machines


def sweep_interval() -> float:
    """Seconds between two sweeps of unfinished runs (each worker runs one on its own timer)."""
    return _float("COUNCIL_SWEEP_INTERVAL", 30.0)


def max_resends() -> int:
    """A batch the sweep had to send again this many times marks its run stalled (its task keeps dying)."""
    return int(_float("COUNCIL_MAX_RESENDS", 5))
