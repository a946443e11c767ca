"""Two tabs saving the same item at the same moment, for real: two threads, two database connections.
Only meaningful where rows can be locked (PostgreSQL; CI runs it there)."""

import threading

import pytest
from django.db import connection, connections

from annotation.models import Answer, AnswerRevision
from annotation.services import answer_save
from tests.annotation.conftest import enrollment_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_saves_of_different_fields_keep_both_and_number_revisions_without_gaps(twist_campaign, annotator_a):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite serialises writers anyway)")
    assignment_pk = enrollment_of(twist_campaign, annotator_a).assignments.get(position=0).pk
    barrier = threading.Barrier(2)
    errors = []

    def tab(key, values):
        from annotation.models import Assignment

        try:
            assignment = Assignment.objects.select_related("item", "enrollment__campaign").get(pk=assignment_pk)
            barrier.wait()
            for value in values:
                answer_save(assignment=assignment, values={key: value})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    notes = [f"note {i}" for i in range(15)]
    verdicts = ["contradicts", "consistent", "cannot-tell"] * 5
    threads = [threading.Thread(target=tab, args=("q1note", notes)), threading.Thread(target=tab, args=("q1", verdicts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    answer = Answer.objects.get(assignment_id=assignment_pk)
    assert answer.values == {"q1note": "note 14", "q1": "cannot-tell"}
    revisions = list(AnswerRevision.objects.filter(answer=answer).order_by("revision").values_list("revision", flat=True))
    assert revisions == list(range(1, 31)) and answer.revision == 30
