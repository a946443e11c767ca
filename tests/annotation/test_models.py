"""What the database itself holds for assignments: the indexes every lookup by enrollment uses."""

import pytest
from django.db import connection

from annotation.models import Assignment
from annotation.services import campaign_create
from tests.annotation.conftest import make_twist_items

pytestmark = pytest.mark.django_db


def _indexes() -> dict[str, dict]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Assignment._meta.db_table)
    return {name: c for name, c in constraints.items() if c["index"] or c["unique"]}


def test_lookups_by_enrollment_are_served_by_the_unique_pairs_and_no_index_of_its_own():
    indexes = _indexes()
    leading = sorted(tuple(c["columns"]) for c in indexes.values() if c["columns"][0] == "enrollment_id")
    unique = sorted(tuple(c["columns"]) for c in indexes.values() if c["unique"] and c["columns"][0] == "enrollment_id")
    assert unique == [("enrollment_id", "item_id"), ("enrollment_id", "position")]
    # The two partial indexes of open assignments (Resume) lead with it too; nothing else does.
    assert ("enrollment_id",) not in leading
    assert leading == sorted(unique + [("enrollment_id", "position")] * 2)


def test_the_item_keeps_its_index(db):
    # An item's assignments across enrollments (protecting an item from deletion, per-item reads)
    # have no unique pair leading with the item.
    assert any(c["columns"] == ["item_id"] for c in _indexes().values())


def test_deleting_an_enrollment_still_deletes_its_assignments(db, annotator_a, annotator_b):
    campaign = campaign_create(slug="del", item_set=make_twist_items(4, name="del", conversation_id="conv-del"),
                               annotators=[annotator_a, annotator_b], seed=1)
    enrollment = campaign.enrollments.get(annotator=annotator_a)
    enrollment.delete()
    assert not Assignment.objects.filter(enrollment_id=enrollment.pk).exists()
    assert Assignment.objects.filter(enrollment__campaign=campaign).count() == 4
