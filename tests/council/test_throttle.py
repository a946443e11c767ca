"""Per-member concurrency slots and request pacing, kept in the database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from council.models import MemberSlot
from council.services import council_member_add
from council.throttle import pace_next, slots_lease, slots_release


@pytest.fixture
def member(db):
    return council_member_add(name="m", base_url="http://127.0.0.1:9/v1", model="x", concurrency=3, requests_per_minute=60)[0]


def test_no_more_than_concurrency_slots_are_leased_at_once_across_batches(member):
    assert len(slots_lease(member, "batch-1", 2, 60)) == 2
    assert len(slots_lease(member, "batch-2", 5, 60)) == 1
    assert slots_lease(member, "batch-3", 1, 60) == []


def test_released_slots_can_be_leased_by_another_batch(member):
    first = slots_lease(member, "batch-1", 3, 60)
    slots_release(first[:2], "batch-1")
    assert sorted(slots_lease(member, "batch-2", 3, 60)) == sorted(first[:2])


def test_a_release_by_another_holder_frees_nothing(member):
    first = slots_lease(member, "batch-1", 3, 60)
    slots_release(first, "batch-2")
    assert slots_lease(member, "batch-3", 1, 60) == []


def test_a_redelivered_task_reclaims_its_own_slots(member):
    first = slots_lease(member, "batch-1", 2, 60)
    slots_lease(member, "batch-2", 1, 60)
    assert sorted(slots_lease(member, "batch-1", 2, 60)) == sorted(first)


def test_expired_leases_of_a_dead_task_are_taken_over(member):
    dead = slots_lease(member, "dead", 3, 60)
    MemberSlot.objects.filter(id__in=dead).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert len(slots_lease(member, "alive", 3, 60)) == 3


def test_more_slots_appear_when_the_members_concurrency_grows(member):
    slots_lease(member, "batch-1", 3, 60)
    member.concurrency = 5
    member.save()
    assert len(slots_lease(member, "batch-2", 5, 60)) == 2


def test_requests_are_spaced_by_the_members_rate(member):
    assert pace_next(member) == 0
    assert 0.9 < pace_next(member) <= 1.0
    assert 1.9 < pace_next(member) <= 2.0  # each reservation takes the next start time


def test_a_member_without_a_rate_limit_never_waits(member):
    member.requests_per_minute = 0
    assert [pace_next(member) for _ in range(5)] == [0.0] * 5
