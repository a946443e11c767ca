"""Producing votes through the real openai SDK against the local server; replay; members; runs."""

import json

import pytest

from council.client import TransientCallError
from council.models import CouncilRun, CouncilVote, ResponseCache
from council.services import (
    council_member_add,
    council_run_cancel,
    council_run_start,
    council_vote_produce,
    council_votes_import,
    prompt_version_default,
    retry_delay,
)
from goldkey.errors import ApplicationError
from items.models import Item


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


def _run(campaign, *members):
    run = CouncilRun.objects.create(
        campaign=campaign, prompt_version=prompt_version_default(protocol="twist_b"), total_items=3, status="running",
        members_count=len(members)
    )
    run.members.set(members)
    return run


def _member(fake_llm, model="fake-ok", name=None, **extra):
    return council_member_add(name=name or model, base_url=fake_llm.base_url, model=model, timeout_seconds=1.0,
                              requests_per_minute=0, **extra)[0]


def _produce(run, member, item):
    return council_vote_produce(run_id=run.pk, member_id=member.pk, item_id=item.pk, holder="test")


@pytest.mark.django_db
def test_a_member_answers_phase_one_then_the_phase_two_questions_of_the_items_type(small_campaign, fake_llm):
    member = _member(fake_llm)
    run = _run(small_campaign, member)
    contradicting = Item.objects.get(external_id="conv-x:1")
    aligned = Item.objects.get(external_id="conv-x:2")
    assert set(_produce(run, member, contradicting).values) == {"q1", "q2", "q2quote"}
    assert set(_produce(run, member, aligned).values) - {"q3turn"} == {"q1", "q3"}


@pytest.mark.django_db
def test_the_vote_is_valid_in_the_annotators_answer_format(small_campaign, fake_llm):
    import protocols

    member = _member(fake_llm)
    item = Item.objects.get(external_id="conv-x:1")
    vote = _produce(_run(small_campaign, member), member, item)
    assert vote.status == "ok"
    assert protocols.get("twist_b").validate_values(vote.values, item.gold_type) == []


@pytest.mark.django_db
def test_phase_one_shows_no_gold_and_no_phase_shows_family_or_rationale(small_campaign, fake_llm, monkeypatch):
    sent = []
    import council.services as services

    real_chat = services.chat
    monkeypatch.setattr(services, "chat", lambda member, messages: sent.append(json.dumps(messages)) or real_chat(member, messages))
    member = _member(fake_llm)
    _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:1"))
    phase1, phase2 = sent
    assert "Hope the pottery class" in phase1 and "9 May, 2023" in phase1
    assert "contradicting" not in phase1 and "Quoted text" not in phase1
    assert "Quoted text" in phase2
    for text in sent:
        assert "generator's reason" not in text and "\"x\"" not in text


@pytest.mark.django_db
def test_a_malformed_answer_is_retried_once_and_then_recorded(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-malformed-once")
    vote = _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:2"))
    assert vote.status == "ok"
    assert vote.attempts == 4  # two phases, each malformed once then corrected


@pytest.mark.django_db
def test_an_answer_malformed_twice_is_an_error_row_never_a_vote(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-malformed-always")
    vote = _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:2"))
    assert vote.status == "error" and "malformed" in vote.error
    assert vote.attempts == 2


@pytest.mark.django_db
def test_a_second_delivery_of_the_same_task_creates_no_second_vote(small_campaign, fake_llm):
    member = _member(fake_llm)
    run = _run(small_campaign, member)
    item = Item.objects.get(external_id="conv-x:3")
    assert _produce(run, member, item) is not None
    assert _produce(run, member, item) is None
    assert CouncilVote.objects.filter(member=member, item=item).count() == 1


@pytest.mark.django_db
def test_a_rerun_answers_from_the_cache_without_calling_again(small_campaign, fake_llm):
    member = _member(fake_llm)
    item = Item.objects.get(external_id="conv-x:3")
    first = _produce(_run(small_campaign, member), member, item)
    calls = fake_llm.state.requests
    CouncilVote.objects.all().delete()
    second = _produce(_run(small_campaign, member), member, item)
    assert fake_llm.state.requests == calls
    assert second.values == first.values and second.attempts == 0
    assert ResponseCache.objects.filter(model="fake-ok").count() == 2


@pytest.mark.django_db
def test_a_429_is_transient_and_carries_the_servers_retry_after(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-429-once")
    with pytest.raises(TransientCallError) as caught:
        _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:3"))
    assert caught.value.retry_after == pytest.approx(0.05)


@pytest.mark.django_db
def test_a_500_is_transient(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-500-once")
    with pytest.raises(TransientCallError, match="500"):
        _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:3"))


@pytest.mark.django_db
def test_a_response_slower_than_the_client_timeout_is_transient(small_campaign, fake_llm):
    member = _member(fake_llm, "fake-slow-once")
    member.timeout_seconds = 0.3
    member.save()
    with pytest.raises(TransientCallError, match="timeout"):
        _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:3"))


@pytest.mark.django_db
def test_an_unreachable_endpoint_is_transient(small_campaign):
    member = council_member_add(name="down", base_url="http://127.0.0.1:9/v1", model="m", timeout_seconds=1.0)[0]
    with pytest.raises(TransientCallError, match="connection"):
        _produce(_run(small_campaign, member), member, Item.objects.get(external_id="conv-x:3"))


def test_retry_after_is_honoured_and_backoff_grows_otherwise():
    assert retry_delay(3, 2.0) == 2.0
    assert retry_delay(0, None) <= 1.0 < retry_delay(3, None) * 2


@pytest.mark.django_db
def test_a_cancelled_run_records_nothing(small_campaign, fake_llm):
    member = _member(fake_llm)
    run = council_run_cancel(run=_run(small_campaign, member))
    assert run.status == "cancelled"
    assert _produce(run, member, Item.objects.get(external_id="conv-x:3")) is None
    assert not CouncilVote.objects.exists()


@pytest.mark.django_db
def test_starting_a_run_enqueues_one_task_per_member_and_item_on_commit(
    small_campaign, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    from council import tasks

    sent = []
    monkeypatch.setattr(tasks.council_vote, "delay", lambda *args: sent.append(args))
    members = [_member(fake_llm, name="m1"), _member(fake_llm, name="m2")]
    with django_capture_on_commit_callbacks(execute=True):
        run = council_run_start(campaign=small_campaign, members=members)
    assert len(sent) == 6 and len(set(sent)) == 6
    assert run.total_items == 3


@pytest.mark.django_db
def test_a_run_without_members_is_refused(small_campaign):
    with pytest.raises(ApplicationError):
        council_run_start(campaign=small_campaign, members=[])


@pytest.mark.django_db
def test_reimporting_the_same_council_file_changes_nothing(released_council, shared_data):
    from tests.council.conftest import COUNCIL_FILES

    path = shared_data("twist-v1", "annotation", "council", COUNCIL_FILES["openai-gpt-4o"])
    result = council_votes_import(campaign=released_council, path=path, member_name="openai-gpt-4o")
    assert result["created"] == 0 and result["unchanged"] == 200
    assert CouncilVote.objects.filter(prompt_version="imported").count() == 600


@pytest.mark.django_db
def test_a_council_file_naming_an_unknown_item_is_refused_whole(small_campaign, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"annotator": "m", "answers": {"conv-x:1": {"q1": "consistent"}, "nope": {"q1": "consistent"}}}))
    with pytest.raises(ApplicationError, match="nope"):
        council_votes_import(campaign=small_campaign, path=path, member_name="m")
    assert not CouncilVote.objects.exists()


@pytest.mark.django_db
def test_a_council_file_with_an_invalid_value_is_refused(small_campaign, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"annotator": "m", "answers": {"conv-x:1": {"q1": "maybe"}}}))
    with pytest.raises(ApplicationError, match="maybe"):
        council_votes_import(campaign=small_campaign, path=path, member_name="m")


def _queries_per_vote(run, member, items) -> list[int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for item in items:
        with CaptureQueriesContext(connection) as queries:
            assert _produce(run, member, item).status == "ok"
        counts.append(len(queries))
    return counts


@pytest.mark.django_db
def test_the_queries_per_vote_stay_the_same_whatever_the_size_of_the_run(small_campaign, fake_llm, annotator_a, annotator_b):
    from annotation.services import campaign_create
    from items.models import Evidence

    small_member = _member(fake_llm, model="fake-ok-small")
    small_run = _run(small_campaign, small_member)
    small = _queries_per_vote(small_run, small_member, Item.objects.filter(item_set=small_campaign.item_set))

    template = list(Item.objects.filter(item_set=small_campaign.item_set).prefetch_related("evidence"))
    for n in range(27):  # the same three kinds of item, ten times as many
        source = template[n % 3]
        evidence = list(source.evidence.all())
        source.pk, source.external_id, source.draft = None, f"conv-x:{n + 4}", f"{source.draft} ({n})"
        source.save()
        Evidence.objects.bulk_create(Evidence(item=source, turn_id=e.turn_id, position=e.position) for e in evidence)
    large_campaign = campaign_create(slug="large", item_set=small_campaign.item_set, annotators=[annotator_a, annotator_b], seed=2)
    large_member = _member(fake_llm, model="fake-ok-large")
    large_run = _run(large_campaign, large_member)
    CouncilRun.objects.filter(pk=large_run.pk).update(total_items=30)
    large_run.refresh_from_db()
    large = _queries_per_vote(large_run, large_member, Item.objects.filter(item_set=small_campaign.item_set))

    assert max(large) == max(small)  # the first vote of a member also creates its slot rows and reads the run's members
    # A fresh two-call vote: run (+ "already voted"), member, item, evidence, recipient turns, two cache
    # look-ups, slot lease (2) and release, vote + cached replies in one transaction (a savepoint here, inside
    # the test's transaction), completion count, and the finishing update on the last vote.
    assert max(large[1:]) <= 16
    assert max(large[1:]) == max(small[1:])
    large_run.refresh_from_db()
    assert large_run.status == "finished"


@pytest.mark.django_db
def test_a_transient_error_in_phase_two_keeps_phase_ones_reply_in_the_cache_and_frees_the_slot(
    small_campaign, fake_llm, monkeypatch
):
    from council import services
    from council.models import MemberSlot

    member = _member(fake_llm)
    run = _run(small_campaign, member)
    real_chat, calls = services.chat, []

    def chat_failing_the_second_call(member, messages):
        calls.append(1)
        if len(calls) == 2:
            raise TransientCallError("503 server error")
        return real_chat(member, messages)

    monkeypatch.setattr(services, "chat", chat_failing_the_second_call)
    item = Item.objects.get(external_id="conv-x:3")
    with pytest.raises(TransientCallError):
        _produce(run, member, item)
    assert ResponseCache.objects.filter(model="fake-ok").count() == 1
    assert not MemberSlot.objects.filter(member=member).exclude(holder="").exists()

    monkeypatch.setattr(services, "chat", real_chat)
    requests = fake_llm.state.requests
    assert _produce(run, member, item).status == "ok"
    assert fake_llm.state.requests == requests + 1  # only Phase 2 is asked again
