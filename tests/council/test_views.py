"""Council pages: authors only (and not while blind), filters, progress JSON, cancel, constant queries."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from council.models import CouncilRun, CouncilVote
from council.services import council_member_add, prompt_version_default
from tests.conftest import item_content_update


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


@pytest.fixture
def small_run(small_campaign):
    member = council_member_add(name="m1", base_url="http://127.0.0.1:9/v1", model="x", is_generator=True)[0]
    run = CouncilRun.objects.create(
        campaign=small_campaign, prompt_version=prompt_version_default(protocol="twist_b"), total_items=3, status="running",
        members_count=1
    )
    run.members.set([member])
    item = small_campaign.item_set.items.get(external_id="conv-x:1")
    CouncilVote.objects.create(campaign=small_campaign, member=member, item=item, prompt_version="twist-b-v1",
                               values={"q1": "contradicts", "q2": "no"}, run=run)
    return run


def _login(client, user):
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_an_author_sees_the_triage_page_with_bands_and_circularity(client, author, small_run):
    response = _login(client, author).get(reverse("council:triage", args=["small"]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "conv-x:1" in body and "Circularity" in body and "q2_no" in body


@pytest.mark.django_db
def test_an_annotator_cannot_open_the_triage_page(client, annotator_a, small_run):
    assert _login(client, annotator_a).get(reverse("council:triage", args=["small"])).status_code == 403


@pytest.mark.django_db
def test_an_outsider_cannot_open_the_council_index(client, outsider):
    assert _login(client, outsider).get(reverse("council:index")).status_code == 403


@pytest.mark.django_db
def test_an_anonymous_visitor_is_sent_to_log_in(client, small_run):
    response = client.get(reverse("council:run-progress", args=[small_run.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_an_author_still_blind_in_the_campaign_cannot_see_its_council(client, author, small_twist, annotator_a):
    from annotation.services import campaign_create

    campaign_create(slug="blind", item_set=small_twist, annotators=[author, annotator_a], seed=3)
    assert _login(client, author).get(reverse("council:triage", args=["blind"])).status_code == 404


@pytest.mark.django_db
def test_an_unknown_campaign_is_404(client, author):
    assert _login(client, author).get(reverse("council:triage", args=["nope"])).status_code == 404


@pytest.mark.django_db
def test_an_unknown_run_is_404(client, author):
    assert _login(client, author).get(reverse("council:run-progress", args=[999])).status_code == 404


@pytest.mark.django_db
def test_the_triage_page_filters_by_band_and_type(client, author, small_run):
    response = _login(client, author).get(reverse("council:triage", args=["small"]), {"type": "aligned"})
    rows = response.context["rows"]
    assert [r["external_id"] for r in rows] == ["conv-x:2"]
    response = client.get(reverse("council:triage", args=["small"]), {"band": "unanimous_match"})
    assert [r["external_id"] for r in response.context["rows"]] == ["conv-x:1"]


@pytest.mark.django_db
def test_the_progress_endpoint_reports_done_errors_and_remaining_per_member(client, author, small_run):
    data = _login(client, author).get(reverse("council:run-progress", args=[small_run.pk])).json()
    assert data["members"] == [
        {"member": "m1", "is_generator": True, "done": 1, "errors": 0, "remaining": 2, "total": 3,
         "state": "waiting", "detail": "waiting for a worker", "retry_in": None}
    ]
    assert data["finished"] is False


@pytest.mark.django_db
def test_the_run_page_shows_a_cancel_button(client, author, small_run):
    body = _login(client, author).get(reverse("council:run", args=[small_run.pk])).content.decode()
    assert "Cancel run" in body and "progress.json" in body


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["finished", "cancelled"])
def test_an_ended_run_offers_no_cancel(client, author, small_run, status):
    CouncilRun.objects.filter(pk=small_run.pk).update(status=status, cancelled=status == "cancelled")
    body = _login(client, author).get(reverse("council:run", args=[small_run.pk])).content.decode()
    assert "Cancel run" not in body
    assert client.get(reverse("council:run-progress", args=[small_run.pk])).json()["can_cancel"] is False


@pytest.mark.django_db
def test_a_run_whose_every_vote_is_in_offers_no_cancel_even_before_its_status_moves(client, author, small_run):
    member = small_run.members.get()
    for item in small_run.campaign.item_set.items.exclude(external_id="conv-x:1"):
        CouncilVote.objects.create(campaign=small_run.campaign, member=member, item=item, prompt_version="twist-b-v1",
                                   values={"q1": "consistent"}, run=small_run)
    body = _login(client, author).get(reverse("council:run", args=[small_run.pk])).content.decode()
    assert "Cancel run" not in body and 'state-done' in body


@pytest.mark.django_db
def test_cancelling_a_run_that_has_ended_says_there_was_nothing_to_cancel(client, author, small_run):
    CouncilRun.objects.filter(pk=small_run.pk).update(status="finished")
    response = _login(client, author).post(reverse("council:run-cancel", args=[small_run.pk]), follow=True)
    assert "had already finished: there was nothing left to cancel" in response.content.decode()
    small_run.refresh_from_db()
    assert small_run.status == "finished" and not small_run.cancelled


@pytest.mark.django_db
def test_the_progress_says_a_member_is_retrying_and_why_while_its_batch_waits(client, author, small_run):
    from council.models import CouncilBatch
    from council.services import council_batch_waiting

    member = small_run.members.get()
    batch = CouncilBatch.objects.create(run=small_run, member=member, item_ids=[], holder="task-1",
                                        lease_until=timezone.now() + timedelta(minutes=5))
    _login(client, author)
    url = reverse("council:run-progress", args=[small_run.pk])
    assert client.get(url).json()["members"][0]["state"] == "calling"
    council_batch_waiting(batch_id=batch.pk, seconds=30, reason="429 rate limited: slow down — retry 1 of at most 5")
    m = client.get(url).json()["members"][0]
    assert m["state"] == "retrying" and m["detail"].startswith("429 rate limited") and 0 < m["retry_in"] <= 30
    page = client.get(reverse("council:run", args=[small_run.pk])).content.decode()
    assert "state-retrying" in page and "429 rate limited: slow down" in page and "next try in" in page
    CouncilBatch.objects.filter(pk=batch.pk).update(waiting_until=timezone.now() - timedelta(seconds=1))
    assert client.get(url).json()["members"][0]["state"] == "calling"  # the wait is over: calling again
    CouncilBatch.objects.filter(pk=batch.pk).update(holder="", lease_until=None)
    m = client.get(url).json()["members"][0]
    assert (m["state"], m["detail"]) == ("waiting", "waiting for a worker")


@pytest.mark.django_db
def test_the_progress_runs_the_same_queries_for_one_and_many_batches(client, author, small_run, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from council.models import CouncilBatch

    member = small_run.members.get()
    _login(client, author)
    url = reverse("council:run-progress", args=[small_run.pk])
    CouncilBatch.objects.create(run=small_run, member=member, item_ids=[])
    client.get(url)
    with CaptureQueriesContext(connection) as one:
        client.get(url)
    CouncilBatch.objects.bulk_create(CouncilBatch(run=small_run, member=member, item_ids=[]) for _ in range(30))
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(one) == len(many)


@pytest.mark.django_db
def test_cancelling_a_run_marks_it_cancelled(client, author, small_run):
    response = _login(client, author).post(reverse("council:run-cancel", args=[small_run.pk]))
    assert response.status_code == 302
    small_run.refresh_from_db()
    assert small_run.cancelled and small_run.status == "cancelled"


@pytest.mark.django_db
def test_an_annotator_cannot_cancel_a_run(client, annotator_a, small_run):
    assert _login(client, annotator_a).post(reverse("council:run-cancel", args=[small_run.pk])).status_code == 403
    small_run.refresh_from_db()
    assert not small_run.cancelled


@pytest.mark.django_db
def test_a_stalled_run_says_why_on_its_page_and_in_its_progress(client, author, small_run):
    from council.services import council_run_stall

    council_run_stall(run_id=small_run.pk, reason="member 'm1': 2 vote(s) still missing after their batch was sent again 5 times")
    _login(client, author)
    data = client.get(reverse("council:run-progress", args=[small_run.pk])).json()
    assert data["status"] == "stalled" and "sent again 5 times" in data["stalled_reason"]
    page = client.get(reverse("council:run", args=[small_run.pk])).content.decode()
    assert "sent again 5 times" in page


@pytest.mark.django_db
def test_cancel_by_get_is_not_allowed(client, author, small_run):
    assert _login(client, author).get(reverse("council:run-cancel", args=[small_run.pk])).status_code == 405


@pytest.mark.django_db
def test_an_author_starts_a_run_from_the_council_page(client, author, small_run, monkeypatch, django_capture_on_commit_callbacks):
    from council import tasks

    monkeypatch.setattr(tasks.council_batch, "delay", lambda *args: None)
    with django_capture_on_commit_callbacks(execute=True):
        response = _login(client, author).post(reverse("council:run-start", args=["small"]), {"members": ["m1"]})
    run = CouncilRun.objects.order_by("-pk").first()
    assert response.status_code == 302 and response["Location"] == reverse("council:run", args=[run.pk])


@pytest.mark.django_db
def test_the_triage_page_runs_a_constant_number_of_queries(client, author, released_council, small_run, django_assert_max_num_queries):
    _login(client, author)
    client.get(reverse("council:triage", args=["small"]))  # warm the session and role caches
    with django_assert_max_num_queries(12) as small:
        client.get(reverse("council:triage", args=["small"]))
    with django_assert_max_num_queries(len(small.captured_queries)):
        response = client.get(reverse("council:triage", args=["twist-v1"]))
    assert len(response.context["rows"]) == 50 and response.context["n_matching"] == 200  # a page of the rows


@pytest.mark.django_db
def test_triage_ids_link_to_the_items_adjudication_page(client, author, small_run):
    body = _login(client, author).get(reverse("council:triage", args=["small"])).content.decode()
    item = small_run.campaign.item_set.items.get(external_id="conv-x:1")
    assert f'href="{reverse("adjudication:item", args=["small", item.pk])}"' in body


@pytest.mark.django_db
def test_the_triage_table_pages_through_the_matching_rows_keeping_the_filter(client, author, small_run, monkeypatch):
    from council import views

    monkeypatch.setattr(views, "TRIAGE_PAGE_SIZE", 1)
    _login(client, author)
    url = reverse("council:triage", args=["small"])
    first = client.get(url, {"band": "abstain_heavy"})
    assert [r["external_id"] for r in first.context["rows"]] == ["conv-x:2"] and first.context["pages"] == 2
    assert "?page=2&amp;band=abstain_heavy" in first.content.decode()
    second = client.get(url, {"band": "abstain_heavy", "page": "2"})
    assert [r["external_id"] for r in second.context["rows"]] == ["conv-x:3"]
    assert "page 2 of 2" in second.content.decode()


@pytest.mark.django_db
def test_an_unknown_triage_filter_shows_every_row(client, author, small_run):
    response = _login(client, author).get(reverse("council:triage", args=["small"]), {"band": "<b>x", "type": "nope"})
    assert response.context["n_matching"] == 3 and "<b>x" not in response.content.decode()


@pytest.mark.django_db
def test_an_author_queues_the_gates_for_an_item_set(client, author, small_twist, monkeypatch, django_capture_on_commit_callbacks):
    from council import tasks

    sent = []
    monkeypatch.setattr(tasks.gates_run_task, "delay", lambda *args: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        response = _login(client, author).post(reverse("council:gates-start", args=[small_twist.pk]), {"llm": ""})
    assert response.status_code == 302
    assert sent == [(small_twist.pk, None)]


@pytest.mark.django_db
def test_an_annotator_cannot_queue_the_gates(client, annotator_a, small_twist):
    assert _login(client, annotator_a).post(reverse("council:gates-start", args=[small_twist.pk])).status_code == 403


@pytest.mark.django_db
def test_gates_for_an_unknown_item_set_are_404(client, author):
    assert _login(client, author).post(reverse("council:gates-start", args=[999])).status_code == 404


@pytest.mark.django_db
def test_the_council_index_shows_gate_results_per_item_set(client, author, small_twist):
    from council.gates import gates_run
    from items.models import Item

    item_content_update(Item.objects.filter(external_id="conv-x:1"), contradicted_quote="")
    gates_run(item_set_id=small_twist.pk)
    body = _login(client, author).get(reverse("council:index")).content.decode()
    assert "verbatim_quote 1" in body


@pytest.mark.django_db
def test_gate_rejects_carry_all_their_verdicts(small_twist):
    from council.gates import gates_run
    from council.selectors import gate_rejects
    from items.models import Item

    item_content_update(Item.objects.filter(external_id="conv-x:1"), contradicted_quote="")
    gates_run(item_set_id=small_twist.pk)
    rejects = gate_rejects(small_twist)
    assert [r["id"] for r in rejects] == ["conv-x:1"]
    assert {v["gate"] for v in rejects[0]["verdicts"]} == {"recipient_speaker", "verbatim_quote", "evidence_ids", "addressee"}
