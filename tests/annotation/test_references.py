"""An assignment names an enrollment and an item that exist. On SQLite its foreign keys say so; on
PostgreSQL statement triggers do (annotation 0011), with the same guarantees: what an insert or an
update names must exist (and the item must be one of its campaign's item set), what an assignment
names cannot be deleted, re-keyed or truncated away, and two transactions cannot each miss the
other's rows: a delete waits for an insert naming its rows, and an insert waits for such a delete."""

import threading
import time

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction

from annotation.models import Assignment, Campaign, Enrollment
from annotation.services import campaign_create
from goldkey.lib.bulk import bulk_insert_columns
from items.models import Item
from tests.annotation.conftest import make_twist_items
from tests.migrating import migrate, migrate_to_latest

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite checks these references with its foreign keys"
)
pytestmark = pytest.mark.django_db

NAMES_NOTHING = "names no (enrollment|item)|still named by an assignment|truncated while assignments name"


def sql(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def refused(statement, params=(), match=NAMES_NOTHING):
    with pytest.raises(IntegrityError, match=match):
        with transaction.atomic():
            sql(statement, params)


def _campaign(annotator_a, annotator_b, slug="refs", n=4):
    item_set = make_twist_items(n, name=slug, conversation_id=f"conv-{slug}")
    return campaign_create(slug=slug, item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)


def _spare_item(campaign, external_id="spare"):
    """An item of the campaign's set that no assignment names."""
    model = Item.objects.filter(item_set=campaign.item_set).first()
    model.pk, model.external_id = None, external_id
    model.save()
    return model


INSERT = ("INSERT INTO annotation_assignment (enrollment_id, item_id, position, crisis, phase1_done, phase2_done) "
          "VALUES (%s, %s, %s, false, false, false)")


def test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Assignment._meta.db_table)
    references = sorted(c["foreign_key"] for c in constraints.values() if c["foreign_key"])
    if connection.vendor == "sqlite":
        assert references == [("annotation_enrollment", "id"), ("items_item", "id")]
        return
    assert references == []  # checked per statement: a foreign key checks (and locks) row by row
    triggers = {name for (name,) in sql("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE %s",
                                        ["%valid_references%"])}
    assert triggers == {
        "annotation_assignment_valid_references_on_insert", "annotation_assignment_valid_references_on_update",
        "items_item_valid_references_on_delete", "items_item_valid_references_on_rekey",
        "items_item_valid_references_on_truncate", "annotation_enrollment_valid_references_on_delete",
        "annotation_enrollment_valid_references_on_rekey", "annotation_enrollment_valid_references_on_truncate",
    }


def test_an_assignment_must_name_an_enrollment_and_an_item_that_exist(annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    enrollment = campaign.enrollments.first()
    item = Item.objects.filter(item_set=campaign.item_set).first()
    missing_item = Item.objects.order_by("-pk").first().pk + 1000
    missing_enrollment = Enrollment.objects.order_by("-pk").first().pk + 1000
    before = Assignment.objects.count()
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            sql(INSERT, [enrollment.pk, missing_item, 900])
            connection.check_constraints(table_names=[Assignment._meta.db_table])  # SQLite's are deferred
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            sql(INSERT, [missing_enrollment, item.pk, 901])
            connection.check_constraints(table_names=[Assignment._meta.db_table])
    assert Assignment.objects.count() == before


@postgres_only
def test_postgresql_names_the_missing_row_and_checks_the_item_is_of_the_campaigns_set(annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    other = _campaign(annotator_a, annotator_b, slug="other")
    enrollment = campaign.enrollments.first()
    missing = Item.objects.order_by("-pk").first().pk + 1000
    refused(INSERT, [enrollment.pk, missing, 900], match=f"item_id {missing} names no item of its campaign's item set")
    foreign = _spare_item(other)  # exists, but in another campaign's set: that set's lock would not cover it
    refused(INSERT, [enrollment.pk, foreign.pk, 900], match=f"item_id {foreign.pk} names no item")
    gone = Enrollment.objects.order_by("-pk").first().pk + 1000
    refused(INSERT, [gone, foreign.pk, 900], match=f"enrollment_id {gone} names no enrollment")
    spare = _spare_item(campaign)
    sql(INSERT, [enrollment.pk, spare.pk, 900])  # a row that names what exists goes in
    assert Assignment.objects.filter(enrollment=enrollment, item=spare).exists()


@postgres_only
def test_a_bulk_insert_with_one_bad_row_among_many_is_refused_whole(annotator_a, annotator_b):
    """From 20,000 rows the trigger checks the items with one hash join, below it by primary key:
    both forms find the one bad row, and nothing of the statement is left."""
    campaign = _campaign(annotator_a, annotator_b, n=2)
    enrollment = campaign.enrollments.first()
    template = Item.objects.filter(item_set=campaign.item_set).first()
    fields = {f.attname: getattr(template, f.attname) for f in Item._meta.concrete_fields if not f.primary_key}
    created = Item.objects.bulk_create(Item(**{**fields, "external_id": f"bulk-{i:05d}"}) for i in range(20_000))
    ids = [item.pk for item in created]
    missing = max(ids) + 1000
    for rows in (ids[:100], ids):  # the lookup form, then the hashed form
        before = Assignment.objects.count()
        named = rows[:-1] + [missing]
        with pytest.raises(IntegrityError, match=f"item_id {missing} names no item"):
            with transaction.atomic():
                bulk_insert_columns(Assignment, {
                    "enrollment_id": [enrollment.pk] * len(named), "item_id": named,
                    "position": list(range(1000, 1000 + len(named))), "crisis": [False] * len(named),
                    "phase1_done": [False] * len(named), "phase2_done": [False] * len(named),
                })
        assert Assignment.objects.count() == before
    bulk_insert_columns(Assignment, {
        "enrollment_id": [enrollment.pk] * len(ids), "item_id": ids, "position": list(range(1000, 1000 + len(ids))),
        "crisis": [False] * len(ids), "phase1_done": [False] * len(ids), "phase2_done": [False] * len(ids),
    })
    assert Assignment.objects.filter(enrollment=enrollment).count() == 2 + 20_000


@postgres_only
def test_what_an_assignment_names_cannot_be_deleted_rekeyed_or_truncated_away(annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    assignment = Assignment.objects.filter(enrollment__campaign=campaign).first()
    refused("DELETE FROM items_item WHERE id = %s", [assignment.item_id],
            match=f"item {assignment.item_id} is still named by an assignment")
    refused("DELETE FROM annotation_enrollment WHERE id = %s", [assignment.enrollment_id],
            match=f"enrollment {assignment.enrollment_id} is still named by an assignment")
    refused("UPDATE items_item SET id = id + 100000 WHERE id = %s", [assignment.item_id])
    refused("UPDATE annotation_enrollment SET id = id + 100000 WHERE id = %s", [assignment.enrollment_id])
    refused("UPDATE annotation_assignment SET item_id = item_id + 100000 WHERE id = %s", [assignment.pk],
            match="names no item")
    refused("UPDATE annotation_assignment SET enrollment_id = enrollment_id + 100000 WHERE id = %s", [assignment.pk],
            match="names no enrollment")
    # CASCADE follows foreign keys only: it would empty the items and leave the assignments behind.
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at a TRUNCATE
    refused("TRUNCATE items_item CASCADE", match="items_item: truncated while assignments name its rows")
    assert Item.objects.filter(pk=assignment.item_id).exists()
    # What no assignment names moves and goes freely; truncating the assignments too is allowed.
    spare = _spare_item(campaign)
    sql("UPDATE items_item SET id = id + 100000 WHERE id = %s", [spare.pk])
    sql("DELETE FROM items_item WHERE id = %s", [spare.pk + 100000])
    with transaction.atomic():
        sql("SET CONSTRAINTS ALL IMMEDIATE")
        # The items' evidence too: its references are checked by triggers as well (items 0012), not cascaded.
        sql("TRUNCATE annotation_assignment, annotation_enrollment, items_item, items_evidence CASCADE")
        assert not Item.objects.exists()
        transaction.set_rollback(True)


def test_deleting_a_campaign_still_deletes_its_enrollments_and_assignments(annotator_a, annotator_b):
    """Django deletes the assignments before the enrollments they name: the triggers let it."""
    campaign = _campaign(annotator_a, annotator_b)
    campaign.delete()
    assert not Campaign.objects.filter(slug="refs").exists() and not Assignment.objects.exists()


# Two transactions at once: the rows must be committed for the other connection to see them.

def _connect():
    settings = connection.settings_dict
    return psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"] or None,
                           host=settings["HOST"] or None, port=settings["PORT"] or None)


def _waiting_for_a_lock(pid: int) -> bool:
    with _connect() as probe:
        for _ in range(200):
            row = probe.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
            if row and row[0] == "Lock":
                return True
            time.sleep(0.025)
    return False


def _in_thread(fn):
    outcome = {}

    def run():
        try:
            outcome["value"] = fn()
        except Exception as exc:  # handed to the test, which asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def waits_then_refused(first: list[tuple], second: list[tuple]) -> Exception | None:
    """Run `first` (statements with their parameters) on one connection without committing, then `second`
    on another in a thread; check that the second waits for a lock, commit the first, and return what
    the second raised (rolled back)."""
    with _connect() as holding, _connect() as waiting:
        for statement, params in first:
            holding.execute(statement, params)
        thread, outcome = _in_thread(lambda: [waiting.execute(statement, params) for statement, params in second])
        assert _waiting_for_a_lock(waiting.info.backend_pid)
        holding.commit()
        thread.join(10)
        waiting.rollback()
    return outcome.get("error")


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_delete_waits_for_an_insert_naming_its_item_and_is_then_refused(annotator_a, annotator_b):
    campaign = _campaign(annotator_a, annotator_b)
    spare, enrollment = _spare_item(campaign), campaign.enrollments.first()
    # The delete waits for the item's set, locked by the insert.
    error = waits_then_refused([(INSERT, [enrollment.pk, spare.pk, 900])], [("DELETE FROM items_item WHERE id = %s", [spare.pk])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation), error
    assert Assignment.objects.filter(item=spare).count() == 1 and Item.objects.filter(pk=spare.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_waits_for_a_delete_of_its_item_and_is_then_refused(annotator_a, annotator_b):
    """Without the lock the insert would find the item (the delete is not committed) and keep a row
    naming an item that is gone."""
    campaign = _campaign(annotator_a, annotator_b)
    spare, enrollment = _spare_item(campaign), campaign.enrollments.first()
    error = waits_then_refused([("DELETE FROM items_item WHERE id = %s", [spare.pk])], [(INSERT, [enrollment.pk, spare.pk, 900])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation) and "names no item" in str(error), error
    assert not Assignment.objects.filter(item_id=spare.pk).exists() and not Item.objects.filter(pk=spare.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_item_moved_to_another_set_waits_for_an_insert_naming_it(annotator_a, annotator_b):
    """A move takes the old set's lock, so the item cannot leave the set an insert locked and be deleted
    under the other set's lock."""
    campaign = _campaign(annotator_a, annotator_b)
    other = _campaign(annotator_a, annotator_b, slug="elsewhere")
    spare, enrollment = _spare_item(campaign), campaign.enrollments.first()
    error = waits_then_refused([(INSERT, [enrollment.pk, spare.pk, 900])], [
        ("UPDATE items_item SET item_set_id = %s WHERE id = %s", [other.item_set_id, spare.pk]),
        ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
    ])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation), error
    assert Assignment.objects.filter(item=spare).count() == 1


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_waits_for_a_delete_of_its_enrollment_and_is_then_refused(annotator_a, annotator_b, outsider):
    campaign = _campaign(annotator_a, annotator_b)
    spare = _spare_item(campaign)
    enrollment = Enrollment.objects.create(campaign=campaign, annotator=outsider, pseudonym="Z")
    # The insert waits for the enrollment row, locked by the delete.
    error = waits_then_refused([("DELETE FROM annotation_enrollment WHERE id = %s", [enrollment.pk])],
                               [(INSERT, [enrollment.pk, spare.pk, 0])])
    assert isinstance(error, psycopg.errors.ForeignKeyViolation) and "names no enrollment" in str(error), error
    assert not Assignment.objects.filter(enrollment_id=enrollment.pk).exists()


@postgres_only
def test_reversing_the_migration_puts_the_foreign_keys_back(transactional_db, annotator_a, annotator_b):
    _campaign(annotator_a, annotator_b)
    migrate([("annotation", "0010_assignment_unique_item_leads_with_item")])
    try:
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, Assignment._meta.db_table)
        assert sorted(c["foreign_key"] for c in constraints.values() if c["foreign_key"]) == [
            ("annotation_enrollment", "id"), ("items_item", "id")]
        deferred = sql("SELECT bool_and(condeferrable AND condeferred) FROM pg_constraint "
                       "WHERE conrelid = 'annotation_assignment'::regclass AND contype = 'f'")
        assert deferred == [(True,)]  # as Django makes them
        assert sql("SELECT count(*) FROM pg_trigger WHERE tgname LIKE %s", ["%valid_references%"]) == [(0,)]
    finally:
        migrate_to_latest()
    test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_under_repeatable_read_the_references_are_refused_rather_than_half_checked(annotator_a, annotator_b):
    """A REPEATABLE READ delete that waited for an insert would check with a snapshot older than the
    insert's commit and find no assignment: the triggers refuse to run under it, on both sides."""
    campaign = _campaign(annotator_a, annotator_b)
    spare, enrollment = _spare_item(campaign), campaign.enrollments.first()
    with _connect() as repeatable:
        repeatable.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        repeatable.commit()  # the transactions from here on
        for statement, params in ((INSERT, [enrollment.pk, spare.pk, 900]),
                                  ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
                                  ("UPDATE items_item SET id = id + 100000 WHERE id = %s", [spare.pk]),
                                  ("DELETE FROM annotation_enrollment WHERE id = %s", [enrollment.pk])):
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="checked under READ COMMITTED only"):
                repeatable.execute(statement, params)
            repeatable.rollback()
    assert Item.objects.filter(pk=spare.pk).exists() and not Assignment.objects.filter(item=spare).exists()
