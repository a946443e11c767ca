"""The item page, "my work" and the answer API run the same number of queries for 10 and 1,000 items."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.services import campaign_create
from tests.annotation.conftest import answer_all_phase1, enrollment_of, make_twist_items


def _campaign(n, annotator_a, annotator_b):
    item_set = make_twist_items(n, name=f"size {n}", conversation_id=f"conv-{n}")
    return campaign_create(slug=f"c{n}", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)


def _count(client, method, url, **kwargs):
    with CaptureQueriesContext(connection) as ctx:
        response = getattr(client, method)(url, **kwargs)
    assert response.status_code == 200, response.content[:300]
    return len(ctx.captured_queries)


@pytest.fixture
def campaigns(db, annotator_a, annotator_b, client):
    small, large = _campaign(10, annotator_a, annotator_b), _campaign(1000, annotator_a, annotator_b)
    client.force_login(annotator_a)
    return small, large


def _position_of(campaign, user, gold_type):
    return enrollment_of(campaign, user).assignments.filter(item__gold_label=gold_type).first().position + 1


@pytest.mark.parametrize("phase", [1, 2])
@pytest.mark.parametrize("gold_type", ["contradicting", "aligned"])
def test_item_page_queries_do_not_grow_with_the_campaign(campaigns, client, annotator_a, phase, gold_type):
    counts = []
    for campaign in campaigns:
        if phase == 2:
            answer_all_phase1(enrollment_of(campaign, annotator_a))
        position = _position_of(campaign, annotator_a, gold_type)
        counts.append(_count(client, "get", f"/annotate/{campaign.slug}/item/{position}/"))
    assert counts[0] == counts[1] and counts[0] <= 10


def test_my_work_queries_do_not_grow_with_the_campaign(db, annotator_a, annotator_b, client):
    client.force_login(annotator_a)
    _campaign(10, annotator_a, annotator_b)
    small = _count(client, "get", "/annotate/")
    _campaign(1000, annotator_a, annotator_b)
    large = _count(client, "get", "/annotate/")
    assert small == large and small <= 6


def test_answer_api_queries_do_not_grow_with_the_campaign(campaigns, client, annotator_a):
    counts = []
    for campaign in campaigns:
        pk = enrollment_of(campaign, annotator_a).assignments.get(position=3).pk
        url = f"/api/annotation/assignments/{pk}/answer/"
        counts.append(_count(client, "post", url, data={"values": {"q1": "consistent"}, "time_on_item_ms": 5},
                             content_type="application/json"))
        # and the item view of the API
        counts.append(_count(client, "get", f"/api/annotation/assignments/{pk}/"))
    assert counts[0] == counts[2] and counts[1] == counts[3]
    # The answer, its revision, the progress counters and the assignment's phase flags (for Resume).
    assert counts[0] <= 15


def test_my_assignments_api_queries_do_not_grow_with_the_campaign(campaigns, client):
    counts = [_count(client, "get", f"/api/annotation/assignments/?campaign={c.slug}") for c in campaigns]
    assert counts[0] == counts[1]


def test_campaign_create_runs_the_same_queries_for_10_and_1000_items(db, annotator_a, annotator_b):
    counts = []
    for n in (10, 1000):
        item_set = make_twist_items(n, name=f"create {n}", conversation_id=f"conv-create-{n}")
        with CaptureQueriesContext(connection) as ctx:
            campaign_create(slug=f"create{n}", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] <= 12
