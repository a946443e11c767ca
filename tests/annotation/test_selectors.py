"""Resume: the first open item of the current phase, found through the assignments' own phase flags
(kept with the answers by answer_save) and their partial indexes, so it does not grow with progress."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import selectors
from annotation.models import Answer, Assignment
from annotation.services import answer_save, campaign_create, crisis_block_decline, phase1_finish
from tests.annotation.conftest import answer_all_phase1, enrollment_of, make_twist_items


def _campaign(n, annotator_a, annotator_b, **kwargs):
    item_set = make_twist_items(n, name=f"resume {n}", conversation_id=f"conv-r{n}", crisis=kwargs.pop("crisis", 0))
    return campaign_create(slug=f"r{n}", item_set=item_set, annotators=[annotator_a, annotator_b], seed=3, **kwargs)


def _answer_positions(enrollment, positions, values=None):
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign").filter(position__in=positions):
        answer_save(assignment=assignment, values=values or {"q1": "consistent"})


def _flags(enrollment):
    """(position, assignment flags, answer flags) for every assignment: the copy must equal the answer."""
    rows = enrollment.assignments.order_by("position").values_list(
        "position", "phase1_done", "phase2_done", "answer__phase1_done", "answer__phase2_done"
    )
    return [(p, (a1, a2), (bool(x1), bool(x2))) for p, a1, a2, x1, x2 in rows]


def _resume_sql(enrollment):
    with CaptureQueriesContext(connection) as ctx:
        selectors.resume_assignment(enrollment)
    (query,) = ctx.captured_queries
    return query["sql"]


def test_resume_goes_to_the_first_open_position_whatever_order_items_were_answered_in(db, annotator_a, annotator_b):
    enrollment = enrollment_of(_campaign(10, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, [0, 1, 3, 4, 9])
    assert selectors.resume_assignment(enrollment).position == 2
    _answer_positions(enrollment, [2])
    assert selectors.resume_assignment(enrollment).position == 5
    _answer_positions(enrollment, [5, 6, 7, 8])
    assert selectors.resume_assignment(enrollment) is None


def test_an_answer_that_is_no_longer_complete_opens_its_item_again(db, annotator_a, annotator_b):
    enrollment = enrollment_of(_campaign(10, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, range(10))
    assert selectors.resume_assignment(enrollment) is None
    first = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=4)
    answer_save(assignment=first, values={"q1note": "only a note"}, replace=True)  # the verdict is cleared
    assert selectors.resume_assignment(enrollment).position == 4
    assert all(copy == answer for _, copy, answer in _flags(enrollment))


def test_the_assignment_flags_follow_the_answer_through_both_phases(db, annotator_a, annotator_b):
    enrollment = enrollment_of(_campaign(9, annotator_a, annotator_b), annotator_a)
    answer_all_phase1(enrollment)
    enrollment.refresh_from_db()
    assert selectors.current_phase(enrollment) == 2
    assert all(copy == answer == (True, False) for _, copy, answer in _flags(enrollment))
    assignments = list(enrollment.assignments.select_related("item", "enrollment__campaign").order_by("position"))
    for assignment in assignments[:4]:
        values = {"q2": "yes", "q2quote": "yes"} if assignment.item.gold_label == "contradicting" else {"q3": "clean"}
        answer_save(assignment=assignment, values=values)
    assert selectors.resume_assignment(enrollment).position == 4
    assert [copy for _, copy, _ in _flags(enrollment)] == [(True, True)] * 4 + [(True, False)] * 5
    assert all(copy == answer for _, copy, answer in _flags(enrollment))


def test_a_save_that_changes_nothing_leaves_the_flags_as_they_are(db, annotator_a, annotator_b):
    enrollment = enrollment_of(_campaign(5, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, [0])
    _answer_positions(enrollment, [0])  # the double submit
    assignment = enrollment.assignments.get(position=0)
    assert (assignment.phase1_done, Answer.objects.get(assignment=assignment).revision) == (True, 1)


def test_resume_skips_a_declined_crisis_block(db, annotator_a, annotator_b):
    campaign = _campaign(6, annotator_a, annotator_b, crisis=2, crisis_block=True)
    enrollment = enrollment_of(campaign, annotator_a)
    _answer_positions(enrollment, range(4))
    assert selectors.resume_assignment(enrollment).position == 4  # the crisis block comes last
    enrollment = crisis_block_decline(enrollment=enrollment)
    assert selectors.resume_assignment(enrollment) is None
    phase1_finish(enrollment=enrollment)


def test_resume_runs_the_same_queries_at_the_first_item_and_at_99_percent(db, annotator_a, annotator_b, client):
    campaign = _campaign(100, annotator_a, annotator_b)
    enrollment = enrollment_of(campaign, annotator_a)
    client.force_login(annotator_a)

    def resume():
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(f"/annotate/{campaign.slug}/")
        assert response.status_code == 302
        return response["Location"], [q["sql"] for q in ctx.captured_queries]

    at_start, start_queries = resume()
    _answer_positions(enrollment, range(99))
    at_end, end_queries = resume()
    assert (at_start, at_end) == (f"/annotate/{campaign.slug}/item/1/", f"/annotate/{campaign.slug}/item/100/")
    assert len(start_queries) == len(end_queries) <= 6
    assert not any("annotation_answer" in sql for sql in end_queries)


def test_resume_reads_the_open_assignments_index_on_sqlite(db, annotator_a, annotator_b):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: its query plan (the other database's plan has its own test)")
    enrollment = enrollment_of(_campaign(50, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, range(40))
    sql = _resume_sql(enrollment)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
        plan = " | ".join(row[-1] for row in cursor.fetchall())
    assert "annotation_answer" not in plan
    assert "USING INDEX assignment_open_phase1" in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.parametrize("answered", [1, 990])
def test_resume_is_an_index_scan_without_the_answers_on_postgresql(db, annotator_a, annotator_b, answered):
    if connection.vendor != "postgresql":
        pytest.skip("query plans are PostgreSQL's here: set DATABASE_URL (SQLite's plan is tested above)")
    enrollment = enrollment_of(_campaign(1000, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, range(answered))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_assignment")
        cursor.execute("ANALYZE annotation_answer")
        cursor.execute(f"EXPLAIN {_resume_sql(enrollment)}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # What grows with progress is the answers and the assignments: neither may be scanned. The skip table
    # is left out of the claim: how it is read depends on how many skips the database holds (a handful
    # left by earlier tests makes a sequential scan of it the cheaper plan), not on progress.
    assert "annotation_answer" not in plan, plan
    assert "Seq Scan on annotation_assignment" not in plan, plan
    if answered > 1:
        # Past the first items only the partial index of open assignments keeps the answered ones out.
        assert "assignment_open_phase1" in plan, plan
    else:
        # With one item answered, the (enrollment, position) pair walks no answered rows either, and the
        # planner takes either index by a hair's difference in cost.
        assert "Index Scan using assignment_open_phase1" in plan or "Index Scan using assignment_unique_position" in plan, plan


def test_the_migration_fills_the_flags_from_the_answers(db, annotator_a, annotator_b):
    import importlib

    migration = importlib.import_module("annotation.migrations.0006_assignment_done_flags")
    enrollment = enrollment_of(_campaign(6, annotator_a, annotator_b), annotator_a)
    _answer_positions(enrollment, [0, 2, 5])
    Assignment.objects.update(phase1_done=False, phase2_done=False)  # as the columns were when added
    with connection.cursor() as cursor:
        cursor.execute(migration.FILL_FROM_ANSWERS)
    assert [p for p, copy, _ in _flags(enrollment) if copy == (True, False)] == [0, 2, 5]
    assert all(copy == answer for _, copy, answer in _flags(enrollment))
