import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import AnswerRevision, Assignment
from tests.annotation.conftest import answer_all_phase1, enrollment_of


def _session(user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _token(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _csrf_post(client, url, data):
    client.get("/annotate/")  # sets the csrftoken cookie, as the item page does
    token = client.cookies["csrftoken"].value
    return client.post(url, data, format="json", HTTP_X_CSRFTOKEN=token)


def _pk(campaign, user, **filters):
    return enrollment_of(campaign, user).assignments.filter(**filters).order_by("position").first().pk


def test_my_assignments_lists_only_mine_in_my_order(twist_campaign, annotator_a):
    response = _token(annotator_a).get("/api/annotation/assignments/?campaign=tw")
    assert response.status_code == 200
    results = response.json()["results"]
    mine = list(enrollment_of(twist_campaign, annotator_a).assignments.order_by("position").values_list("pk", flat=True))
    assert [r["id"] for r in results] == mine and [r["position"] for r in results] == [1, 2, 3, 4, 5, 6]


def test_my_assignments_of_a_campaign_i_do_not_annotate_is_403_and_missing_is_404(twist_campaign, outsider):
    from django.contrib.auth.models import Group

    outsider.groups.add(Group.objects.get_or_create(name="annotator")[0])
    assert _token(outsider).get("/api/annotation/assignments/?campaign=tw").status_code == 403
    assert _token(outsider).get("/api/annotation/assignments/?campaign=nope").status_code == 404


def test_blind_item_view_has_only_whitelisted_fields_and_excerpts(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a, item__gold_label="contradicting")
    data = _token(annotator_a).get(f"/api/annotation/assignments/{pk}/").json()
    assert set(data["item"]) == {"recipient", "draft"}
    assert set(data["excerpts"][0]) == {"dia_id", "date", "speaker", "text"}
    assert "phase2" not in data and "SECRET" not in str(data)


def test_blind_item_view_adds_the_phase2_questions_and_quote_once_phase2_is_open(twist_campaign, annotator_a):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a))
    pk = _pk(twist_campaign, annotator_a, item__gold_label="contradicting")
    data = _token(annotator_a).get(f"/api/annotation/assignments/{pk}/").json()
    assert data["phase"] == 2 and data["phase2"]["questions"] == ["q2", "q2quote", "p2note"]
    assert data["phase2"]["quote"].startswith("SECRET-QUOTE")


def test_someone_elses_assignment_and_a_missing_one_get_the_same_404(twist_campaign, annotator_a, annotator_b):
    other = _pk(twist_campaign, annotator_b)
    missing = Assignment.objects.order_by("-pk").first().pk + 1
    client = _token(annotator_a)

    def answers(pk):
        return [(r.status_code, r.content) for r in (
            client.get(f"/api/annotation/assignments/{pk}/"),
            client.post(f"/api/annotation/assignments/{pk}/answer/", {"values": {"q1": "consistent"}}, format="json"),
            client.post(f"/api/annotation/assignments/{pk}/skip/"),
        )]

    assert answers(other) == answers(missing)
    assert {status for status, _ in answers(other)} == {404}
    assert not AnswerRevision.objects.exists()


def test_non_annotators_and_anonymous_users_cannot_use_the_api(twist_campaign, outsider, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    assert _token(outsider).get(f"/api/annotation/assignments/{pk}/").status_code == 403
    assert APIClient().get(f"/api/annotation/assignments/{pk}/").status_code in (401, 403)


def test_answer_upsert_works_with_token_and_with_session_and_csrf(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    url = f"/api/annotation/assignments/{pk}/answer/"
    assert _token(annotator_a).post(url, {"values": {"q1": "consistent"}}, format="json").json()["revision"] == 1
    session = _session(annotator_a)
    assert session.post(url, {"values": {"q1note": "x"}}, format="json").status_code == 403  # no CSRF token
    response = _csrf_post(session, url, {"values": {"q1note": "x"}, "time_on_item_ms": 1500})
    assert response.status_code == 200 and response.json()["values"] == {"q1": "consistent", "q1note": "x"}


def test_a_network_retry_of_the_same_request_makes_one_revision(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    client = _token(annotator_a)
    url = f"/api/annotation/assignments/{pk}/answer/"
    first = client.post(url, {"values": {"q1": "contradicts"}}, format="json").json()
    retry = client.post(url, {"values": {"q1": "contradicts"}}, format="json").json()
    assert first["changed"] and not retry["changed"] and retry["revision"] == 1
    assert AnswerRevision.objects.count() == 1


def test_two_clients_interleaving_partial_saves_keep_both_fields(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    url = f"/api/annotation/assignments/{pk}/answer/"
    tab1, tab2 = _token(annotator_a), _session(annotator_a)
    tab1.post(url, {"values": {"q1": "contradicts"}}, format="json")
    _csrf_post(tab2, url, {"values": {"q1note": "tab two"}})
    final = tab1.post(url, {"values": {"q1": "cannot-tell"}}, format="json").json()
    assert final["values"] == {"q1": "cannot-tell", "q1note": "tab two"} and final["revision"] == 3


def test_answer_upsert_refuses_invalid_values_and_phase2_before_phase1(twist_campaign, annotator_a):
    client = _token(annotator_a)
    pk = _pk(twist_campaign, annotator_a, item__gold_label="aligned")
    bad = client.post(f"/api/annotation/assignments/{pk}/answer/", {"values": {"q1": "perhaps"}}, format="json")
    assert bad.status_code == 400 and "q1" in bad.json()["detail"]
    early = client.post(f"/api/annotation/assignments/{pk}/answer/", {"values": {"q3": "clean"}}, format="json")
    assert early.status_code == 403 and "Phase 2" in early.json()["detail"]


def test_the_last_phase1_answer_says_phase1_can_be_finished_and_locks_nothing(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    client = _token(annotator_a)
    assignments = list(enrollment.assignments.order_by("position"))
    replies = [
        client.post(f"/api/annotation/assignments/{a.pk}/answer/", {"values": {"q1": "consistent"}}, format="json").json()
        for a in assignments
    ]
    assert [r["phase1_ready"] for r in replies] == [False] * 5 + [True]
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is None
    # still Phase 1: a verdict can be changed after the last item is answered
    again = client.post(f"/api/annotation/assignments/{assignments[0].pk}/answer/", {"values": {"q1": "cannot-tell"}},
                        format="json")
    assert again.status_code == 200 and again.json()["values"]["q1"] == "cannot-tell"


@pytest.mark.parametrize("path", ["/api/annotation/assignments/", "/api/annotation/assignments/{id}/",
                                  "/api/annotation/assignments/{id}/answer/"])
def test_annotation_endpoints_are_in_the_openapi_schema(client, path):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert path in response.json()["paths"]


def test_my_assignments_without_a_campaign_lists_all_of_mine(twist_campaign, lapse_campaign, annotator_a):
    results = _token(annotator_a).get("/api/annotation/assignments/").json()["results"]
    assert {r["campaign"] for r in results} == {"tw", "lp"}
    assert len(results) == 6 + enrollment_of(lapse_campaign, annotator_a).assigned_count


def test_refusing_a_phase2_answer_in_phase1_does_not_reveal_the_gold_type(twist_campaign, annotator_a):
    client = _token(annotator_a)
    replies = set()
    for gold_type in ("contradicting", "aligned", "hard_negative"):
        pk = _pk(twist_campaign, annotator_a, item__gold_label=gold_type)
        for values in ({"q2": "yes"}, {"q3": "clean"}, {"q2quote": "no"}, {"q3turn": "D1:1"}):
            response = client.post(f"/api/annotation/assignments/{pk}/answer/", {"values": values}, format="json")
            replies.add((response.status_code, response.json()["detail"].split(": ", 1)[1]))
    assert len(replies) == 1 and next(iter(replies))[0] == 403


# ----- refusals name the item by its position, never by its id ----------------------------------------

def _answer(client, pk, values, **extra):
    return client.post(f"/api/annotation/assignments/{pk}/answer/", {"values": values, **extra}, format="json")


def test_every_refusal_of_an_answer_names_the_item_by_position_and_never_by_id(twist_campaign, annotator_a):
    from annotation.services import enrollment_submit
    from items.models import Item
    from tests.annotation.conftest import answer_all_phase2

    enrollment = enrollment_of(twist_campaign, annotator_a)
    client = _token(annotator_a)
    third = enrollment.assignments.select_related("item").get(position=2)
    ids = set(Item.objects.values_list("external_id", flat=True))
    refusals = [
        _answer(client, third.pk, {"q1": "perhaps"}),  # not a choice
        _answer(client, third.pk, {"q9": "x"}),  # not a question
        _answer(client, third.pk, {"q2": "yes"}),  # a Phase 2 key in Phase 1
    ]
    answer_all_phase1(enrollment)
    refusals.append(_answer(client, third.pk, {"q1": "cannot-tell"}))  # Phase 1 is locked
    answer_all_phase2(enrollment)
    enrollment_submit(enrollment=enrollment)
    refusals.append(_answer(client, third.pk, {"p2note": "late"}))  # submitted
    assert [r.status_code for r in refusals] == [400, 400, 403, 403, 403]
    for response in refusals:
        body = response.content.decode()
        assert response.json()["detail"].startswith("item 3 of 6: ")
        assert not [i for i in ids if i in body] and "conv-x" not in body


def test_a_stale_tab_is_answered_409_with_the_current_answer_and_no_id(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    tab1, tab2 = _token(annotator_a), _token(annotator_a)
    assert _answer(tab1, pk, {"q1note": "one"}, revision=0, writer="tab-1", seq=1).json()["revision"] == 1
    stale = _answer(tab2, pk, {"q1note": "two"}, revision=0, writer="tab-2", seq=1)
    assert stale.status_code == 409
    data = stale.json()
    assert data["current"] == {"values": {"q1note": "one"}, "revision": 1}
    assert data["detail"].startswith("item 1 of 6: this item was changed in another tab") and "conv-x" not in data["detail"]
    # told the current revision, the tab may write over it
    assert _answer(tab2, pk, {"q1note": "two"}, revision=1, writer="tab-2", seq=2).json()["values"] == {"q1note": "two"}


def test_an_api_client_that_sends_no_revision_merges_as_before(twist_campaign, annotator_a):
    pk = _pk(twist_campaign, annotator_a)
    client = _token(annotator_a)
    _answer(client, pk, {"q1note": "one"}, revision=0, writer="tab-1", seq=1)
    assert _answer(client, pk, {"q1note": "two"}).json()["values"] == {"q1note": "two"}


def test_an_operator_error_reaches_an_annotator_as_its_status_and_a_fixed_text(twist_campaign, annotator_a, monkeypatch):
    from annotation import api
    from goldkey.errors import ApplicationError

    def leaky(**_):
        raise ApplicationError("conv-x:s00001: the generator's batch is v1c")

    monkeypatch.setattr(api, "answer_save", leaky)
    response = _answer(_token(annotator_a), _pk(twist_campaign, annotator_a), {"q1": "consistent"})
    assert response.status_code == 400 and response.json() == {"detail": "This request was refused."}
