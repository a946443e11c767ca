"""The annotator's workbench: the item list (filters, jump), skip, undo, guidelines, keyboard preferences,
and the phase and progress labels of the item page, the review and My work."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from adjudication.services import decision_save
from annotation.models import AnswerRevision, Campaign, Preferences, Skip
from annotation.preferences import SESSION_KEY
from annotation.services import (
    answer_save,
    answer_undo,
    assignment_skip,
    campaign_create,
    campaign_guidelines_set,
    enrollment_submit,
)
from goldkey.errors import AnnotatorError, NotAllowed
from items.models import Item
from keys.services import key_freeze
from tests.adjudication.conftest import make_campaign
from tests.annotation.conftest import answer_all_phase1, enrollment_of, make_twist_items

pytestmark = pytest.mark.django_db


def _login(client, user):
    client.force_login(user)
    return client


def _assignment(campaign, user, position):
    """The user's assignment at 1-based `position`, loaded as the pages load it."""
    return (enrollment_of(campaign, user).assignments.select_related("enrollment__campaign", "item", "answer")
            .get(position=position - 1))


def _answer(campaign, user, position, values):
    return answer_save(assignment=_assignment(campaign, user, position), values=values, user=user)


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


# ----- the item list ------------------------------------------------------------------------------------

def test_item_list_shows_positions_and_own_answers_only_never_an_item_id_or_hidden_value(
        client, twist_campaign, annotator_a, annotator_b):
    _answer(twist_campaign, annotator_a, 1, {"q1": "cannot-tell"})
    _answer(twist_campaign, annotator_b, 1, {"q1": "contradicts", "q1note": "SECRET-OTHER-NOTE"})
    body = _login(client, annotator_a).get("/annotate/tw/items/").content.decode()
    assert [f"/annotate/tw/item/{n}/" in body for n in range(1, 7)] == [True] * 6
    assert "cannot-tell" in body
    assert "SECRET-" not in body and "contradicts" not in body
    for external_id in Item.objects.values_list("external_id", flat=True):
        assert external_id not in body


def test_item_list_filters_unanswered_answered_cannot_tell_and_noted(client, twist_campaign, annotator_a):
    _answer(twist_campaign, annotator_a, 1, {"q1": "cannot-tell"})
    _answer(twist_campaign, annotator_a, 2, {"q1": "consistent", "q1note": "a reason"})
    _answer(twist_campaign, annotator_a, 4, {"q1note": "noted before answering"})
    _answer(twist_campaign, annotator_a, 5, {"q1": "contradicts", "q1note": ""})  # a deleted note is no note
    _login(client, annotator_a)

    def shown(show):
        body = client.get(f"/annotate/tw/items/?show={show}").content.decode()
        return [int(n) for n in re.findall(r'<tr data-href="/annotate/tw/item/(\d+)/"', body)]

    assert shown("all") == [1, 2, 3, 4, 5, 6]
    assert shown("unanswered") == [3, 4, 6]
    assert shown("answered") == [1, 2, 5]
    assert shown("cannot_tell") == [1]
    assert shown("noted") == [2, 4]
    assert shown("nonsense") == [1, 2, 3, 4, 5, 6]
    body = client.get("/annotate/tw/items/?show=unanswered").content.decode()
    assert 'data-filter="unanswered" aria-current="page"' in body and "Unanswered (3)" in body


def test_a_one_phase_protocol_without_an_abstention_offers_no_cannot_tell_filter(client, lapse_campaign, annotator_a):
    body = _login(client, annotator_a).get("/annotate/lp/items/").content.decode()
    assert 'data-filter="cannot_tell"' not in body and 'data-filter="noted"' in body
    assert "Phase 1" not in body


def test_item_list_jumps_to_a_position_and_refuses_one_outside_the_work(client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    response = client.get("/annotate/tw/items/?go=4")
    assert response.status_code == 302 and response["Location"] == "/annotate/tw/item/4/"
    response = client.get("/annotate/tw/items/?go=99")
    assert response.status_code == 200
    assert _messages(response) == ["there is no item 99 in your work: items are numbered 1 to 6"]
    assert client.get("/annotate/tw/items/?go=-1&page=x").status_code == 200


def test_item_list_marks_the_row_it_was_opened_from_as_current(client, twist_campaign, annotator_a):
    body = _login(client, annotator_a).get("/annotate/tw/items/?at=3").content.decode()
    assert re.search(r'data-position="3" class="open" aria-current="true"', body)
    assert body.count('aria-current="true"') == 1


def test_item_list_of_another_campaign_is_forbidden_and_of_a_missing_one_not_found(
        client, twist_campaign, outsider, annotator_a):
    assert _login(client, outsider).get("/annotate/tw/items/").status_code == 403
    assert _login(client, annotator_a).get("/annotate/nope/items/").status_code == 404


def _list_queries(client, slug, show):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(f"/annotate/{slug}/items/?show={show}&page=2")
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("show", ["all", "unanswered", "cannot_tell", "noted"])
def test_item_list_queries_do_not_grow_with_the_number_of_items(client, annotator_a, annotator_b, show):
    slugs = []
    for n in (150, 1500):
        item_set = make_twist_items(n, name=f"list {n}", conversation_id=f"conv-list-{n}")
        campaign = campaign_create(slug=f"list{n}", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)
        for position in range(1, 140, 3):
            _answer(campaign, annotator_a, position, {"q1": "cannot-tell", "q1note": "n"})
        slugs.append(campaign.slug)
    _login(client, annotator_a)
    small, large = (_list_queries(client, slug, show) for slug in slugs)
    assert small == large <= 8


# ----- skip ---------------------------------------------------------------------------------------------

def test_skip_leaves_the_item_unanswered_and_moves_to_the_next_open_item(client, twist_campaign, annotator_a):
    _answer(twist_campaign, annotator_a, 2, {"q1": "consistent"})
    _login(client, annotator_a)
    response = client.post("/annotate/tw/item/1/skip/")
    assert response.status_code == 302 and response["Location"] == "/annotate/tw/item/3/"
    assert Skip.objects.filter(assignment=_assignment(twist_campaign, annotator_a, 1), phase=1).count() == 1
    assert not hasattr(_assignment(twist_campaign, annotator_a, 1), "answer")
    # Resume passes over the skipped item while others are open; the list says it is skipped
    assert client.get("/annotate/tw/")["Location"] == "/annotate/tw/item/3/"
    assert "skipped · unanswered" in client.get("/annotate/tw/items/?show=unanswered").content.decode()


def test_skipped_items_come_back_once_every_other_item_is_answered(client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    client.post("/annotate/tw/item/1/skip/")
    for position in range(2, 6):
        _answer(twist_campaign, annotator_a, position, {"q1": "consistent"})
    response = client.post("/annotate/tw/item/6/skip/")
    assert response["Location"] == "/annotate/tw/review/"
    assert client.get("/annotate/tw/")["Location"] == "/annotate/tw/item/1/"


def test_skipping_twice_or_skipping_an_answered_item_records_nothing_more(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a, 1)
    assignment_skip(assignment=assignment)
    assignment_skip(assignment=assignment)
    _answer(twist_campaign, annotator_a, 2, {"q1": "consistent"})
    assignment_skip(assignment=_assignment(twist_campaign, annotator_a, 2))
    assert list(Skip.objects.values_list("assignment_id", "phase")) == [(assignment.pk, 1)]


# ----- undo ---------------------------------------------------------------------------------------------

def test_undo_takes_back_the_last_change_through_answer_save_and_keeps_it_in_the_history(
        client, twist_campaign, annotator_a):
    _answer(twist_campaign, annotator_a, 1, {"q1": "contradicts"})
    _answer(twist_campaign, annotator_a, 1, {"q1": "consistent"})
    _answer(twist_campaign, annotator_a, 3, {"q1": "cannot-tell"})
    _login(client, annotator_a)
    response = client.post("/annotate/tw/undo/", {"position": "4"}, follow=True)
    assert response.redirect_chain == [("/annotate/tw/item/3/", 302)]
    assert _messages(response) == ["Undone: item 3 is back to what it was before your last change."]
    third = _assignment(twist_campaign, annotator_a, 3)
    assert third.answer.values == {} and not third.phase1_done
    assert list(third.answer.history.values_list("source", flat=True)) == ["web", "undo"]
    assert enrollment_of(twist_campaign, annotator_a).phase1_done_count == 1
    # one step only: the undo is not undone by the next one, and the page says so
    response = client.post("/annotate/tw/undo/", {"position": "3"}, follow=True)
    assert _messages(response) == ["nothing to undo: your last change was already taken back"]
    assert _assignment(twist_campaign, annotator_a, 1).answer.values == {"q1": "consistent"}


def test_undo_goes_back_to_the_previous_revision_not_to_nothing(twist_campaign, annotator_a):
    _answer(twist_campaign, annotator_a, 2, {"q1": "contradicts"})
    _answer(twist_campaign, annotator_a, 2, {"q1note": "because"})
    enrollment = enrollment_of(twist_campaign, annotator_a)
    assignment, result = answer_undo(enrollment=enrollment, user=annotator_a)
    assert assignment.position == 1 and result.answer.values == {"q1": "contradicts"}


def test_undo_with_nothing_to_undo_is_a_clear_refusal(client, twist_campaign, annotator_a):
    response = _login(client, annotator_a).post("/annotate/tw/undo/", {"position": "2"}, follow=True)
    assert response.redirect_chain == [("/annotate/tw/item/2/", 302)]
    assert _messages(response) == ["nothing to undo yet"]


def test_undo_never_reaches_an_answer_the_phase1_lock_protects(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
        answer_save(assignment=assignment, values={"q1": "consistent"}, user=annotator_a)
    _login(client, annotator_a)
    assert client.post("/annotate/tw/finish-phase1/", {"confirm": "yes"}).status_code == 302
    before = AnswerRevision.objects.count()
    response = client.post("/annotate/tw/undo/", {"position": "1"}, follow=True)
    assert response.status_code == 200
    assert any("Phase 1 is locked" in m for m in _messages(response))
    assert AnswerRevision.objects.count() == before


def test_undo_and_skip_after_submitting_are_refused_without_a_change(client, lapse_campaign, annotator_a):
    enrollment = enrollment_of(lapse_campaign, annotator_a)
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
        answer_save(assignment=assignment, values={"label": "HEDGE"}, user=annotator_a)
    enrollment_submit(enrollment=enrollment)
    before = AnswerRevision.objects.count()
    _login(client, annotator_a)
    response = client.post("/annotate/lp/undo/", {"position": "1"}, follow=True)
    assert _messages(response) == ["this annotation was submitted; it is final"]
    response = client.post("/annotate/lp/item/1/skip/", follow=True)
    assert _messages(response) == ["item 1 of 5: this annotation was submitted; it is final"]
    assert AnswerRevision.objects.count() == before and not Skip.objects.exists()


@pytest.fixture
def frozen_with_web_answers(author, annotator_b):
    """A frozen campaign whose annotator B answered on the pages (so there is a change an undo could take)."""
    campaign = make_campaign(slug="sealed", n=6, annotators=[author, annotator_b], disagree=(1,))
    AnswerRevision.objects.filter(answer__assignment__enrollment__annotator=annotator_b).update(
        source="web", saved_by=annotator_b)
    decision_save(campaign=campaign, item=Item.objects.get(external_id="s-0001"), action="keep", user=author)
    key_freeze(campaign=campaign, version="SEALED-v1.0", user=author)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.FROZEN
    return campaign


def test_undo_and_skip_on_a_frozen_campaign_are_clean_refusals_that_change_nothing(
        client, frozen_with_web_answers, annotator_b):
    client = Client(raise_request_exception=False)
    _login(client, annotator_b)
    before = list(AnswerRevision.objects.order_by("pk").values_list("pk", "values"))
    response = client.post("/annotate/sealed/undo/", {"position": "2"}, follow=True)
    assert response.status_code == 200
    assert _messages(response) == ["this campaign is closed to annotation: nothing can be undone"]
    response = client.post("/annotate/sealed/item/2/skip/", follow=True)
    assert response.status_code == 200
    assert _messages(response) == ["item 2 of 6: this campaign is closed to annotation: cannot skip an item"]
    assert list(AnswerRevision.objects.order_by("pk").values_list("pk", "values")) == before
    assert not Skip.objects.exists()
    for body in (response.content.decode(),):
        assert "s-000" not in body


def test_undo_and_skip_in_someone_elses_or_a_missing_campaign_are_refused_as_403_and_404(
        client, twist_campaign, outsider, annotator_a):
    client = Client(raise_request_exception=False)
    _login(client, outsider)
    assert client.post("/annotate/tw/undo/").status_code == 403
    assert client.post("/annotate/tw/item/1/skip/").status_code == 403
    _login(client, annotator_a)
    assert client.post("/annotate/nope/undo/").status_code == 404
    assert client.post("/annotate/tw/item/99/skip/").status_code == 404
    assert client.get("/annotate/tw/undo/").status_code == 405
    assert client.get("/annotate/tw/item/1/skip/").status_code == 405
    assert not Skip.objects.exists()


# ----- guidelines ---------------------------------------------------------------------------------------

HOSTILE_GUIDELINES = """# How to read a draft

Read the **whole** draft first. See [the protocol](https://example.org/protocol).

<script>alert("x")</script> <img src=x onerror=alert(1)>

[click me](javascript:alert(1))
"""


def test_guidelines_are_markdown_without_raw_html_or_script_links(client, twist_campaign, author, annotator_a):
    campaign_guidelines_set(campaign=twist_campaign, guidelines=HOSTILE_GUIDELINES, user=author)
    body = _login(client, annotator_a).get("/annotate/tw/guidelines/").content.decode()
    assert "<h1>How to read a draft</h1>" in body and "<strong>whole</strong>" in body
    assert '<a href="https://example.org/protocol">the protocol</a>' in body
    assert "<script>alert" not in body and "<img" not in body and 'href="javascript:' not in body
    assert "&lt;script&gt;" in body


def test_guidelines_are_shown_on_the_first_visit_until_read_and_again_after_a_change(
        client, twist_campaign, author, annotator_a):
    campaign_guidelines_set(campaign=twist_campaign, guidelines="Be careful.", user=author)
    _login(client, annotator_a)
    assert client.get("/annotate/tw/")["Location"] == "/annotate/tw/guidelines/"
    assert client.get("/annotate/tw/item/3/")["Location"] == "/annotate/tw/guidelines/?next=/annotate/tw/item/3/"
    response = client.post("/annotate/tw/guidelines/", {"next": "/annotate/tw/item/3/"})
    assert response["Location"] == "/annotate/tw/item/3/"
    assert client.get("/annotate/tw/")["Location"] == "/annotate/tw/item/1/"
    assert "Be careful." in client.get("/annotate/tw/item/1/").content.decode()  # in the ? dialog
    campaign_guidelines_set(campaign=twist_campaign, guidelines="Be more careful.", user=author)
    assert client.get("/annotate/tw/")["Location"] == "/annotate/tw/guidelines/"
    assert "changed these guidelines" in client.get("/annotate/tw/guidelines/").content.decode()


def test_guidelines_start_never_redirects_off_the_campaign(client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    for target in ("https://evil.example/", "//evil.example/", "/annotate/other/item/1/"):
        assert client.post("/annotate/tw/guidelines/", {"next": target})["Location"] == "/annotate/tw/"


def test_a_campaign_without_guidelines_goes_straight_to_work(client, twist_campaign, annotator_a):
    assert _login(client, annotator_a).get("/annotate/tw/")["Location"] == "/annotate/tw/item/1/"


def test_an_author_writes_guidelines_from_the_overview_and_an_annotator_cannot(
        client, twist_campaign, author, annotator_a):
    client = Client(raise_request_exception=False)
    _login(client, author)
    response = client.post("/annotate/overview/tw/guidelines/", {"guidelines": "## Rules\n\nOne rule."})
    assert response.status_code == 302
    twist_campaign.refresh_from_db()
    assert twist_campaign.guidelines == "## Rules\n\nOne rule." and twist_campaign.guidelines_updated_at
    assert "## Rules\n\nOne rule.</textarea>" in client.get("/annotate/overview/tw/").content.decode()
    _login(client, annotator_a)
    assert client.post("/annotate/overview/tw/guidelines/", {"guidelines": "mine"}).status_code == 403
    twist_campaign.refresh_from_db()
    assert twist_campaign.guidelines == "## Rules\n\nOne rule."


def test_the_guidelines_of_a_frozen_campaign_cannot_change(frozen_with_web_answers, author):
    with pytest.raises(NotAllowed, match="frozen"):
        campaign_guidelines_set(campaign=frozen_with_web_answers, guidelines="late", user=author)


# ----- keyboard preferences -----------------------------------------------------------------------------

def test_single_key_shortcuts_can_be_turned_off_for_the_user_and_stay_off_in_a_new_session(
        client, twist_campaign, annotator_a):
    _login(client, annotator_a)
    assert 'data-single-key-shortcuts="off"' not in client.get("/annotate/tw/item/1/").content.decode()
    response = client.post("/annotate/preferences/", {"single_key_shortcuts": ["0"], "auto_advance": ["0", "1"],
                                                     "next": "/annotate/tw/item/1/"})
    assert response["Location"] == "/annotate/tw/item/1/"
    prefs = Preferences.objects.get(user=annotator_a)
    assert (prefs.single_key_shortcuts, prefs.auto_advance) == (False, True)
    body = client.get("/annotate/tw/item/1/").content.decode()
    assert 'data-single-key-shortcuts="off"' in body and 'data-auto-advance="1"' in body
    other = Client()
    other.force_login(annotator_a)  # another device: the preference comes with the login
    assert other.session[SESSION_KEY] == {"single_key_shortcuts": False, "auto_advance": True}
    assert 'data-single-key-shortcuts="off"' in other.get("/annotate/").content.decode()


def test_the_preferences_answer_a_script_with_json_and_ignore_what_they_do_not_know(client, annotator_a):
    _login(client, annotator_a)
    response = client.post("/annotate/preferences/", {"auto_advance": "1", "colour": "red"},
                           HTTP_ACCEPT="application/json")
    assert response.json() == {"single_key_shortcuts": True, "auto_advance": True}
    response = client.post("/annotate/preferences/", {"next": "https://evil.example/"})
    assert response["Location"] == "/annotate/"
    response = client.post("/annotate/preferences/", {}, HTTP_REFERER="https://evil.example/")
    assert response["Location"] == "/annotate/"
    response = client.post("/annotate/preferences/", {}, HTTP_REFERER="http://testserver/annotate/c/items/")
    assert response["Location"] == "http://testserver/annotate/c/items/"


def test_preferences_need_a_login_and_a_post(client, annotator_a):
    assert client.post("/annotate/preferences/", {"auto_advance": "1"}).status_code == 302
    assert not Preferences.objects.exists()
    assert _login(client, annotator_a).get("/annotate/preferences/").status_code == 405


# ----- phase and progress labels ------------------------------------------------------------------------

def test_a_one_phase_protocol_never_speaks_of_phases(client, lapse_campaign, annotator_a):
    _answer(lapse_campaign, annotator_a, 1, {"label": "HEDGE"})
    _login(client, annotator_a)
    for url in ("/annotate/lp/item/1/", "/annotate/lp/review/", "/annotate/", "/annotate/lp/items/"):
        assert "Phase" not in client.get(url).content.decode(), url


def test_a_phase2_page_does_not_say_saved_before_a_phase2_answer(client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    _login(client, annotator_a)
    body = client.get("/annotate/tw/item/1/").content.decode()
    assert "Phase 2 · item <strong>1</strong> of 6" in body
    assert re.search(r'id="save-status"[^>]*></span>', body)
    assert '<span id="progress-done">0</span> of 6 answered in Phase 2' in body
    assignment = _assignment(twist_campaign, annotator_a, 1)
    answer_save(assignment=assignment, values={"p2note": "a Phase 2 note"})
    assert re.search(r'id="save-status"[^>]*>saved</span>', client.get("/annotate/tw/item/1/").content.decode())


def test_a_save_on_a_phase1_page_after_phase1_ended_reports_each_phase_so_the_bar_keeps_its_phase(
        client, twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    pk = _assignment(twist_campaign, annotator_a, 2).pk
    data = _login(client, annotator_a).post(f"/api/annotation/assignments/{pk}/answer/",
                                           {"values": {}, "time_on_item_ms": 40}, content_type="application/json").json()
    assert data["phase"] == 2
    assert data["phases"] == {"1": {"done": 6, "total": 6, "percent": 100}, "2": {"done": 0, "total": 6, "percent": 0}}


def test_my_work_shows_finished_but_unsubmitted_work_as_ready_to_submit(client, lapse_campaign, twist_campaign,
                                                                         annotator_a):
    for position in range(1, 6):
        _answer(lapse_campaign, annotator_a, position, {"label": "HEDGE"})
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a), finish=False)
    body = _login(client, annotator_a).get("/annotate/").content.decode()
    assert "✓ Ready to submit" in body and 'href="/annotate/lp/review/">Review and submit' in body
    assert "✓ Phase 1 ready to finish" in body and 'href="/annotate/tw/review/">Review and finish Phase 1' in body
    enrollment_submit(enrollment=enrollment_of(lapse_campaign, annotator_a))
    body = client.get("/annotate/").content.decode()
    assert "Ready to submit" not in body and "submitted" in body


def test_an_authors_empty_my_work_says_what_an_author_can_do(client, author, twist_set, annotator_a, annotator_b):
    campaign_create(slug="other", item_set=twist_set, annotators=[annotator_a, annotator_b], seed=1)
    body = _login(client, author).get("/annotate/").content.decode()
    assert "An author adds you to one" not in body
    assert 'id="empty-author"' in body and "manage.py campaign_create" in body
    assert "/admin/annotation/campaign/add/" in body and "/annotate/overview/other/" in body


def test_an_annotators_empty_my_work_says_an_author_adds_them(client, annotator_a):
    assert "An author adds you to one" in _login(client, annotator_a).get("/annotate/").content.decode()


def test_undo_service_refuses_a_user_with_no_change_of_their_own(twist_campaign, annotator_a, annotator_b):
    _answer(twist_campaign, annotator_b, 1, {"q1": "consistent"})
    with pytest.raises(AnnotatorError, match="nothing to undo yet"):
        answer_undo(enrollment=enrollment_of(twist_campaign, annotator_a), user=annotator_a)


# ----- the command --------------------------------------------------------------------------------------

def test_campaign_guidelines_command_writes_them_and_a_dry_run_writes_nothing(tmp_path, twist_campaign, author):
    path = tmp_path / "guidelines.md"
    path.write_text("# Rules\n\nOne rule.\n", encoding="utf-8")
    out = StringIO()
    call_command("campaign_guidelines", "tw", str(path), "--by", author.username, "--dry-run", stdout=out)
    assert out.getvalue() == "Would give tw 18 characters of guidelines.\n"
    twist_campaign.refresh_from_db()
    assert twist_campaign.guidelines is None
    call_command("campaign_guidelines", "tw", str(path), "--by", author.username, stdout=StringIO())
    twist_campaign.refresh_from_db()
    assert twist_campaign.guidelines == "# Rules\n\nOne rule."


def test_campaign_guidelines_command_names_a_missing_or_undecodable_file_and_refuses_non_authors(
        tmp_path, twist_campaign, author, annotator_a):
    with pytest.raises(CommandError, match="nope.md: no such file"):
        call_command("campaign_guidelines", "tw", str(tmp_path / "nope.md"), "--by", author.username)
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"ok \xff")
    with pytest.raises(CommandError, match=r"bad.md: not UTF-8 text \(byte 3\)"):
        call_command("campaign_guidelines", "tw", str(bad), "--by", author.username)
    good = tmp_path / "good.md"
    good.write_text("x", encoding="utf-8")
    with pytest.raises(CommandError, match="only authors"):
        call_command("campaign_guidelines", "tw", str(good), "--by", annotator_a.username)


# ----- skip and undo through the API ---------------------------------------------------------------------

def _api(user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_api_skip_records_the_skip_and_names_the_next_open_item_by_its_assignment_and_position(
        twist_campaign, annotator_a):
    first, second = _assignment(twist_campaign, annotator_a, 1), _assignment(twist_campaign, annotator_a, 2)
    data = _api(annotator_a).post(f"/api/annotation/assignments/{first.pk}/skip/").json()
    assert data["skipped"] is True
    assert (data["next"]["id"], data["next"]["position"], data["next"]["campaign"]) == (second.pk, 2, "tw")
    assert "item" not in data["next"] and "external_id" not in str(data)
    assert list(Skip.objects.values_list("assignment_id", "phase")) == [(first.pk, 1)]
    # an answered item: nothing recorded, and the response says so
    _answer(twist_campaign, annotator_a, 2, {"q1": "consistent"})
    data = _api(annotator_a).post(f"/api/annotation/assignments/{second.pk}/skip/").json()
    assert data["skipped"] is False and data["next"]["position"] == 3
    assert Skip.objects.count() == 1


def test_api_skip_of_another_annotators_item_or_after_submission_is_refused_without_a_record(
        twist_campaign, lapse_campaign, annotator_a, annotator_b):
    theirs = _assignment(twist_campaign, annotator_b, 1)
    assert _api(annotator_a).post(f"/api/annotation/assignments/{theirs.pk}/skip/").status_code == 404
    for position in range(1, 6):
        _answer(lapse_campaign, annotator_a, position, {"label": "HEDGE"})
    enrollment_submit(enrollment=enrollment_of(lapse_campaign, annotator_a))
    mine = _assignment(lapse_campaign, annotator_a, 1)
    response = _api(annotator_a).post(f"/api/annotation/assignments/{mine.pk}/skip/")
    assert response.status_code == 403 and "submitted" in response.json()["detail"]
    assert Skip.objects.count() == 0


def test_api_undo_takes_back_the_last_change_and_returns_the_answer_and_its_item(twist_campaign, annotator_a):
    _answer(twist_campaign, annotator_a, 2, {"q1": "contradicts"})
    _answer(twist_campaign, annotator_a, 2, {"q1": "consistent"})
    second = _assignment(twist_campaign, annotator_a, 2)
    data = _api(annotator_a).post("/api/annotation/campaigns/tw/undo/").json()
    assert (data["assignment"]["id"], data["assignment"]["position"]) == (second.pk, 2)
    assert data["values"] == {"q1": "contradicts"} and data["revision"] == 3 and data["changed"] is True
    assert data["phase"] == 1 and data["phases"]["1"]["done"] == 1
    assert list(second.answer.history.values_list("source", flat=True)) == ["web", "web", "undo"]
    # one step: the next undo is refused with a clear 400 and writes nothing
    response = _api(annotator_a).post("/api/annotation/campaigns/tw/undo/")
    assert response.status_code == 400
    assert response.json()["detail"] == "nothing to undo: your last change was already taken back"
    assert AnswerRevision.objects.filter(answer__assignment=second).count() == 3


def test_api_undo_in_a_campaign_i_am_not_in_is_refused(twist_campaign, outsider):
    from django.contrib.auth.models import Group

    assert _api(outsider).post("/api/annotation/campaigns/tw/undo/").status_code == 403  # not an annotator
    outsider.groups.add(Group.objects.get_or_create(name="annotator")[0])
    assert _api(outsider).post("/api/annotation/campaigns/tw/undo/").status_code == 403  # not in this campaign
    assert _api(outsider).post("/api/annotation/campaigns/nope/undo/").status_code == 404
