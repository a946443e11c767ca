"""Per-member concurrency slots and request pacing, kept in the database."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from council.models import MemberSlot
from council.services import council_member_add
from council.throttle import Throttled, pace_reserve, slot_acquire, slot_release


@pytest.fixture
def member(db):
    return council_member_add(name="m", base_url="http://127.0.0.1:9/v1", model="x", concurrency=2, requests_per_minute=60)[0]


def test_no_more_than_concurrency_slots_are_leased_at_once(member):
    slot_acquire(member, "t1", 60, wait_seconds=0)
    slot_acquire(member, "t2", 60, wait_seconds=0)
    with pytest.raises(Throttled):
        slot_acquire(member, "t3", 60, wait_seconds=0)


def test_a_released_slot_can_be_leased_again(member):
    first = slot_acquire(member, "t1", 60, wait_seconds=0)
    slot_acquire(member, "t2", 60, wait_seconds=0)
    slot_release(first, "t1")
    assert slot_acquire(member, "t3", 60, wait_seconds=0) == first


def test_a_redelivered_task_reclaims_its_own_lease(member):
    first = slot_acquire(member, "t1", 60, wait_seconds=0)
    slot_acquire(member, "t2", 60, wait_seconds=0)
    assert slot_acquire(member, "t1", 60, wait_seconds=0) == first


def test_an_expired_lease_of_a_dead_task_is_taken_over(member):
    first = slot_acquire(member, "dead", 60, wait_seconds=0)
    slot_acquire(member, "t2", 60, wait_seconds=0)
    MemberSlot.objects.filter(id=first).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert slot_acquire(member, "t3", 60, wait_seconds=0) == first


def test_requests_are_spaced_by_the_members_rate(member):
    pace_reserve(member, max_sleep=0)
    with pytest.raises(Throttled) as caught:
        pace_reserve(member, max_sleep=0)
    assert 0.5 < caught.value.wait <= 1.0


def test_a_short_wait_for_the_next_request_is_slept_through(member):
    member.requests_per_minute = 600  # 0.1 s apart
    pace_reserve(member)
    started = time.monotonic()
    pace_reserve(member)
    assert time.monotonic() - started >= 0.05
