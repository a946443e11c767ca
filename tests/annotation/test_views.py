from django.urls import reverse

from annotation.models import Answer, AnswerRevision
from annotation.services import campaign_create
from tests.annotation.conftest import answer_all_phase1, enrollment_of, make_twist_items


def _login(client, user):
    client.force_login(user)
    return client


def test_my_work_lists_the_annotators_campaigns_with_a_progress_bar_per_phase(client, twist_campaign, annotator_a):
    response = _login(client, annotator_a).get("/annotate/")
    assert response.status_code == 200
    assert twist_campaign.name in response.content.decode()
    assert response.content.decode().count('class="progress"') == 2


def test_campaign_entry_resumes_at_the_first_unanswered_item(client, twist_campaign, annotator_a):
    from annotation.services import answer_save

    enrollment = enrollment_of(twist_campaign, annotator_a)
    for assignment in enrollment.assignments.order_by("position")[:2]:
        answer_save(assignment=assignment, values={"q1": "consistent"})
    response = _login(client, annotator_a).get("/annotate/tw/")
    assert response.status_code == 302 and response["Location"] == "/annotate/tw/item/3/"


def test_phase1_item_page_shows_draft_recipient_and_dated_excerpts_only(client, twist_campaign, annotator_a):
    assignment = enrollment_of(twist_campaign, annotator_a).assignments.select_related("item").get(position=0)
    body = _login(client, annotator_a).get("/annotate/tw/item/1/").content.decode()
    item = assignment.item
    assert item.draft in body and item.recipient in body
    assert "1:56 pm on 8 May, 2023" in body and item.evidence.get().turn.text in body
    for secret in (item.rationale, item.family, item.gold_type, "q2quote", "q3turn", "data-key=\"q2\"", "data-key=\"q3\""):
        assert secret not in body or secret == ""


def test_phase2_opens_only_after_phase1_is_complete_and_shows_the_quote_then(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    contradicting = enrollment.assignments.select_related("item").filter(item__gold_type="contradicting").first()
    url = f"/annotate/tw/item/{contradicting.position + 1}/"
    _login(client, annotator_a)
    assert contradicting.item.contradicted_quote not in client.get(url).content.decode()
    answer_all_phase1(enrollment)
    body = client.get(url).content.decode()
    assert contradicting.item.contradicted_quote in body and 'data-key="q2quote"' in body


def test_phase2_for_a_consistent_item_offers_q3_and_the_recipient_turn_index(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    aligned = enrollment.assignments.filter(item__gold_type="aligned").first()
    body = _login(client, annotator_a).get(f"/annotate/tw/item/{aligned.position + 1}/").content.decode()
    assert 'data-key="q3"' in body and 'id="turns"' in body
    assert body.count('class="link pick-turn"') == 6  # Caroline's turns in the synthetic conversation


def test_item_page_of_a_campaign_the_user_does_not_annotate_is_forbidden(client, twist_campaign, outsider, admin_user):
    from django.contrib.auth.models import Group

    outsider.groups.add(Group.objects.get_or_create(name="annotator")[0])
    assert _login(client, outsider).get("/annotate/tw/item/1/").status_code == 403


def test_item_page_of_a_missing_campaign_or_position_is_not_found(client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    assert client.get("/annotate/nope/item/1/").status_code == 404
    assert client.get("/annotate/tw/item/999/").status_code == 404


def test_pages_require_login(client, twist_campaign):
    response = client.get("/annotate/tw/item/1/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_submit_records_the_submission_time_once_everything_is_answered(client, twist_campaign, annotator_a):
    from tests.annotation.conftest import answer_all_phase2

    enrollment = enrollment_of(twist_campaign, annotator_a)
    _login(client, annotator_a)
    assert client.post("/annotate/tw/submit/").status_code == 400
    answer_all_phase1(enrollment)
    answer_all_phase2(enrollment)
    assert client.post("/annotate/tw/submit/").status_code == 302
    enrollment.refresh_from_db()
    assert enrollment.submitted_at is not None


def test_annotator_downloads_their_own_answers_in_the_released_format(client, twist_campaign, annotator_a, annotator_b):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a), q1="contradicts")
    answer_all_phase1(enrollment_of(twist_campaign, annotator_b), q1="cannot-tell")
    response = _login(client, annotator_a).get("/annotate/tw/export/")
    data = response.json()
    assert data["annotator"] == "A" and len(data["answers"]) == 6
    assert "cannot-tell" not in response.content.decode()


def test_author_overview_shows_progress_and_pace_but_never_answers(client, twist_campaign, annotator_a, author):
    from annotation.services import answer_save

    enrollment = enrollment_of(twist_campaign, annotator_a)
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=2)
    answer_save(assignment=assignment, values={"q1": "cannot-tell", "q1note": "NOTE-NEVER-IN-OVERVIEW"}, time_on_item_ms=4000)
    body = _login(client, author).get("/annotate/overview/tw/").content.decode()
    assert "1 / 6" in body and "4000 ms" in body
    assert "NOTE-NEVER-IN-OVERVIEW" not in body and "cannot-tell" not in body
    assert ">2</td>" in body  # two items skipped before the answered third


def test_author_overview_is_forbidden_to_annotators_and_missing_campaigns_are_404(client, twist_campaign, annotator_a, author):
    assert _login(client, annotator_a).get("/annotate/overview/tw/").status_code == 403
    assert _login(client, author).get("/annotate/overview/none/").status_code == 404


def test_crisis_block_shows_the_notice_first_and_can_be_declined_as_a_whole(client, db, annotator_a, annotator_b):
    item_set = make_twist_items(5, name="crisis set", conversation_id="conv-c", crisis=2)
    campaign = campaign_create(slug="cr", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1, crisis_block=True)
    enrollment = enrollment_of(campaign, annotator_a)
    assert enrollment.crisis_count == 2
    _login(client, annotator_a)
    assert client.get("/annotate/cr/item/4/")["Location"] == "/annotate/cr/crisis/"
    notice = client.get("/annotate/cr/crisis/").content.decode()
    assert "Content notice" in notice and "988" in notice
    answer_all_phase1(enrollment_of(campaign, annotator_a).__class__.objects.select_related("campaign").get(pk=enrollment.pk))
    client.post("/annotate/cr/crisis/", {"choice": "decline"})
    enrollment.refresh_from_db()
    assert enrollment.crisis_declined_at is not None and enrollment.phase1_completed_at is not None


def test_crisis_item_page_has_the_contacts_in_its_header_and_no_timer(client, db, annotator_a, annotator_b):
    item_set = make_twist_items(3, name="crisis set", conversation_id="conv-c", crisis=1)
    campaign_create(slug="cr", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1, crisis_block=True)
    _login(client, annotator_a)
    client.post("/annotate/cr/crisis/", {"choice": "accept"})
    body = client.get("/annotate/cr/item/3/").content.decode()
    assert "crisis-header" in body and "988" in body and "timer" not in body.lower().replace("no timer", "")


def test_lapse_item_page_shows_request_response_key_fact_and_five_labels(client, lapse_campaign, annotator_a):
    body = _login(client, annotator_a).get("/annotate/lp/item/1/").content.decode()
    assert "Visible request" in body and "Visible response" in body and "Marbury Residences" in body
    assert body.count('class="choice') == 5 and "SECRET-" not in body


def test_reload_mid_item_shows_the_saved_answer(client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    assignment = enrollment_of(twist_campaign, annotator_a).assignments.get(position=0)
    client.post(f"/api/annotation/assignments/{assignment.pk}/answer/", {"values": {"q1note": "half typed"}},
                content_type="application/json")
    body = client.get("/annotate/tw/item/1/").content.decode()
    assert "half typed" in body
    assert Answer.objects.get(assignment=assignment).values == {"q1note": "half typed"}
    assert AnswerRevision.objects.count() == 1


def test_reverse_names_exist():
    assert reverse("annotation:item", args=["x", 1]) == "/annotate/x/item/1/"


def test_my_work_links_authors_to_every_campaign_overview(client, twist_campaign, author, annotator_a):
    assert "/annotate/overview/tw/" in _login(client, author).get("/annotate/").content.decode()
    assert "/annotate/overview/tw/" not in _login(client, annotator_a).get("/annotate/").content.decode()
