"""The home page's next step per role: an annotator resumes, an author is led to the queue, the key build,
the draft, the errata; someone without a role is told how to get one. Nothing of a campaign an author is
still blind to, and nothing of any campaign for an annotator."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from adjudication.services import queue_sync
from keys.services import erratum_decide, erratum_file, key_build
from tests.adjudication.conftest import decide, make_campaign, make_twist_campaign

pytestmark = pytest.mark.django_db


def _home(client, user=None) -> str:
    if user is not None:
        client.force_login(user)
    response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_visitor_is_offered_the_login_and_the_public_keys(client):
    html = _home(client)
    assert 'href="/accounts/login/"' in html and 'data-testid="next-steps"' not in html


def test_someone_without_a_role_is_told_how_to_get_one(client, outsider):
    html = _home(client, outsider)
    assert 'data-testid="no-role"' in html and "an administrator adds" in html
    assert 'data-testid="author-steps"' not in html and 'data-testid="annotator-steps"' not in html


def test_an_annotator_with_open_work_is_offered_to_resume_it(client, annotator_a, annotator_b):
    from tests.adjudication.conftest import AGREE

    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-1:v1b1": AGREE}, slug="open", close=False)
    html = _home(client, annotator_a)
    assert f'href="/annotate/{campaign.slug}/"' in html and "Resume" in html
    assert 'data-testid="no-role"' not in html and 'data-testid="author-steps"' not in html


def test_an_annotator_with_nothing_open_is_pointed_to_my_work(client, annotator_b, key_campaign):
    html = _home(client, annotator_b)  # key_campaign is closed
    assert 'data-testid="annotator-idle"' in html and "Resume" not in html
    # Blindness: nothing of the queue, its counts or its keys reaches an annotator's home page.
    assert "queued item" not in html and key_campaign.slug + ":" not in html and "build the key" not in html


def test_an_author_is_led_from_the_queue_to_the_key_build_the_draft_and_the_errata(client, author, outsider, key_campaign):
    html = _home(client, author)
    assert "small is closed: adjudicate its disagreements." in html and 'href="/adjudicate/small/"' in html
    queue_sync(campaign=key_campaign)
    html = _home(client)
    assert "small: 2 queued items to decide." in html
    decide(key_campaign, "s-0001", "drop", author)
    queue_sync(campaign=key_campaign)
    assert "small: 1 queued item to decide." in _home(client)
    decide(key_campaign, "s-0004", "keep", author)
    queue_sync(campaign=key_campaign)
    html = _home(client)
    assert "small is closed and has no key yet" in html and 'href="/keys/new/small/"' in html
    draft = key_build(campaign=key_campaign, version="TWIST-test-v1.0", user=author)
    html = _home(client)
    assert "Draft TWIST-test-v1.0 waits for review" in html and "has no key yet" not in html
    from keys.services import key_freeze_draft

    key = key_freeze_draft(key=draft, user=author)
    erratum = erratum_file(key=key, item_external_id="s-0002", kind="drop", description="a typo", user=outsider)
    html = _home(client)
    assert "TWIST-test-v1.0: 1 erratum to review." in html and "waits for review" not in html
    erratum_decide(erratum=erratum, accept=True, note="yes", user=author)
    html = _home(client)
    assert "TWIST-test-v1.0: 1 accepted erratum to release in a new version." in html
    assert 'href="/keys/TWIST-test-v1.0/derive/"' in html


def test_an_author_annotating_a_campaign_sees_nothing_of_it_until_they_hand_in(client, author, annotator_b):
    from tests.adjudication.conftest import DISAGREE

    make_twist_campaign([author, annotator_b], {"conv-1:v1b1": DISAGREE}, slug="mine", close=False)
    html = _home(client, author)
    assert "mine" not in html.split('data-testid="next-steps"')[1].split("Campaigns and keys")[1]
    assert 'href="/annotate/mine/"' in html  # their own work, to resume


def test_an_author_sees_when_every_annotator_has_handed_in(client, author, annotator_a, annotator_b, handed_in):
    campaign = handed_in
    html = _home(client, author)
    assert f"Every annotator of {campaign.slug} has handed in" in html


@pytest.fixture
def handed_in(annotator_a, annotator_b):
    from django.utils import timezone

    from annotation.models import Enrollment
    from tests.adjudication.conftest import AGREE

    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-1:v1b1": AGREE}, slug="done", close=False)
    Enrollment.objects.filter(campaign=campaign).update(submitted_at=timezone.now())
    return campaign


def test_the_home_page_runs_the_same_queries_for_small_and_large_campaigns(client, author, annotator_b):
    client.force_login(author)
    small = make_campaign(slug="h-small", n=6, annotators=[author, annotator_b], disagree=(1,))
    queue_sync(campaign=small)
    client.get("/")
    with CaptureQueriesContext(connection) as one:
        _home(client)
    large = make_campaign(slug="h-large", n=90, annotators=[author, annotator_b], disagree=(1, 4, 7, 40))
    queue_sync(campaign=large)
    with CaptureQueriesContext(connection) as two:
        html = _home(client)
    assert "h-large: 4 queued items to decide." in html and "h-small: 1 queued item to decide." in html
    assert len(one) == len(two), (len(one), len(two))


def test_an_author_with_nothing_waiting_is_told_so(client, author):
    html = _home(client, author)
    assert 'data-testid="author-idle"' in html and 'data-testid="author-steps"' not in html
