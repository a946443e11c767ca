import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.access import (
    can_view_unblinded,
    get_assignment_for_user,
    get_enrollment_for_user,
    get_unblinded_campaign,
    require_unblinded,
)
from annotation.services import campaign_create, enrollment_submit
from goldkey import roles
from goldkey.errors import NotAllowed, NotFound
from tests.annotation.conftest import answer_all_phase1, answer_all_phase2, enrollment_of, make_lapse_items


@pytest.fixture
def author_campaign(twist_set, author, annotator_b):
    """The TWIST situation: the author is one of the two annotators."""
    return campaign_create(slug="auth", item_set=twist_set, annotators=[author, annotator_b], seed=1)


def test_author_who_annotates_cannot_open_unblinded_material_until_submitted(author_campaign, author):
    assert not can_view_unblinded(author, author_campaign)
    with pytest.raises(NotFound, match="submitted your own annotation"):
        require_unblinded(author, author_campaign)
    enrollment = enrollment_of(author_campaign, author)
    answer_all_phase1(enrollment)
    answer_all_phase2(enrollment)
    enrollment = enrollment_submit(enrollment=enrollment)
    assert enrollment.submitted_at is not None  # recorded, for disclosure
    assert can_view_unblinded(author, author_campaign)
    require_unblinded(author, author_campaign)


def test_author_who_does_not_annotate_may_open_unblinded_material(twist_campaign, author):
    assert can_view_unblinded(author, twist_campaign)


def test_an_author_without_open_work_gets_the_unblinded_campaign_in_one_query(twist_campaign, author):
    assert roles.is_author(author)  # the roles read once a request, before the campaign
    with CaptureQueriesContext(connection) as queries:
        assert get_unblinded_campaign(author, twist_campaign.slug) == twist_campaign
    assert len(queries) == 1, [q["sql"] for q in queries.captured_queries]


def test_an_author_with_open_work_elsewhere_is_asked_the_whole_rule(twist_campaign, author, annotator_b):
    """Open work on other items leaves the campaign open to them (a second query asks which items); open
    work on its own items closes it, whichever campaign holds that work."""
    campaign_create(slug="lp-auth", item_set=make_lapse_items(3), annotators=[author, annotator_b], seed=1)
    assert roles.is_author(author)
    with CaptureQueriesContext(connection) as queries:
        assert get_unblinded_campaign(author, twist_campaign.slug) == twist_campaign
    assert len(queries) == 2
    campaign_create(slug="tw-auth", item_set=twist_campaign.item_set, annotators=[author, annotator_b], seed=2)
    with pytest.raises(NotFound, match="submitted your own annotation"):
        get_unblinded_campaign(author, twist_campaign.slug)


def test_annotators_and_outsiders_never_open_unblinded_material(twist_campaign, annotator_a, outsider):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    answer_all_phase2(enrollment)
    enrollment_submit(enrollment=enrollment)
    for user in (annotator_a, outsider):
        assert not can_view_unblinded(user, twist_campaign)
        with pytest.raises(NotAllowed):
            require_unblinded(user, twist_campaign)


def test_get_assignment_for_user_answers_someone_elses_assignment_as_one_that_does_not_exist(
        twist_campaign, annotator_a, annotator_b):
    """A 403 for an id that exists and a 404 for one that does not would let an annotator count the ids."""
    other = enrollment_of(twist_campaign, annotator_b).assignments.first()
    with pytest.raises(NotFound) as theirs:
        get_assignment_for_user(annotator_a, pk=other.pk)
    with pytest.raises(NotFound) as missing:
        get_assignment_for_user(annotator_a, pk=10**9)
    assert theirs.value.message == missing.value.message
    assert get_assignment_for_user(annotator_b, pk=other.pk) == other


def test_get_assignment_for_user_gives_404_for_what_does_not_exist(twist_campaign, annotator_a):
    with pytest.raises(NotFound):
        get_assignment_for_user(annotator_a, pk=10**9)
    with pytest.raises(NotFound):
        get_assignment_for_user(annotator_a, campaign_slug="tw", position=99)
    with pytest.raises(NotFound):
        get_assignment_for_user(annotator_a, campaign_slug="none", position=1)


def test_get_enrollment_for_user_gives_403_to_a_non_annotator_of_the_campaign(twist_campaign, outsider):
    with pytest.raises(NotAllowed):
        get_enrollment_for_user(outsider, "tw")


def test_an_unknown_campaign_in_the_api_does_not_list_the_others(author_campaign, admin_user, client):
    client.force_login(admin_user)  # an author of no campaign here, so not a member of 'auth'
    response = client.get("/api/adjudication/nope/queue/")
    assert response.status_code == 404
    assert response.json() == {"detail": "no campaign 'nope'"}


def test_an_unknown_campaign_on_a_page_does_not_list_the_others(author_campaign, annotator_a, client):
    client.force_login(annotator_a)
    response = client.get("/annotate/nope/")
    assert response.status_code == 404
    assert "auth" not in response.content.decode()


def test_an_operator_is_told_which_campaigns_exist(author_campaign):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=r"no campaign 'nope' \(campaigns: auth\)"):
        call_command("agreement", "nope")
