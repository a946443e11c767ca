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
    for secret in (item.rationale, item.family, item.gold_label, "q2quote", "q3turn", "data-key=\"q2\"", "data-key=\"q3\""):
        assert secret not in body or secret == ""


def test_phase2_opens_only_after_phase1_is_complete_and_shows_the_quote_then(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    contradicting = enrollment.assignments.select_related("item").filter(item__gold_label="contradicting").first()
    url = f"/annotate/tw/item/{contradicting.position + 1}/"
    _login(client, annotator_a)
    assert contradicting.item.contradicted_quote not in client.get(url).content.decode()
    answer_all_phase1(enrollment)
    body = client.get(url).content.decode()
    assert contradicting.item.contradicted_quote in body and 'data-key="q2quote"' in body


def test_phase2_for_a_consistent_item_offers_q3_and_the_recipient_turn_index(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    aligned = enrollment.assignments.filter(item__gold_label="aligned").first()
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
    assert client.post("/annotate/tw/submit/", {"confirm": "yes"}).status_code == 400
    answer_all_phase1(enrollment)
    answer_all_phase2(enrollment)
    assert client.post("/annotate/tw/submit/").status_code == 400  # not confirmed
    assert enrollment_of(twist_campaign, annotator_a).submitted_at is None
    assert client.post("/annotate/tw/submit/", {"confirm": "yes"}).status_code == 302
    enrollment.refresh_from_db()
    assert enrollment.submitted_at is not None


def test_annotator_downloads_their_own_answers_by_position_then_in_the_released_format_once_submitted(
        client, twist_campaign, annotator_a, annotator_b):
    from annotation.services import enrollment_submit
    from items.models import Item
    from tests.annotation.conftest import answer_all_phase2

    mine = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(mine, q1="contradicts")
    answer_all_phase1(enrollment_of(twist_campaign, annotator_b), q1="cannot-tell")
    response = _login(client, annotator_a).get("/annotate/tw/export/")
    data = response.json()
    assert data["annotator"] == "A" and data["keyed_by"] == "position"
    assert sorted(data["answers"], key=int) == ["1", "2", "3", "4", "5", "6"]
    body = response.content.decode()
    assert "cannot-tell" not in body and not [i for i in Item.objects.values_list("external_id", flat=True) if i in body]
    answer_all_phase2(mine)
    enrollment_submit(enrollment=mine)
    released = client.get("/annotate/tw/export/").json()
    assert "keyed_by" not in released
    assert set(released["answers"]) == set(mine.assignments.values_list("item__external_id", flat=True))


def test_lapse_answer_export_names_items_by_position_while_labels_can_change(client, lapse_campaign, annotator_a):
    import json

    from annotation.services import answer_save, enrollment_submit

    enrollment = enrollment_of(lapse_campaign, annotator_a)
    first = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=0)
    answer_save(assignment=first, values={"label": "HEDGE"})
    response = _login(client, annotator_a).get("/annotate/lp/export/")
    records = [json.loads(line) for line in response.content.decode().splitlines()]
    assert records == [{"position": "1", "label": "HEDGE", "notes": "", "annotator": "A", "ts": records[0]["ts"]}]
    assert first.item.external_id not in response.content.decode()
    answer_all_phase1(enrollment)
    enrollment_submit(enrollment=enrollment)
    released = [json.loads(line) for line in client.get("/annotate/lp/export/").content.decode().splitlines()]
    assert {r["gid"] for r in released} == set(enrollment.assignments.values_list("item__external_id", flat=True))


def test_download_my_answers_is_not_offered_before_the_first_answer(client, lapse_campaign, annotator_a):
    from annotation.services import answer_save

    _login(client, annotator_a)
    assert 'class="export"' not in client.get("/annotate/").content.decode()
    assert 'id="export"' not in client.get("/annotate/lp/review/").content.decode()
    assert client.get("/annotate/lp/export/").status_code == 404
    first = enrollment_of(lapse_campaign, annotator_a).assignments.select_related("item", "enrollment__campaign").first()
    answer_save(assignment=first, values={"label": "PROCEED"})
    assert 'class="export"' in client.get("/annotate/").content.decode()
    assert client.get("/annotate/lp/export/").status_code == 200


def test_review_screen_shows_answered_cannot_tell_and_links_to_the_unanswered(client, twist_campaign, annotator_a):
    from annotation.services import answer_save

    enrollment = enrollment_of(twist_campaign, annotator_a)
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign").filter(position__in=[0, 1, 3]):
        answer_save(assignment=assignment, values={"q1": "cannot-tell" if assignment.position == 1 else "consistent"})
    body = _login(client, annotator_a).get("/annotate/tw/review/").content.decode()
    assert "<strong>3</strong> of 6 items answered" in body
    assert '<strong data-choice="cannot-tell">1</strong>' in body and '<strong data-choice="consistent">2</strong>' in body
    for position in (3, 5, 6):
        assert f'href="/annotate/tw/item/{position}/"' in body
    assert 'id="finish-phase1" disabled' in body


def test_the_campaign_entry_leads_to_the_review_once_every_item_is_answered(client, twist_campaign, annotator_a):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a), finish=False)
    response = _login(client, annotator_a).get("/annotate/tw/")
    assert response.status_code == 302 and response["Location"] == "/annotate/tw/review/"
    assert 'id="finish-phase1"' in client.get("/annotate/tw/review/").content.decode()


def test_finish_phase1_needs_the_confirmation_and_then_locks_phase1(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment, finish=False)
    _login(client, annotator_a)
    refused = client.post("/annotate/tw/finish-phase1/")
    assert refused.status_code == 400 and "confirmation" in refused.content.decode()
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is None
    assert client.post("/annotate/tw/finish-phase1/", {"confirm": "yes"}).status_code == 302
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is not None
    assert "Phase 2 · item <strong>1</strong> of 6" in client.get("/annotate/tw/item/1/").content.decode()


def test_the_item_page_says_when_phase1_can_be_finished(client, twist_campaign, annotator_a):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a), finish=False)
    body = _login(client, annotator_a).get("/annotate/tw/item/1/").content.decode()
    assert '<div id="phase-ready" class="banner">' in body and "review and finish Phase 1" in body


def test_the_lapse_item_page_says_when_the_annotation_can_be_submitted(client, lapse_campaign, annotator_a):
    body = _login(client, annotator_a).get("/annotate/lp/item/1/").content.decode()
    assert '<div id="phase-ready" class="banner" hidden>' in body
    answer_all_phase1(enrollment_of(lapse_campaign, annotator_a), finish=False)
    body = client.get("/annotate/lp/item/1/").content.decode()
    assert '<div id="phase-ready" class="banner">' in body and "review and submit" in body


def test_an_operator_error_on_an_annotator_page_shows_its_status_and_a_fixed_text(client, twist_campaign, annotator_a,
                                                                                 monkeypatch):
    from annotation import services
    from goldkey.errors import ApplicationError

    def leaky(**_):
        raise ApplicationError("conv-x:s00001: the generator's batch is v1c")

    monkeypatch.setattr(services, "enrollment_submit", leaky)
    response = _login(client, annotator_a).post("/annotate/tw/submit/", {"confirm": "yes"})
    body = response.content.decode()
    assert response.status_code == 400 and '<p class="error-message" role="alert">This request was refused.</p>' in body
    assert "conv-x" not in body and "v1c" not in body


def test_author_overview_shows_progress_and_pace_but_never_answers(client, twist_campaign, annotator_a, author):
    from annotation.services import answer_save

    enrollment = enrollment_of(twist_campaign, annotator_a)
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=2)
    answer_save(assignment=assignment, values={"q1": "cannot-tell", "q1note": "NOTE-NEVER-IN-OVERVIEW"}, time_on_item_ms=4000)
    body = _login(client, author).get("/annotate/overview/tw/").content.decode()
    assert "1 / 6" in body and "4000 ms" in body
    assert "seed 7" in body  # an author who does not annotate here may see it
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
    answer_all_phase1(enrollment_of(campaign, annotator_a).__class__.objects.select_related("campaign").get(pk=enrollment.pk),
                      finish=False)
    client.post("/annotate/cr/crisis/", {"choice": "decline"})
    enrollment.refresh_from_db()
    assert enrollment.crisis_declined_at is not None and enrollment.phase1_completed_at is None
    # declining leaves nothing unanswered outside the block: Phase 1 can be finished
    assert client.post("/annotate/cr/finish-phase1/", {"confirm": "yes"}).status_code == 302
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is not None


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


def test_author_overview_hides_the_order_seed_from_an_author_who_annotates_there(client, twist_set, author, annotator_a):
    # an explicit seed is the order: with it the author could recompute which item is at each position
    campaign_create(slug="tw2", item_set=twist_set, annotators=[author, annotator_a], seed=7)
    body = _login(client, author).get("/annotate/overview/tw2/").content.decode()
    assert "seed" not in body.split("<h1>", 1)[1].split("</h1>", 1)[0]
