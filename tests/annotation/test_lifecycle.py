"""The campaign lifecycle (annotating -> closed -> frozen), in the services and in the database."""

import json
import threading
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from adjudication.models import Decision, DecisionRevision
from adjudication.services import decision_save
from annotation.models import Answer, AnswerRevision, Assignment, Campaign, Enrollment
from annotation.services import answer_save, campaign_close, enrollment_submit
from goldkey.errors import ApplicationError, NotAllowed
from items.models import Item
from keys.models import GoldKey
from keys.services import key_freeze
from tests.adjudication.conftest import frozen_rows_teardown, make_campaign  # noqa: F401 (a fixture)
from tests.annotation.conftest import answer_all_phase1, answer_all_phase2, enrollment_of

pytestmark = pytest.mark.django_db


def sealed(fn):
    """The database refuses: the triggers are the wall behind the services."""
    with pytest.raises(IntegrityError, match="frozen campaigns are sealed|frozen gold keys are immutable"):
        with transaction.atomic():
            fn()


def sql(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


@pytest.fixture
def frozen(author, annotator_b):
    """A campaign closed, decided and frozen into a key."""
    campaign = make_campaign(slug="life", n=6, annotators=[author, annotator_b], disagree=(1,))
    decision_save(campaign=campaign, item=Item.objects.get(external_id="s-0001"), action="keep", user=author)
    key_freeze(campaign=campaign, version="LIFE-v1.0", user=author)
    campaign.refresh_from_db()
    return campaign


def test_a_new_campaign_is_annotating(twist_campaign):
    assert twist_campaign.status == Campaign.Status.ANNOTATING


def test_key_freeze_is_refused_while_an_annotator_is_still_at_work(twist_campaign, author):
    # The finding: every queued item decided as keep, key_freeze ran while an annotator was at 0 of n.
    with pytest.raises(NotAllowed, match="still being annotated"):
        key_freeze(campaign=twist_campaign, version="EARLY-v1.0", user=author)
    assert not GoldKey.objects.filter(version="EARLY-v1.0").exists()


def test_decisions_wait_until_the_campaign_is_closed(twist_campaign, author):
    item = Item.objects.filter(item_set=twist_campaign.item_set).first()
    with pytest.raises(NotAllowed, match="still being annotated"):
        decision_save(campaign=twist_campaign, item=item, action="keep", user=author)
    assert not Decision.objects.exists()


def test_closing_is_refused_while_an_enrollment_is_open_and_names_it(twist_campaign, author):
    with pytest.raises(ApplicationError, match=r"2 enrollment\(s\) not submitted \(A, B\)"):
        campaign_close(campaign=twist_campaign, user=author)
    twist_campaign.refresh_from_db()
    assert twist_campaign.status == Campaign.Status.ANNOTATING


def test_only_authors_close_a_campaign(twist_campaign, annotator_a):
    with pytest.raises(NotAllowed):
        campaign_close(campaign=twist_campaign, user=annotator_a, end_open=True)


def test_ending_open_work_is_recorded_on_each_enrollment(twist_campaign, author, annotator_a, annotator_b):
    done = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(done)
    answer_all_phase2(done)
    enrollment_submit(enrollment=done)
    campaign_close(campaign=twist_campaign, user=author, end_open=True)
    twist_campaign.refresh_from_db()
    ended = enrollment_of(twist_campaign, annotator_b)
    assert twist_campaign.status == Campaign.Status.CLOSED and twist_campaign.closed_by == author
    assert ended.ended_by == author and ended.ended_at is not None
    assert enrollment_of(twist_campaign, annotator_a).ended_at is None


def test_a_closed_campaign_refuses_answers_and_an_ended_annotator_cannot_submit(twist_campaign, author, annotator_b):
    enrollment = enrollment_of(twist_campaign, annotator_b)
    campaign_close(campaign=twist_campaign, user=author, end_open=True)
    assignment = Assignment.objects.select_related("enrollment__campaign", "item").filter(enrollment=enrollment).first()
    with pytest.raises(NotAllowed, match="closed to annotation"):
        answer_save(assignment=assignment, values={"q1": "consistent"})
    with pytest.raises(NotAllowed, match="closed to annotation"):
        enrollment_submit(enrollment=enrollment)
    assert not Answer.objects.filter(assignment=assignment).exclude(values={}).exists()


def test_close_command_with_end_open_reports_who_was_ended(twist_campaign, author):
    out = StringIO()
    call_command("campaign_close", twist_campaign.slug, "--end-open", "--by", author.username, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["status"] == "closed" and result["ended"] == ["A", "B"]


def test_close_command_without_end_open_refuses_an_open_campaign(twist_campaign, author):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not submitted"):
        call_command("campaign_close", twist_campaign.slug, "--by", author.username, stdout=StringIO())


def test_the_overview_page_closes_a_campaign_for_an_author(client, twist_campaign, author):
    client.force_login(author)
    page = client.get(f"/annotate/overview/{twist_campaign.slug}/")
    assert b"End open work and close" in page.content
    client.post(f"/annotate/overview/{twist_campaign.slug}/close/", {"end_open": "1"})
    twist_campaign.refresh_from_db()
    assert twist_campaign.status == Campaign.Status.CLOSED


def test_the_overview_close_refuses_without_the_explicit_end_open(client, twist_campaign, author):
    client.force_login(author)
    response = client.post(f"/annotate/overview/{twist_campaign.slug}/close/", {})
    assert response.status_code == 400
    twist_campaign.refresh_from_db()
    assert twist_campaign.status == Campaign.Status.ANNOTATING


def test_freezing_marks_the_campaign_frozen(frozen):
    assert frozen.status == Campaign.Status.FROZEN and frozen.frozen_at is not None


def test_after_a_freeze_the_services_refuse_answers_and_decisions(frozen, author):
    assignment = Assignment.objects.select_related("enrollment__campaign", "item").filter(enrollment__campaign=frozen).first()
    with pytest.raises(NotAllowed):
        answer_save(assignment=assignment, values={"q1": "contradicts"})
    with pytest.raises(NotAllowed, match="frozen"):
        decision_save(campaign=frozen, item=assignment.item, action="drop", note="late", user=author)


def test_after_a_freeze_the_orm_cannot_change_answers_or_decisions(frozen):
    sealed(lambda: Answer.objects.filter(assignment__enrollment__campaign=frozen).update(values={"q1": "contradicts"}))
    sealed(lambda: Answer.objects.filter(assignment__enrollment__campaign=frozen).delete())
    sealed(lambda: AnswerRevision.objects.filter(answer__assignment__enrollment__campaign=frozen).update(source="x"))
    sealed(lambda: Decision.objects.filter(campaign=frozen).update(note="rewritten"))
    sealed(lambda: DecisionRevision.objects.filter(decision__campaign=frozen).delete())
    assignment = Assignment.objects.filter(enrollment__campaign=frozen, answer__isnull=True).first()
    if assignment is not None:
        sealed(lambda: Answer.objects.create(assignment=assignment, values={"q1": "consistent"}))
    item = Item.objects.filter(item_set=frozen.item_set).exclude(decisions__campaign=frozen).first()
    sealed(lambda: Decision.objects.create(campaign=frozen, item=item, action="drop", revision=1))


def test_after_a_freeze_raw_sql_cannot_change_answers_decisions_or_the_state(frozen):
    answer_id = Answer.objects.filter(assignment__enrollment__campaign=frozen).values_list("id", flat=True).first()
    sealed(lambda: sql('UPDATE annotation_answer SET "values" = %s WHERE id = %s', ['{"q1": "contradicts"}', answer_id]))
    sealed(lambda: sql("DELETE FROM adjudication_decision WHERE campaign_id = %s", [frozen.pk]))
    sealed(lambda: sql("UPDATE annotation_campaign SET status = 'closed' WHERE id = %s", [frozen.pk]))
    sealed(lambda: sql("DELETE FROM annotation_campaign WHERE id = %s", [frozen.pk]))


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite only: INSERT OR REPLACE is SQLite's statement")
def test_insert_or_replace_cannot_turn_a_frozen_key_back_into_a_draft(frozen):
    key = GoldKey.objects.get(version="LIFE-v1.0")
    columns = [f.column for f in GoldKey._meta.concrete_fields]
    values = [getattr(key, f.attname) for f in GoldKey._meta.concrete_fields]
    values[columns.index("status")] = "draft"
    values = [json.dumps(v) if isinstance(v, dict | list) else v for v in values]
    marks = ", ".join(["%s"] * len(columns))
    sealed(lambda: sql(f"INSERT OR REPLACE INTO adjudication_goldkey ({', '.join(columns)}) VALUES ({marks})", values))
    sealed(lambda: sql(
        "INSERT OR REPLACE INTO adjudication_keyentry (id, key_id, item_id, external_id, gold, evidence, quote, family, "
        "history_turns, provenance) SELECT id, key_id, item_id, external_id, 'aligned', evidence, quote, family, "
        "history_turns, provenance FROM adjudication_keyentry WHERE key_id = %s LIMIT 1", [key.pk]))
    key.refresh_from_db()
    assert key.status == GoldKey.Status.FROZEN


sqlite_only = pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite only: UPDATE OR REPLACE is SQLite's statement")


@pytest.fixture
def open_campaign(frozen, author, annotator_b):
    """A second campaign beside the frozen one: closed, not frozen (its rows may still change)."""
    return make_campaign(slug="open", n=3, annotators=[author, annotator_b])


@sqlite_only
@pytest.mark.parametrize("table, campaign_of", [
    ("annotation_answer", "assignment__enrollment__campaign"),
    ("annotation_answerrevision", "answer__assignment__enrollment__campaign"),
    ("adjudication_decision", "campaign"),
    ("adjudication_decisionrevision", "decision__campaign"),
    ("annotation_enrollment", "campaign"),
    ("annotation_assignment", "enrollment__campaign"),
])
def test_update_or_replace_cannot_put_an_open_row_in_a_sealed_rows_place(frozen, open_campaign, author, table, campaign_of):
    """UPDATE OR REPLACE deletes the row it lands on without a delete trigger: an open campaign's row given
    a sealed row's id would have taken its place (and the sealed answers with it)."""
    from django.apps import apps

    model = next(m for m in apps.get_models() if m._meta.db_table == table)
    if table.startswith("adjudication_"):
        decision_save(campaign=open_campaign, item=Item.objects.filter(item_set=open_campaign.item_set).first(),
                      action="keep", user=author)
    sealed_id = model.objects.filter(**{campaign_of: frozen}).values_list("id", flat=True).first()
    open_id = model.objects.filter(**{campaign_of: open_campaign}).values_list("id", flat=True).first()
    assert sealed_id is not None
    assert open_id is not None
    before = model.objects.filter(**{campaign_of: frozen}).count()
    sealed(lambda: sql(f"UPDATE OR REPLACE {table} SET id = %s WHERE id = %s", [sealed_id, open_id]))
    assert model.objects.filter(**{campaign_of: frozen}).count() == before


@sqlite_only
def test_update_or_replace_cannot_put_a_campaign_in_a_frozen_campaigns_place(frozen, open_campaign):
    sealed(lambda: sql("UPDATE OR REPLACE annotation_campaign SET id = %s WHERE id = %s", [frozen.pk, open_campaign.pk]))
    sealed(lambda: sql("UPDATE OR REPLACE annotation_campaign SET slug = %s WHERE id = %s", [frozen.slug, open_campaign.pk]))
    assert Campaign.objects.get(pk=frozen.pk).status == Campaign.Status.FROZEN


def test_a_frozen_campaigns_enrollments_stay_where_they_were_sealed(frozen, open_campaign):
    """The sealed answers name their campaign through their enrollment: moving it out would unseal them."""
    enrollment = Enrollment.objects.filter(campaign=frozen).first()
    sealed(lambda: Enrollment.objects.filter(pk=enrollment.pk).update(campaign=open_campaign))
    sealed(lambda: Enrollment.objects.filter(pk=enrollment.pk).update(pseudonym="Z"))
    sealed(lambda: Enrollment.objects.filter(pk=enrollment.pk).update(order_seed=12345))
    sealed(lambda: Enrollment.objects.filter(pk=enrollment.pk).delete())
    sealed(lambda: sql("UPDATE annotation_enrollment SET campaign_id = %s WHERE id = %s", [open_campaign.pk, enrollment.pk]))
    # Nor may an open campaign's enrollment (and its answers) be moved into the frozen one.
    other = Enrollment.objects.filter(campaign=open_campaign).first()
    sealed(lambda: Enrollment.objects.filter(pk=other.pk).update(campaign=frozen))
    late = get_user_model().objects.create_user("late-annotator")
    sealed(lambda: Enrollment.objects.create(campaign=frozen, annotator=late, pseudonym="C"))
    assert Enrollment.objects.filter(campaign=frozen).count() == 2
    # What an annotator's pages record (a milestone) is not what the trail seals.
    Enrollment.objects.filter(pk=enrollment.pk).update(guidelines_seen_at=enrollment.submitted_at)


def test_a_frozen_campaigns_assignments_cannot_change(frozen, open_campaign):
    assignment = Assignment.objects.filter(enrollment__campaign=frozen).order_by("pk").first()
    other_item = Item.objects.filter(item_set=frozen.item_set).exclude(pk=assignment.item_id).first()
    sealed(lambda: Assignment.objects.filter(pk=assignment.pk).update(item=other_item))
    sealed(lambda: Assignment.objects.filter(pk=assignment.pk).update(position=999))
    sealed(lambda: Assignment.objects.filter(pk=assignment.pk).delete())
    sealed(lambda: sql("UPDATE annotation_assignment SET item_id = %s WHERE id = %s", [other_item.pk, assignment.pk]))
    opened = Assignment.objects.filter(enrollment__campaign=open_campaign).first()
    sealed(lambda: Assignment.objects.filter(pk=opened.pk).update(enrollment=assignment.enrollment))
    sealed(lambda: Assignment.objects.create(enrollment=assignment.enrollment, item=opened.item, position=500))
    assert Assignment.objects.get(pk=assignment.pk).item_id == assignment.item_id


def test_a_bulk_insert_with_one_assignment_of_a_frozen_campaign_writes_nothing(frozen, open_campaign):
    """The bulk writer (COPY on PostgreSQL, one statement trigger over its rows) is refused as a whole."""
    from goldkey.lib.bulk import bulk_insert_columns

    sealed_enrollment = Enrollment.objects.filter(campaign=frozen).first()
    open_enrollment = Enrollment.objects.filter(campaign=open_campaign).first()
    # Items neither enrollment has been given (the other campaign's): only the sealed row is wrong.
    items = list(Item.objects.filter(item_set=frozen.item_set).values_list("pk", flat=True))
    open_item = Item.objects.filter(item_set=open_campaign.item_set).values_list("pk", flat=True).first()
    before = Assignment.objects.count()
    columns = {"enrollment_id": [open_enrollment.pk] * 2 + [sealed_enrollment.pk], "item_id": items[:2] + [open_item],
               "position": [700, 701, 702], "crisis": [False] * 3, "phase1_done": [False] * 3, "phase2_done": [False] * 3}
    sealed(lambda: bulk_insert_columns(Assignment, columns))
    assert Assignment.objects.count() == before


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="TRUNCATE exists on PostgreSQL only")
def test_a_frozen_campaigns_enrollments_and_assignments_cannot_be_truncated(frozen):
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE refuses to run beside the fixture's pending foreign-key checks
    sealed(lambda: sql("TRUNCATE annotation_assignment CASCADE"))
    sealed(lambda: sql("TRUNCATE annotation_enrollment CASCADE"))


def test_a_key_is_never_inserted_already_frozen(frozen, author):
    key = GoldKey.objects.get(version="LIFE-v1.0")
    sealed(lambda: GoldKey.objects.create(
        benchmark=key.benchmark, kind=key.kind, version="FORGED-v1.0", status="frozen", sha256="0" * 64,
        frozen_at=key.frozen_at,
    ))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("frozen_rows_teardown")
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="row locks need PostgreSQL (SQLite serialises writers anyway)")
def test_a_decision_racing_a_freeze_either_lands_before_it_or_is_refused(author, annotator_b):
    campaign = make_campaign(slug="race", n=6, annotators=[author, annotator_b], disagree=(1, 4))
    decision_save(campaign=campaign, item=Item.objects.get(external_id="s-0001"), action="keep", user=author)
    decision_save(campaign=campaign, item=Item.objects.get(external_id="s-0004"), action="keep", user=author)
    late = Item.objects.get(external_id="s-0002")
    outcome = {}
    started = threading.Event()

    def decide_late():
        started.wait()
        try:
            decision_save(campaign=campaign, item=late, action="drop", note="late", user=author)
            outcome["decision"] = "saved"
        except NotAllowed:
            outcome["decision"] = "refused"
        finally:
            connection.close()

    worker = threading.Thread(target=decide_late)
    worker.start()
    with transaction.atomic():
        Campaign.objects.select_for_update().get(pk=campaign.pk)  # the freeze's lock, held while it builds
        started.set()
        worker.join(timeout=1)
        assert worker.is_alive(), "the decision must wait for the campaign row"
        key = key_freeze(campaign=campaign, version="RACE-v1.0", user=author)
    worker.join(timeout=10)
    assert outcome["decision"] == "refused"
    assert not key.entries.filter(external_id="s-0002", gold="").exists()
    assert not Decision.objects.filter(campaign=campaign, item=late).exists()


def test_after_a_freeze_the_api_refuses_an_answer_and_a_decision(client, frozen, author, annotator_b):
    assignment = Assignment.objects.filter(enrollment__campaign=frozen, enrollment__annotator=annotator_b).first()
    before = Answer.objects.filter(assignment=assignment).values_list("values", flat=True).first()
    client.force_login(annotator_b)
    answer = client.post(f"/api/annotation/assignments/{assignment.pk}/answer/", {"values": {"q1": "cannot-tell"}},
                         content_type="application/json")
    assert answer.status_code == 403
    assert Answer.objects.filter(assignment=assignment).values_list("values", flat=True).first() == before
    client.force_login(author)
    decision = client.put(f"/api/adjudication/{frozen.slug}/decisions/{assignment.item_id}/",
                          {"action": "drop", "note": "late"}, content_type="application/json")
    assert decision.status_code == 403
    assert not Decision.objects.filter(campaign=frozen, item_id=assignment.item_id, action="drop").exists()


def test_after_a_freeze_an_answers_import_is_refused_and_writes_nothing(frozen, tmp_path):
    from annotation.transfer import answers_import

    path = tmp_path / "late.json"
    path.write_text(json.dumps({"annotator": "B", "answers": {"s-0000": {"q1": "cannot-tell"}}}))
    revisions = AnswerRevision.objects.count()
    with pytest.raises(ApplicationError):
        answers_import(campaign=frozen, path=path, annotator="B", submit=False)
    assert AnswerRevision.objects.count() == revisions
