"""The scorer label admin: read-only, by role, and blind for an author who is still annotating."""

import pytest
from django.urls import reverse

from annotation.services import campaign_create
from items.parsing import ParsedLapseItem
from items.services import item_set_get_or_create, lapse_items_create
from lapse.models import Scorer, ScorerLabel

pytestmark = pytest.mark.django_db
CHANGELIST = "admin:lapse_scorerlabel_changelist"


@pytest.fixture
def labelled(db):
    """Two item sets of one output each, every output labelled by the cascade."""
    sets = []
    for name, gid in (("set a", "a-1"), ("set b", "b-1")):
        lapse_items_create(item_set_name=name, source="test", items=[ParsedLapseItem(1, gid, "req", "resp", "fact", {"arm": "behavioral"})])
        item_set = item_set_get_or_create(name=name, kind="lapse")
        ScorerLabel.objects.create(item=item_set.items.get(), scorer=Scorer.CASCADE, label="TEMPLATE" if gid == "a-1" else "HEDGE")
        sets.append(item_set)
    return sets


def test_an_author_sees_scorer_labels_and_cannot_add_or_change_them(client, author, labelled):
    client.force_login(author)
    page = client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    assert "TEMPLATE" in page.content.decode() and "HEDGE" in page.content.decode()
    assert client.get(reverse("admin:lapse_scorerlabel_add")).status_code == 403
    row = ScorerLabel.objects.get(label="HEDGE")
    assert client.post(reverse("admin:lapse_scorerlabel_change", args=[row.pk]), {"label": "PROCEED"}).status_code == 403
    assert ScorerLabel.objects.get(pk=row.pk).label == "HEDGE"


def test_an_author_still_annotating_a_set_does_not_see_its_scorer_labels(client, author, annotator_b, labelled):
    set_a, _ = labelled
    campaign_create(slug="blind", item_set=set_a, annotators=[author, annotator_b], seed=1)
    client.force_login(author)
    content = client.get(reverse(CHANGELIST)).content.decode()
    assert "HEDGE" in content and "TEMPLATE" not in content


def test_staff_without_the_author_role_are_refused(client, annotator_a, labelled):
    annotator_a.is_staff = True
    annotator_a.save()
    client.force_login(annotator_a)
    assert client.get(reverse(CHANGELIST)).status_code == 403
