"""Per-member concurrency (leased slots) and rate limit (request spacing), kept in the database.

Both use conditional UPDATEs, so they are race-free on PostgreSQL and SQLite alike and work with any
broker (Redis or the demo's file system). A lease names the task id that holds it: a task redelivered
after its worker was killed reclaims its own slot at once; any other stale lease expires.
"""

import time
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from council.models import CouncilMember, MemberPace, MemberSlot


class Throttled(Exception):
    def __init__(self, wait: float):
        super().__init__(f"throttled for {wait:.2f}s")
        self.wait = wait


def _ensure_slots(member: CouncilMember) -> None:
    existing = set(MemberSlot.objects.filter(member=member).values_list("index", flat=True))
    missing = [MemberSlot(member=member, index=i) for i in range(member.concurrency) if i not in existing]
    if missing:
        MemberSlot.objects.bulk_create(missing, ignore_conflicts=True)


def slot_acquire(member: CouncilMember, holder: str, lease_seconds: float, wait_seconds: float = 1.0) -> int:
    """Lease one of the member's slots for `holder`; polls up to `wait_seconds`, then raises Throttled."""
    deadline = time.monotonic() + wait_seconds
    ensured = False
    while True:
        now = timezone.now()
        free = Q(holder="") | Q(holder=holder) | Q(expires_at__lt=now)
        for slot_id in MemberSlot.objects.filter(free, member=member, index__lt=member.concurrency).values_list("id", flat=True):
            taken = MemberSlot.objects.filter(free, id=slot_id).update(
                holder=holder, expires_at=now + timedelta(seconds=lease_seconds)
            )
            if taken:
                return slot_id
        if not ensured:  # slots are created on first use (and when concurrency grows)
            _ensure_slots(member)
            ensured = True
            continue
        if time.monotonic() >= deadline:
            raise Throttled(0.2)
        time.sleep(0.02)


def slot_release(slot_id: int, holder: str) -> None:
    MemberSlot.objects.filter(id=slot_id, holder=holder).update(holder="", expires_at=None)


def pace_reserve(member: CouncilMember, max_sleep: float = 1.0) -> None:
    """Reserve the member's next request start time; sleep until it if soon, else raise Throttled."""
    interval = 60.0 / member.requests_per_minute if member.requests_per_minute else 0.0
    if interval == 0:
        return
    while True:
        now = time.time()
        current = MemberPace.objects.filter(member=member).values_list("next_at", flat=True).first()
        if current is None:  # the member's first request ever: create its row (once, not on every call)
            MemberPace.objects.get_or_create(member=member)
            continue
        start = max(now, current)
        if start - now > max_sleep:
            raise Throttled(start - now - max_sleep / 2)
        # Compare-and-set: only one task gets each start time.
        if MemberPace.objects.filter(member=member, next_at=current).update(next_at=start + interval):
            if start > now:
                time.sleep(start - now)
            return
