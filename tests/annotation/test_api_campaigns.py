"""The campaign API: authors create campaigns and follow progress; nobody else can, and progress never
carries an answer."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Campaign
from annotation.services import answer_save
from tests.annotation.conftest import enrollment_of

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_an_author_creates_a_campaign_with_the_commands_service(twist_set, author, annotator_a, annotator_b):
    response = token_client(author).post(
        "/api/campaigns/", {"slug": "c1", "item_set": twist_set.name, "annotators": ["ann_a", "ann_b"], "seed": 4},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["slug"], body["protocol"], body["per_item"], body["seed"]) == ("c1", "twist_b", 2, 4)
    assert [(a["pseudonym"], a["username"], a["assigned"]) for a in body["annotators"]] == [("A", "ann_a", 6), ("B", "ann_b", 6)]
    assert Campaign.objects.get(slug="c1").created_by == author


def test_a_refused_campaign_is_a_400_with_the_services_message(twist_campaign, author):
    client = token_client(author)
    taken = client.post("/api/campaigns/", {"slug": "tw", "item_set": "synthetic twist", "annotators": ["ann_a"], "per_item": 1},
                        format="json")
    assert taken.status_code == 400 and taken.json()["detail"] == "campaign 'tw' already exists"
    unknown = client.post("/api/campaigns/", {"slug": "c2", "item_set": "nothing", "annotators": ["ann_a"]}, format="json")
    assert unknown.status_code == 400 and "no item set named 'nothing'" in unknown.json()["detail"]
    invalid = client.post("/api/campaigns/", {"slug": "not a slug", "item_set": "x", "annotators": []}, format="json")
    assert invalid.status_code == 400 and {"slug", "annotators"} <= set(invalid.json())
    assert Campaign.objects.count() == 1


def test_progress_counts_answers_but_shows_none(twist_campaign, author, annotator_a):
    first = enrollment_of(twist_campaign, annotator_a).assignments.order_by("position").first()
    answer_save(assignment=first, values={"q1": "consistent", "q1note": "PRIVATE-NOTE"})
    response = token_client(author).get("/api/campaigns/tw/progress/")
    assert response.status_code == 200
    rows = {r["pseudonym"]: r for r in response.json()["annotators"]}
    assert rows["A"]["phase1"] == {"done": 1, "total": 6, "percent": 17} and rows["B"]["phase1"]["done"] == 0
    assert "PRIVATE-NOTE" not in response.content.decode() and "consistent" not in response.content.decode()


def test_the_campaign_list_shows_every_campaign_to_an_author(twist_campaign, lapse_campaign, author):
    assert [c["slug"] for c in token_client(author).get("/api/campaigns/").json()] == ["lp", "tw"]


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_authors_cannot_create_list_or_follow_campaigns(twist_set, twist_campaign, persona, request):
    client = token_client(request.getfixturevalue(persona))
    assert client.get("/api/campaigns/").status_code == 403
    assert client.get("/api/campaigns/tw/progress/").status_code == 403
    created = client.post("/api/campaigns/", {"slug": "c3", "item_set": twist_set.name, "annotators": ["ann_a"], "per_item": 1},
                          format="json")
    assert created.status_code == 403 and not Campaign.objects.filter(slug="c3").exists()


def test_progress_of_a_missing_campaign_is_404(author):
    assert token_client(author).get("/api/campaigns/nope/progress/").status_code == 404


def test_progress_runs_a_constant_number_of_queries(twist_campaign, lapse_campaign, author, django_assert_max_num_queries):
    client = token_client(author)
    client.get("/api/campaigns/tw/progress/")
    with django_assert_max_num_queries(8) as small:
        client.get("/api/campaigns/lp/progress/")
    few = len(small.captured_queries)
    with django_assert_max_num_queries(few):
        client.get("/api/campaigns/tw/progress/")


def test_closing_waits_for_every_annotator_unless_told_to_end_the_open_ones(twist_campaign, author):
    client = token_client(author)
    refused = client.post("/api/campaigns/tw/close/", {}, format="json")
    assert refused.status_code == 400 and "not submitted (A, B)" in refused.json()["detail"]
    assert Campaign.objects.get(slug="tw").status == "annotating"
    closed = client.post("/api/campaigns/tw/close/", {"end_open": True}, format="json")
    assert closed.status_code == 200 and closed.json()["status"] == "closed" and closed.json()["closed_at"]
    assert Campaign.objects.get(slug="tw").closed_by == author
    again = client.post("/api/campaigns/tw/close/", {"end_open": True}, format="json")
    assert again.status_code == 403 and "closed" in again.json()["detail"]


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_authors_cannot_close_a_campaign(twist_campaign, persona, request):
    refused = token_client(request.getfixturevalue(persona)).post("/api/campaigns/tw/close/", {"end_open": True}, format="json")
    assert refused.status_code == 403 and Campaign.objects.get(slug="tw").status == "annotating"


def test_closing_a_missing_campaign_is_404(author):
    assert token_client(author).post("/api/campaigns/nope/close/", {}, format="json").status_code == 404


@pytest.mark.parametrize("field,model,column", [
    ("slug", Campaign, "slug"), ("name", Campaign, "name"), ("pseudonyms", None, "pseudonym"),
])
def test_a_campaign_text_over_its_column_is_a_400_naming_the_field(twist_set, author, annotator_a, annotator_b, field, model, column):
    from annotation.models import Enrollment

    n = (model or Enrollment)._meta.get_field(column).max_length
    body = {"slug": "c1", "item_set": twist_set.name, "annotators": ["ann_a", "ann_b"], "seed": 4}
    over = {**body, field: ["A", "b" * (n + 1)] if field == "pseudonyms" else "c" * (n + 1)}
    client = token_client(author)
    response = client.post("/api/campaigns/", over, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert not Campaign.objects.exists()
    exact = {**body, field: ["A", "b" * n] if field == "pseudonyms" else "c" * n}
    assert client.post("/api/campaigns/", exact, format="json").status_code == 201


def test_campaign_create_refuses_a_text_over_its_column_naming_the_field(twist_set, annotator_a, annotator_b):
    from annotation.services import campaign_create
    from goldkey.errors import ApplicationError

    n = Campaign._meta.get_field("slug").max_length
    with pytest.raises(ApplicationError, match=rf"field 'slug': a text of {n + 1} characters \(at most {n}\)"):
        campaign_create(slug="c" * (n + 1), item_set=twist_set, annotators=[annotator_a, annotator_b])
    assert not Campaign.objects.exists()
