"""What the database itself holds for assignments: the indexes every lookup by enrollment or by item
uses, and the migration that made the (enrollment, item) pair lead with the item."""

import re

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Answer, Assignment
from annotation.services import answer_save, assignment_skip, campaign_create
from items.models import Item
from tests.annotation.conftest import make_twist_items
from tests.migrating import migrate_to_latest

pytestmark = pytest.mark.django_db


def _indexes() -> dict[str, dict]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Assignment._meta.db_table)
    return {name: c for name, c in constraints.items() if (c["index"] or c["unique"]) and not c["primary_key"]}


def _campaign(annotator_a, annotator_b, n=4, slug="del"):
    return campaign_create(slug=slug, item_set=make_twist_items(n, name=slug, conversation_id=f"conv-{slug}"),
                           annotators=[annotator_a, annotator_b], seed=1)


def test_the_unique_pairs_serve_every_lookup_and_neither_key_has_an_index_of_its_own():
    indexes = _indexes()
    unique = sorted(tuple(c["columns"]) for c in indexes.values() if c["unique"])
    assert unique == [("enrollment_id", "position"), ("item_id", "enrollment_id")]
    # Besides the pairs only the two partial indexes of open assignments (Resume): no B-tree of the
    # enrollment or of the item alone for campaign_create to fill.
    others = sorted(tuple(c["columns"]) for c in indexes.values() if not c["unique"])
    assert others == [("enrollment_id", "position")] * 2
    assert sorted(indexes) == ["assignment_open_phase1", "assignment_open_phase2",
                               "assignment_unique_item", "assignment_unique_position"]


def test_the_pairs_still_refuse_an_item_twice_or_a_position_twice(db, annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    first = Assignment.objects.filter(enrollment__campaign=campaign).order_by("pk").first()
    other = Assignment.objects.filter(enrollment_id=first.enrollment_id).exclude(pk=first.pk).first()
    for duplicate in ({"item_id": first.item_id, "position": 99}, {"item_id": other.item_id + 1000, "position": first.position}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Assignment.objects.create(enrollment_id=first.enrollment_id, crisis=False, **duplicate)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:  # the foreign keys are deferred; the pairs are not
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _plan(sql: str, params) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE annotation_assignment")
            cursor.execute(f"EXPLAIN {sql}", params)
            return "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(row[-1] for row in cursor.fetchall())


def _sql(queryset):
    sql, params = queryset.query.sql_with_params()
    return sql, params


@pytest.mark.parametrize("read", ["an item's assignments", "an item's answers in a campaign", "one enrollment's item"])
def test_lookups_by_item_are_served_by_the_pair_leading_with_the_item(db, annotator_a, annotator_b, read):
    campaign = _campaign(annotator_a, annotator_b, n=1000, slug="plan")
    item = Item.objects.filter(item_set=campaign.item_set).order_by("pk")[3]
    enrollment = campaign.enrollments.order_by("pk").first()
    queryset = {
        # what deleting an item asks first (on_delete=PROTECT), and PostgreSQL's own foreign-key check
        "an item's assignments": Assignment.objects.filter(item=item),
        # decision_save's labels of the item
        "an item's answers in a campaign": Answer.objects.filter(assignment__enrollment__campaign=campaign,
                                                                 assignment__item=item).values("values"),
        "one enrollment's item": Assignment.objects.filter(enrollment=enrollment, item=item),
    }[read]
    plan = _plan(*_sql(queryset))
    if connection.vendor == "postgresql":
        assert "assignment_unique_item" in plan, plan
    else:  # SQLite names a UNIQUE of its CREATE TABLE by an automatic index: the search by the item shows it
        assert re.search(r"SEARCH annotation_assignment USING (COVERING )?INDEX sqlite_autoindex_\w+ \(item_id=\?", plan), plan
    assert "SCAN annotation_assignment" not in plan and "Seq Scan on annotation_assignment" not in plan, plan


def test_deleting_an_enrollment_still_deletes_its_assignments(db, annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    enrollment = campaign.enrollments.get(annotator=annotator_a)
    enrollment.delete()
    assert not Assignment.objects.filter(enrollment_id=enrollment.pk).exists()
    assert Assignment.objects.filter(enrollment__campaign=campaign).count() == 4


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("annotation", target)])


def _rows():
    return list(Assignment.objects.order_by("pk").values_list(
        "pk", "enrollment_id", "item_id", "position", "crisis", "phase1_done", "phase2_done", "answer__pk"))


def _schema_objects():
    if connection.vendor != "sqlite":
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'index') ORDER BY name")
        return cursor.fetchall()


def test_the_migration_keeps_every_assignment_and_reverses(transactional_db, annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b, n=6, slug="mig")
    enrollment = campaign.enrollments.get(annotator=annotator_a)
    answered = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=2)
    answer_save(assignment=answered, values={"q1": "consistent"})
    assignment_skip(assignment=enrollment.assignments.select_related("item", "enrollment__campaign").get(position=3))
    freed = Assignment.objects.order_by("-pk").first().pk
    Assignment.objects.filter(pk=freed).delete()
    rows, objects = _rows(), _schema_objects()
    _migrate("0009_assignment_enrollment_index_redundant")
    try:
        assert _rows() == rows
        assert sorted(tuple(c["columns"]) for c in _indexes().values() if c["unique"]) == [
            ("enrollment_id", "item_id"), ("enrollment_id", "position")]
        assert ["item_id"] in [c["columns"] for c in _indexes().values()]
    finally:
        migrate_to_latest()
    assert _rows() == rows and _schema_objects() == objects  # the sealing triggers, the indexes
    assert Answer.objects.get(assignment=answered).values == {"q1": "consistent"}
    assert enrollment.assignments.get(position=3).skips.count() == 1
    # The id counter survived the rebuild: the freed id is not given out again.
    _campaign(annotator_a, annotator_b, n=2, slug="mig2")
    assert Assignment.objects.filter(enrollment__campaign__slug="mig2").order_by("pk").first().pk > freed
