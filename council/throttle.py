"""Per-member concurrency (leased slots) and rate limit (request spacing), kept in the database.

Both use conditional UPDATEs, so they are race-free on PostgreSQL and SQLite alike and work with any
broker (Redis or the demo's file system). A batch task leases up to the member's concurrency of slots,
all in its task id: a task redelivered after its worker was killed reclaims its own slots at once; any
other stale lease expires after the hard time limit.
"""

import time
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from council.models import CouncilMember, MemberPace, MemberSlot


class Throttled(Exception):
    """No slot of the member is free: try again in `wait` seconds."""

    def __init__(self, wait: float):
        super().__init__(f"throttled for {wait:.2f}s")
        self.wait = wait


def _ensure_slots(member: CouncilMember) -> None:
    existing = set(MemberSlot.objects.filter(member=member).values_list("index", flat=True))
    missing = [MemberSlot(member=member, index=i) for i in range(member.concurrency) if i not in existing]
    if missing:
        MemberSlot.objects.bulk_create(missing, ignore_conflicts=True)


def slots_lease(member: CouncilMember, holder: str, want: int, lease_seconds: float) -> list[int]:
    """Lease up to `want` of the member's free slots for `holder` (a batch task keeps that many requests in
    flight); the ids leased, possibly none. Slots `holder` already holds (a redelivered task) count."""
    _ensure_slots(member)  # one query; slots are created on first use (and when concurrency grows)
    now = timezone.now()
    free = Q(holder="") | Q(holder=holder) | Q(expires_at__lt=now)
    candidates = MemberSlot.objects.filter(free, member=member, index__lt=member.concurrency).order_by("index")
    ids = list(candidates.values_list("id", flat=True)[:want])
    if not ids:
        return []
    # Conditional UPDATE: a slot another task leased in between is not taken; then read which ones we got.
    MemberSlot.objects.filter(free, id__in=ids).update(holder=holder, expires_at=now + timedelta(seconds=lease_seconds))
    return list(MemberSlot.objects.filter(id__in=ids, holder=holder).values_list("id", flat=True))


def slots_release(slot_ids: list[int], holder: str) -> None:
    if slot_ids:
        MemberSlot.objects.filter(id__in=slot_ids, holder=holder).update(holder="", expires_at=None)


def pace_next(member: CouncilMember) -> float:
    """Reserve the member's next request start; the seconds to wait for it (0: go now). For async callers,
    which sleep without holding a process."""
    interval = 60.0 / member.requests_per_minute if member.requests_per_minute else 0.0
    if interval == 0:
        return 0.0
    while True:
        now = time.time()
        current = MemberPace.objects.filter(member=member).values_list("next_at", flat=True).first()
        if current is None:
            MemberPace.objects.get_or_create(member=member)
            continue
        start = max(now, current)
        if MemberPace.objects.filter(member=member, next_at=current).update(next_at=start + interval):
            return start - now
