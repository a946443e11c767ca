"""A third-annotator pass over a frozen key: a campaign over its items for someone who was not in its
campaign, reported as the independent reliability estimate (kappa against the key and each annotator)."""

import json

import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Assignment
from annotation.transfer import answers_load
from goldkey.errors import ApplicationError
from keys.models import KeyEntry
from keys.selectors import reliability_report
from keys.services import key_freeze, key_publish, reliability_pass_create
from protocols import twist_b

pytestmark = pytest.mark.realdata


@pytest.fixture
def v1(twist_decided, author):
    return key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)


def test_a_third_annotator_over_twist_v1_reports_kappa_against_the_key_and_each_annotator(v1, author, outsider, shared_data, client):
    reliability = reliability_pass_create(key=v1, annotators=[outsider], slug="twist-v1-r", seed=3, user=author)
    held = set(Assignment.objects.filter(enrollment__campaign=reliability.campaign).values_list("item_id", flat=True))
    entries = {e.item_id: e for e in KeyEntry.objects.filter(key=v1)}
    assert held == set(entries) and len(held) == 161
    # The fixture: the third annotator answers as the released annotator B did, on the key's items.
    released_b = json.loads(shared_data("twist-v1", "annotation", "twist_v1_answers_B.json").read_text())["answers"]
    kept = {e.external_id: e for e in entries.values()}
    answers_load(campaign=reliability.campaign, annotator="R1", submit=False,
                 answers={i: {"q1": released_b[i]["q1"]} for i in kept if released_b.get(i, {}).get("q1")})
    [row] = reliability_report(v1)
    assert row["label"] == "independent reliability estimate for TWIST-v1.0"
    assert row["vs_annotators"]["B"]["kappa"] == pytest.approx(1.0)
    pairs = [(released_b[i]["q1"], twist_b.SPEC.verdict_of(e.gold)) for i, e in sorted(kept.items())
             if released_b.get(i, {}).get("q1")]
    expected = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    assert row["vs_key"]["kappa"] == pytest.approx(expected, abs=1e-12)
    assert row["answered"] == len(pairs)
    client.force_login(author)  # the key is embargoed: its page is for authors
    page = client.get(reverse("keys:detail", args=["TWIST-v1.0"])).content.decode()
    assert 'data-testid="reliability"' in page and f"{expected:.3f}" in page
    assert 'data-testid="public-during-pass"' not in page


def test_an_original_annotator_cannot_be_the_independent_one(v1, author, annotator_a):
    with pytest.raises(ApplicationError, match="an independent estimate needs annotators who did not"):
        reliability_pass_create(key=v1, annotators=[annotator_a], slug="r", user=author)


def test_a_reliability_pass_makes_no_key_of_its_own(v1, author, outsider):
    from annotation.services import campaign_close
    from keys.services import key_build

    reliability = reliability_pass_create(key=v1, annotators=[outsider], slug="r2", user=author)
    campaign_close(campaign=reliability.campaign, user=author, end_open=True)
    with pytest.raises(ApplicationError, match="reliability pass over a frozen key"):
        key_build(campaign=reliability.campaign, version="R-v1.0", user=author)


def test_the_key_line_is_closed_to_the_third_annotator_until_they_hand_in(v1, author, outsider, client):
    from annotation.models import Enrollment
    from annotation.services import enrollment_submit

    reliability = reliability_pass_create(key=v1, annotators=[outsider], slug="twist-v1-blind", user=author)
    urls = (reverse("keys:detail", args=["TWIST-v1.0"]), reverse("keys:jsonl", args=["TWIST-v1.0"]),
            reverse("keys:download", args=["TWIST-v1.0"]), "/api/keys/TWIST-v1.0/")
    client.force_login(outsider)
    for url in urls:
        assert client.get(url).status_code == 404, url
    assert "TWIST-v1.0" not in client.get(reverse("keys:list")).content.decode()
    client.logout()
    for url in urls:  # signed out too: the key is embargoed while the pass runs
        assert client.get(url).status_code == 404, url
    client.force_login(author)
    assert client.get(urls[0]).status_code == 200
    with pytest.raises(ApplicationError, match="'twist-v1-blind' still has open work on items of this key"):
        key_publish(key=v1, user=author)
    enrollment_submit(enrollment=Enrollment.objects.get(campaign=reliability.campaign), as_imported=True)
    key_publish(key=v1, user=author)
    client.logout()
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_a_pass_on_a_published_key_needs_the_acknowledgment_and_the_report_says_so(v1, author, outsider, client):
    key_publish(key=v1, user=author)
    with pytest.raises(ApplicationError, match="is published: its annotators could read the gold"):
        reliability_pass_create(key=v1, annotators=[outsider], slug="late", user=author)
    made = reliability_pass_create(key=v1, annotators=[outsider], slug="late", user=author, key_public_acknowledged=True)
    assert made.key_public_during_pass
    first = KeyEntry.objects.filter(key=v1).order_by("external_id").first()
    answers_load(campaign=made.campaign, annotator="R1", submit=False, answers={first.external_id: {"q1": "contradicts"}})
    [row] = reliability_report(v1)
    assert row["key_public_during_pass"] is True
    assert 'data-testid="public-during-pass"' in client.get(reverse("keys:detail", args=["TWIST-v1.0"])).content.decode()
