""""The gold answer is wrong": an annotator's own flag beside the verdict, with a note. Saved through the same
endpoints as every answer, never seen by the other annotator, queued with its own reason, shown to the
adjudicator on every answer to the question, and holding the key back until decided."""

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from adjudication.services import decision_save
from annotation.models import Answer, Assignment
from annotation.services import campaign_create
from annotation.transfer import answers_load
from council.prompts import questions_asked
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import ImportFailed
from items.models import Item
from judges.services import answer_external_id, judged_release_import
from keys.services import key_freeze
from protocols import judged
from tests.conftest import close_campaign
from tests.judges.test_release_import import TINY, two_runs

pytestmark = pytest.mark.django_db

NOTE = "The shed was painted sage green, not blue: the evidence session says so."
FIRST, SECOND = answer_external_id("tiny0001", "tiny.json_testlog_r1"), answer_external_id("tiny0001", "tiny.json_testlog_r2")


@pytest.fixture
def campaign(tmp_path, annotator_a, annotator_b):
    judged_release_import(questions=TINY, runs=two_runs(tmp_path), item_set_name="tiny")
    item_set = Item.objects.get(external_id=FIRST).item_set
    return campaign_create(slug="flags", item_set=item_set, annotators=[annotator_a, annotator_b], seed=3)


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def assignment_of(campaign, user, external_id: str) -> Assignment:
    return Assignment.objects.get(enrollment__campaign=campaign, enrollment__annotator=user, item__external_id=external_id)


def flag(client, assignment, **values):
    return client.post(f"/api/annotation/assignments/{assignment.pk}/answer/", values, format="json")


def test_an_annotator_flags_the_gold_with_a_note_through_the_api_and_a_reload_shows_it(campaign, annotator_a):
    client, mine = api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST)
    response = flag(client, mine, values={"verdict": "incorrect", "gold_wrong": "yes", "gold_wrong_note": NOTE})
    assert response.status_code == 200
    reloaded = client.get(f"/api/annotation/assignments/{mine.pk}/").json()
    assert json.dumps(reloaded).count(NOTE) == 1
    assert Answer.objects.get(assignment=mine).values["gold_wrong"] == "yes"


def test_a_flag_without_a_note_is_a_json_400_naming_the_note_field_and_saves_nothing(campaign, annotator_a):
    client, mine = api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST)
    response = flag(client, mine, values={"gold_wrong": "yes"})
    assert response.status_code == 400
    assert any("gold_wrong_note" in error for error in response.json()["errors"])
    assert not Answer.objects.filter(assignment=mine, values__has_key="gold_wrong").exists()


def test_the_page_autosave_sends_the_note_then_the_flag_and_clearing_the_note_of_a_flag_is_refused(
        client, campaign, annotator_a):
    client.force_login(annotator_a)  # the item page's own path: session and CSRF-exempt test client
    mine = assignment_of(campaign, annotator_a, FIRST)
    url = f"/api/annotation/assignments/{mine.pk}/answer/"
    assert client.post(url, {"values": {"gold_wrong_note": NOTE}}, content_type="application/json").status_code == 200
    assert client.post(url, {"values": {"gold_wrong": "yes"}}, content_type="application/json").status_code == 200
    refused = client.post(url, {"values": {"gold_wrong_note": "  "}}, content_type="application/json")
    assert refused.status_code == 400 and "gold_wrong_note" in refused.json()["detail"]
    assert Answer.objects.get(assignment=mine).values["gold_wrong_note"] == NOTE
    # Withdrawn: the flag goes, the note may then be cleared.
    assert client.post(url, {"values": {"gold_wrong": "no"}}, content_type="application/json").status_code == 200
    assert client.post(url, {"values": {"gold_wrong_note": ""}}, content_type="application/json").status_code == 200


def test_the_same_flag_sent_twice_is_saved_once(campaign, annotator_a):
    client, mine = api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST)
    values = {"gold_wrong": "yes", "gold_wrong_note": NOTE}
    first = flag(client, mine, values=values, writer="tab", seq=1, revision=0).json()
    again = flag(client, mine, values=values, writer="tab", seq=1, revision=0).json()
    assert again["revision"] == first["revision"] == 1


def test_a_stale_tab_cannot_overwrite_a_note_changed_in_another_tab(campaign, annotator_a):
    client, mine = api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST)
    flag(client, mine, values={"gold_wrong": "yes", "gold_wrong_note": NOTE}, writer="one", seq=1, revision=0)
    stale = flag(client, mine, values={"gold_wrong_note": "something else"}, writer="two", seq=1, revision=0)
    assert stale.status_code == 409
    assert Answer.objects.get(assignment=mine).values["gold_wrong_note"] == NOTE


def test_the_item_is_answered_without_the_flag_and_the_council_is_never_asked_it(campaign, annotator_a):
    client, mine = api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST)
    assert flag(client, mine, values={"verdict": "correct"}).json()["phase1_done"] is True
    asked = {q.key for q in questions_asked(judged.SPEC.name, 1)}
    assert asked == {"verdict", "notes"}


def test_the_second_annotator_never_sees_the_first_ones_flag(client, campaign, annotator_a, annotator_b):
    flag(api_for(annotator_a), assignment_of(campaign, annotator_a, FIRST),
         values={"gold_wrong": "yes", "gold_wrong_note": NOTE})
    theirs = assignment_of(campaign, annotator_b, FIRST)
    assert NOTE not in json.dumps(api_for(annotator_b).get(f"/api/annotation/assignments/{theirs.pk}/").json())
    client.force_login(annotator_b)
    page = client.get(f"/annotate/{campaign.slug}/item/{theirs.position + 1}/")
    assert page.status_code == 200
    assert NOTE not in page.content.decode()
    assert 'data-key="gold_wrong_note"' in page.content.decode()  # their own flag, empty


def test_the_item_page_offers_the_flag_by_keyboard(client, campaign, annotator_a):
    client.force_login(annotator_a)
    mine = assignment_of(campaign, annotator_a, FIRST)
    html = client.get(f"/annotate/{campaign.slug}/item/{mine.position + 1}/").content.decode()
    assert 'data-focus-key="g"' in html
    assert 'data-key="gold_wrong" data-value="yes" data-shortcut="3"' in html


def test_an_answer_file_with_a_flag_and_no_note_is_refused_naming_the_item_and_field(campaign):
    with pytest.raises(ImportFailed) as refused:
        answers_load(campaign=campaign, annotator="A", answers={FIRST: {"verdict": "correct", "gold_wrong": "yes"}})
    assert "gold_wrong_note" in str(refused.value) and FIRST in str(refused.value)
    assert not Answer.objects.filter(assignment__enrollment__campaign=campaign).exists()


@pytest.fixture
def flagged(campaign, author):
    """Both annotators agree on every verdict; A flags the gold of tiny0001 on its first run's answer."""
    items = list(Item.objects.filter(item_set=campaign.item_set).values_list("external_id", flat=True))
    answers = {external_id: {"verdict": "correct"} for external_id in items}
    answers_load(campaign=campaign, annotator="A",
                 answers={**answers, FIRST: {"verdict": "correct", "gold_wrong": "yes", "gold_wrong_note": NOTE}})
    answers_load(campaign=campaign, annotator="B", answers=answers)
    close_campaign(campaign, author)
    return campaign


def test_a_flagged_item_is_queued_with_its_own_reason_though_the_verdicts_agree(client, flagged, author):
    client.force_login(author)
    item = Item.objects.get(external_id=FIRST)
    html = client.get(f"/adjudicate/{flagged.slug}/items/{item.pk}/").content.decode()
    assert f'">{judged.GOLD_FLAGGED}</span>' in html and "flagged the question&#x27;s gold answer" in html


def test_the_adjudicator_sees_the_flag_on_every_answer_to_the_question(client, flagged, author):
    client.force_login(author)
    other = Item.objects.get(external_id=SECOND)  # the second run's answer, unflagged and not queued
    html = client.get(f"/adjudicate/{flagged.slug}/items/{other.pk}/").content.decode()
    assert 'data-testid="gold-flags"' in html and NOTE in html and FIRST in html


def test_the_flag_holds_the_key_back_until_the_item_is_decided(flagged, author):
    with pytest.raises(ApplicationError, match="undecided"):
        key_freeze(campaign=flagged, version="tiny-v1", user=author)
    decision_save(campaign=flagged, item=Item.objects.get(external_id=FIRST), action="relabel", new_gold="correct",
                  note="graded against the released gold; flag to be filed as an erratum", user=author)
    assert key_freeze(campaign=flagged, version="tiny-v1", user=author).is_frozen
