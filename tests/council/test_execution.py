"""A council batch in this process: the async OpenAI client against the local server, the database from the
test's own thread (so the test transaction sees every write)."""

import hashlib
import json

import pytest
from django.utils import timezone

from council import client, execution, services
from council.models import CouncilBatch, CouncilRun, CouncilVote, MemberPace, ResponseCache
from council.services import council_member_add, council_run_cancel, prompt_version_default
from council.throttle import Throttled, slots_lease
from items.models import Evidence, Item


@pytest.fixture(autouse=True)
def quick_retries(settings):
    settings.COUNCIL_BACKOFF_BASE = 0.01
    settings.COUNCIL_BACKOFF_CAP = 0.2
    settings.COUNCIL_MAX_RETRIES = 2


@pytest.fixture
def sent(monkeypatch):
    """Batches handed on to a continuation task (captured instead of sent)."""
    captured = []
    monkeypatch.setattr(services, "_batches_send", lambda ids: captured.extend(ids) or [])
    return captured


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


def _grow(item_set, n):
    """n more items like the three constructed ones."""
    template = list(Item.objects.filter(item_set=item_set).order_by("external_id").prefetch_related("evidence"))[:3]
    for k in range(n):
        source = template[k % 3]
        evidence = list(source.evidence.all())
        source.pk, source.external_id, source.draft = None, f"conv-x:{k + 100}", f"{source.draft} ({k})"
        source.save()
        Evidence.objects.bulk_create(Evidence(item=source, turn_id=e.turn_id, position=e.position) for e in evidence)


def _run(campaign, *members, total=None):
    run = CouncilRun.objects.create(
        campaign=campaign, prompt_version=prompt_version_default(protocol="twist_b"), status="running",
        total_items=total or Item.objects.filter(item_set_id=campaign.item_set_id).count(), members_count=len(members),
    )
    run.members.set(members)
    return run


def _member(fake_llm, model="fake-ok", name=None, **extra):
    extra = {"timeout_seconds": 1.0, "requests_per_minute": 0, **extra}
    return council_member_add(name=name or model, base_url=fake_llm.base_url, model=model, **extra)[0]


def _work(run, member, items=None, holder="test"):
    items = list(items if items is not None else Item.objects.filter(item_set_id=run.campaign.item_set_id).order_by("external_id"))
    batch = CouncilBatch.objects.create(run=run, member=member, item_ids=[i.pk for i in items], sent_at=timezone.now())
    return batch, execution.batch_work(batch_id=batch.pk, holder=holder)


def _vote(member, external_id):
    return CouncilVote.objects.get(member=member, item__external_id=external_id)


@pytest.mark.django_db
def test_a_member_answers_phase_one_then_the_phase_two_questions_of_the_items_type(small_campaign, fake_llm):
    member = _member(fake_llm)
    _work(_run(small_campaign, member), member)
    assert set(_vote(member, "conv-x:1").values) == {"q1", "q2", "q2quote"}
    assert set(_vote(member, "conv-x:2").values) - {"q3turn"} == {"q1", "q3"}


@pytest.mark.django_db
def test_every_vote_is_valid_in_the_annotators_answer_format_and_the_run_finishes(small_campaign, fake_llm, sent):
    import protocols

    member = _member(fake_llm)
    run = _run(small_campaign, member)
    batch, result = _work(run, member)
    for vote in CouncilVote.objects.filter(member=member).select_related("item"):
        assert vote.status == "ok" and vote.attempts == 2
        assert protocols.get("twist_b").validate_values(vote.values, vote.item.gold_label) == []
    assert result == {"batch": batch.pk, "voted": 3, "left": 0, "stopped": False}
    run.refresh_from_db()
    batch.refresh_from_db()
    assert run.status == "finished" and batch.finished and batch.holder == "" and sent == []


@pytest.mark.django_db
def test_phase_one_shows_no_gold_and_no_phase_shows_family_or_rationale(small_campaign, fake_llm, monkeypatch):
    calls = []
    real = execution.chat_async

    async def recording(client, member, messages):
        calls.append(json.dumps(messages))
        return await real(client, member, messages)

    monkeypatch.setattr(execution, "chat_async", recording)
    member = _member(fake_llm)
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:1"))
    phase1, phase2 = calls
    assert "Hope the pottery class" in phase1 and "9 May, 2023" in phase1
    assert "contradicting" not in phase1 and "Quoted text" not in phase1
    assert "Quoted text" in phase2
    for text in calls:
        assert "generator's reason" not in text and "\"x\"" not in text


@pytest.mark.django_db
def test_a_malformed_answer_is_asked_again_once_with_a_correction(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-malformed-once")
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:2"))
    vote = _vote(member, "conv-x:2")
    assert vote.status == "ok"
    assert vote.attempts == 4  # two phases, each malformed once then corrected


@pytest.mark.django_db
def test_an_answer_malformed_twice_is_an_error_row_never_a_vote(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-malformed-always")
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:2"))
    vote = _vote(member, "conv-x:2")
    assert vote.status == "error" and "malformed" in vote.error and vote.values == {}
    assert vote.attempts == 2


@pytest.mark.django_db
def test_a_second_delivery_of_a_batch_and_a_second_batch_over_the_same_items_store_nothing_twice(small_campaign, fake_llm):
    member = _member(fake_llm)
    run = _run(small_campaign, member)
    batch, _ = _work(run, member)
    requests = fake_llm.state.requests
    assert execution.batch_work(batch_id=batch.pk, holder="test") == {"batch": batch.pk, "skipped": True}
    CouncilRun.objects.filter(pk=run.pk).update(status="running")
    _, again = _work(run, member)
    assert again["voted"] == 0 and fake_llm.state.requests == requests
    assert CouncilVote.objects.filter(member=member).count() == 3


@pytest.mark.django_db
def test_the_unique_constraint_decides_when_a_row_was_written_meanwhile(small_campaign, fake_llm, monkeypatch):
    """Two deliveries racing: the other one stored its row after this batch read what was missing."""
    member = _member(fake_llm)
    run = _run(small_campaign, member)
    item = Item.objects.get(external_id="conv-x:3")
    real = services.council_outcomes_record

    def other_delivery_first(**kwargs):
        CouncilVote.objects.get_or_create(campaign=small_campaign, member=member, item=item, prompt_version=run.prompt_version.name,
                                          defaults={"values": {"q1": "theirs"}})
        return real(**kwargs)

    monkeypatch.setattr(services, "council_outcomes_record", other_delivery_first)
    _work(run, member)
    assert CouncilVote.objects.filter(member=member).count() == 3
    assert _vote(member, "conv-x:3").values == {"q1": "theirs"}


@pytest.mark.django_db
def test_a_rerun_answers_from_the_cache_without_calling_again(small_campaign, fake_llm):
    member = _member(fake_llm)
    _work(_run(small_campaign, member), member)
    first = {v.item_id: v.values for v in CouncilVote.objects.filter(member=member)}
    calls = fake_llm.state.requests
    CouncilVote.objects.all().delete()
    _work(_run(small_campaign, member), member)
    assert fake_llm.state.requests == calls
    assert {v.item_id: v.values for v in CouncilVote.objects.filter(member=member)} == first
    assert set(CouncilVote.objects.values_list("attempts", flat=True)) == {0}
    assert ResponseCache.objects.filter(model="fake-ok").count() == 6


FAKE_OK_FINGERPRINT = "fp_" + hashlib.sha256(b"fake-ok").hexdigest()[:10]


@pytest.mark.django_db
def test_a_vote_records_the_model_and_fingerprint_the_endpoint_reported_also_from_the_cache(small_campaign, fake_llm):
    member = _member(fake_llm)
    _work(_run(small_campaign, member), member)
    reported = set(CouncilVote.objects.filter(member=member).values_list("response_model", "system_fingerprint"))
    assert reported == {("fake-ok", FAKE_OK_FINGERPRINT)}
    CouncilVote.objects.all().delete()
    _work(_run(small_campaign, member), member)  # every reply now comes from the cache
    assert set(CouncilVote.objects.values_list("attempts", flat=True)) == {0}
    assert set(CouncilVote.objects.values_list("response_model", "system_fingerprint")) == reported


@pytest.mark.django_db
def test_a_model_name_and_fingerprint_no_column_holds_are_recorded_storable_and_the_votes_stand(small_campaign, fake_llm):
    """The endpoint reports a name with a NUL character and hundreds of characters (PostgreSQL refuses
    both): the votes are recorded, with what it said cut to what the columns hold."""
    member = _member(fake_llm, "fake-odd-metadata")
    _work(_run(small_campaign, member), member)
    votes = list(CouncilVote.objects.filter(member=member))
    assert [v.status for v in votes] == [CouncilVote.Status.OK] * 3
    (reported,) = {(v.response_model, v.system_fingerprint) for v in votes}
    assert reported[0].startswith("fake-odd-metadata-snapshot-vvv") and len(reported[0]) == client.REPORTED_MAX
    assert reported[1].startswith("fp_") and "\x00" not in reported[1] and len(reported[1]) == client.REPORTED_MAX
    cached = set(ResponseCache.objects.filter(model="fake-odd-metadata").values_list("response_model", "system_fingerprint"))
    assert cached == {reported}


@pytest.mark.django_db
def test_a_reply_with_a_nul_character_is_recorded_without_it_and_the_votes_stand(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-nul-reply")
    _work(_run(small_campaign, member), member)
    assert [v.status for v in CouncilVote.objects.filter(member=member)] == [CouncilVote.Status.OK] * 3
    cached = list(ResponseCache.objects.filter(model="fake-nul-reply").values_list("content", flat=True))
    assert len(cached) == 6 and not any("\x00" in content for content in cached)


def test_the_reported_names_are_cut_to_the_response_caches_columns():
    for name in ("response_model", "system_fingerprint"):
        assert ResponseCache._meta.get_field(name).max_length == client.REPORTED_MAX
    assert CouncilVote._meta.get_field("response_model").max_length >= client.REPORTED_MAX


def test_the_names_several_replies_reported_are_joined_once_each_and_cut_to_the_column():
    assert client.reported_joined(["gpt-4o-a", "", "gpt-4o-b", "gpt-4o-a"], 400) == "gpt-4o-a, gpt-4o-b"
    longest = ["m" * client.REPORTED_MAX, "n" * client.REPORTED_MAX]
    joined = client.reported_joined(longest, 400)
    assert len(joined) == 400 and joined.startswith("m" * client.REPORTED_MAX + ", n") and joined.endswith("…")


def test_a_vote_whose_steps_report_two_of_the_longest_names_fits_its_columns():
    """Two names of REPORTED_MAX characters and their separator are longer than the vote's columns."""
    from council.execution import _Vote

    vote = _Vote()
    vote.saw("m" * client.REPORTED_MAX, "f" * client.REPORTED_MAX)
    vote.saw("n" * client.REPORTED_MAX, "g" * client.REPORTED_MAX)
    vote.saw("m" * client.REPORTED_MAX, "")
    outcome = vote.outcome(1, {})
    for name in ("response_model", "system_fingerprint"):
        assert len(getattr(outcome, name)) == CouncilVote._meta.get_field(name).max_length


@pytest.mark.django_db
def test_a_run_keeps_its_members_configuration_when_a_member_is_edited_later(small_campaign, fake_llm, sent):
    member = _member(fake_llm, temperature=0.0)
    run = services.council_run_start(campaign=small_campaign, members=[member])
    council_member_add(name=member.name, base_url=fake_llm.base_url, model="fake-ok", temperature=0.7)
    run.refresh_from_db()
    assert run.member_config[member.name]["temperature"] == 0.0
    assert run.member_config[member.name]["model"] == "fake-ok"
    assert "api_key" not in run.member_config[member.name]  # only the variable's name, never a key


@pytest.mark.django_db
def test_a_429_is_retried_after_the_servers_retry_after(small_campaign, fake_llm, monkeypatch):
    waits = []
    real = services.retry_delay
    monkeypatch.setattr(services, "retry_delay", lambda attempt, retry_after: waits.append(retry_after) or real(attempt, retry_after))
    member = _member(fake_llm, "fake-429-once")
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:3"))
    vote = _vote(member, "conv-x:3")
    assert vote.status == "ok" and vote.attempts == 4  # each phase: a 429, then the answer
    assert waits == [pytest.approx(0.05)] * 2


@pytest.mark.django_db
def test_a_batch_waiting_to_retry_after_a_429_says_so_for_the_run_page(small_campaign, fake_llm, monkeypatch):
    recorded = []
    real = services.council_batch_waiting
    monkeypatch.setattr(services, "council_batch_waiting", lambda **kw: recorded.append(kw) or real(**kw))
    member = _member(fake_llm, "fake-429-once")
    batch, _ = _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:3"))
    assert [r["seconds"] for r in recorded] == [pytest.approx(0.05)] * 2  # each phase: one 429, then the answer
    batch.refresh_from_db()
    assert batch.waiting_reason.startswith("429 rate limited") and batch.waiting_reason.endswith("— retry 2 of at most 2")
    assert batch.waiting_until is not None


@pytest.mark.django_db
@pytest.mark.parametrize("model, timeout", [("fake-500-once", 1.0), ("fake-slow-once", 0.3)])
def test_a_5xx_or_a_reply_slower_than_the_client_timeout_is_retried_into_a_vote(small_campaign, fake_llm, model, timeout):
    member = _member(fake_llm, model, timeout_seconds=timeout)
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:3"))
    vote = _vote(member, "conv-x:3")
    assert vote.status == "ok" and vote.attempts == 4


@pytest.mark.django_db
def test_a_member_that_keeps_failing_is_an_error_row_after_the_retry_budget(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-500-always")
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:3"))
    vote = _vote(member, "conv-x:3")
    assert vote.status == "error" and vote.error.startswith("gave up after 3 attempts: 500 server error")


@pytest.mark.django_db
def test_an_unreachable_endpoint_is_an_error_row_naming_the_connection(small_campaign):
    member = council_member_add(name="down", base_url="http://127.0.0.1:9/v1", model="m", timeout_seconds=1.0,
                                requests_per_minute=0)[0]
    _work(_run(small_campaign, member), member, Item.objects.filter(external_id="conv-x:3"))
    assert "connection error" in _vote(member, "conv-x:3").error


@pytest.mark.django_db
def test_a_member_without_its_api_key_stalls_the_run_with_the_reason(small_campaign, fake_llm, monkeypatch):
    monkeypatch.delenv("GK_TEST_KEY", raising=False)
    member = _member(fake_llm, api_key_env="GK_TEST_KEY")
    run = _run(small_campaign, member)
    _work(run, member)
    run.refresh_from_db()
    assert run.status == "stalled" and "GK_TEST_KEY is not set" in run.stalled_reason
    assert not CouncilVote.objects.exists()


@pytest.mark.django_db
def test_a_cancelled_run_records_nothing(small_campaign, fake_llm):
    member = _member(fake_llm)
    run = council_run_cancel(run=_run(small_campaign, member))
    assert run.status == "cancelled"
    _, result = _work(run, member)
    assert result["skipped"] and not CouncilVote.objects.exists() and fake_llm.state.requests == 0


@pytest.mark.django_db
def test_a_run_cancelled_mid_batch_stops_starting_votes_and_sends_no_continuation(small_campaign, fake_llm, sent, monkeypatch):
    _grow(small_campaign.item_set, 27)
    fake_llm.state.latency_ms = 100
    member = _member(fake_llm, concurrency=2)
    run = _run(small_campaign, member)
    real = services.council_outcomes_record

    def cancel_after_the_first_votes(**kwargs):
        real(**kwargs)
        CouncilRun.objects.filter(pk=run.pk).update(cancelled=True, status="cancelled")

    monkeypatch.setattr(services, "council_outcomes_record", cancel_after_the_first_votes)
    _, result = _work(run, member)
    assert result["stopped"] and 0 < CouncilVote.objects.count() < 30 and result["left"] > 0
    assert sent == []


@pytest.mark.django_db
def test_the_member_has_its_concurrency_of_requests_in_flight_and_no_more(small_campaign, fake_llm):
    _grow(small_campaign.item_set, 9)
    fake_llm.state.latency_ms = 150
    member = _member(fake_llm, concurrency=4)
    _work(_run(small_campaign, member), member)
    assert CouncilVote.objects.filter(member=member, status="ok").count() == 12
    assert fake_llm.state.peak_in_flight == 4


@pytest.mark.django_db
def test_slots_held_by_another_batch_of_the_member_count_against_its_concurrency(small_campaign, fake_llm):
    _grow(small_campaign.item_set, 9)
    fake_llm.state.latency_ms = 100
    member = _member(fake_llm, concurrency=3)
    assert len(slots_lease(member, "other-batch", 2, 60)) == 2
    _work(_run(small_campaign, member), member)
    assert fake_llm.state.peak_in_flight == 1
    slots_lease(member, "third-batch", 1, 60)
    CouncilVote.objects.all().delete()
    with pytest.raises(Throttled):  # no slot left: the task retries shortly
        _work(_run(small_campaign, member), member)


@pytest.mark.django_db
def test_requests_keep_to_the_members_rate_limit(small_campaign, fake_llm):
    import time

    member = _member(fake_llm, concurrency=3, requests_per_minute=600)  # one request per 0.1 s
    started = time.time()
    _work(_run(small_campaign, member), member)
    assert CouncilVote.objects.filter(status="ok").count() == 3
    # Six requests reserved start times 0.1 s apart: the next free start is at least 0.6 s after the first.
    assert MemberPace.objects.get(member=member).next_at >= started + 0.6 - 0.01


@pytest.mark.django_db
def test_votes_not_started_in_the_batch_window_go_to_a_continuation(small_campaign, fake_llm, settings, sent):
    _grow(small_campaign.item_set, 12)
    settings.COUNCIL_BATCH_WINDOW = 0.1
    fake_llm.state.latency_ms = 100
    member = _member(fake_llm, concurrency=1)
    run = _run(small_campaign, member)
    batch, result = _work(run, member)
    assert 0 < result["voted"] < 15 and result["left"] == 15 - result["voted"]
    assert sent == [batch.pk]
    batch.refresh_from_db()
    assert batch.holder == "" and not batch.finished
    settings.COUNCIL_BATCH_WINDOW = 60
    execution.batch_work(batch_id=batch.pk, holder="continuation")
    assert CouncilVote.objects.filter(status="ok").count() == 15


@pytest.mark.django_db
def test_a_vote_cut_off_by_the_task_deadline_keeps_its_phase_one_reply(small_campaign, fake_llm, settings, sent, monkeypatch):
    import asyncio

    settings.COUNCIL_SOFT_TIME_LIMIT = 1  # the task's own deadline: max(1, soft - 10) = 1 s
    real, calls = execution.chat_async, []

    async def phase_two_hangs(client, member, messages):
        calls.append(1)
        if len(calls) == 2:
            await asyncio.sleep(30)
        return await real(client, member, messages)

    monkeypatch.setattr(execution, "chat_async", phase_two_hangs)
    member = _member(fake_llm)
    run = _run(small_campaign, member)
    item = Item.objects.filter(external_id="conv-x:3")
    batch, result = _work(run, member, item)
    assert result["left"] == 1 and sent == [batch.pk] and not CouncilVote.objects.exists()
    assert ResponseCache.objects.filter(model="fake-ok").count() == 1

    settings.COUNCIL_SOFT_TIME_LIMIT = 150
    monkeypatch.setattr(execution, "chat_async", real)
    requests = fake_llm.state.requests
    execution.batch_work(batch_id=batch.pk, holder="continuation")
    assert _vote(member, "conv-x:3").status == "ok"
    assert fake_llm.state.requests == requests + 1  # only Phase 2 is asked again


@pytest.mark.django_db
def test_the_queries_per_vote_do_not_grow_with_the_batch(small_campaign, fake_llm, annotator_a, annotator_b):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for(n, model):
        member = _member(fake_llm, model)
        items = list(Item.objects.filter(item_set=small_campaign.item_set).order_by("id"))[:n]
        run = _run(small_campaign, member, total=n)
        with CaptureQueriesContext(connection) as captured:
            _work(run, member, items)
        assert CouncilVote.objects.filter(member=member, status="ok").count() == n
        return len(captured)

    _grow(small_campaign.item_set, 27)
    small, large = queries_for(3, "fake-ok-small"), queries_for(30, "fake-ok-large")
    # Per vote: the recipient's turns (Phase 2 index of two items in three) and one cache look-up; the rest
    # is per batch (claim, pending, items, slots, release), per flush (one transaction at most every 0.25 s,
    # only when there is something to write) or per second (the cancel check) — bounded whatever the size.
    per_vote = (large - small) / 27
    assert per_vote <= 3.0, (small, large)
    assert small <= 40, small  # a 3-vote batch: ~31 (claim, slots, items, five queries a flush, release)


@pytest.mark.django_db
def test_the_soft_time_limit_hands_the_rest_on_and_is_never_an_error_row(small_campaign, fake_llm, sent, monkeypatch):
    from celery.exceptions import SoftTimeLimitExceeded

    def hung_database(**kwargs):
        raise SoftTimeLimitExceeded()  # what Celery raises in the task's thread, here during a write

    monkeypatch.setattr(services, "council_outcomes_record", hung_database)
    member = _member(fake_llm)
    batch, result = _work(_run(small_campaign, member), member)
    assert result["left"] == 3 and sent == [batch.pk]
    assert not CouncilVote.objects.exists()
