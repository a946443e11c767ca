from collections import Counter

import pytest
from django.core.management import call_command

from annotation.models import Answer, AnswerRevision, Assignment, Campaign
from annotation.services import answer_save, campaign_create, crisis_block_decline, enrollment_submit
from goldkey.errors import ApplicationError, NotAllowed
from tests.annotation.conftest import answer_all_phase1, answer_all_phase2, enrollment_of, make_twist_items


def _orders(campaign):
    return {
        e.pseudonym: list(e.assignments.order_by("position").values_list("item__external_id", flat=True))
        for e in campaign.enrollments.all()
    }


@pytest.fixture
def four_annotators(django_user_model):
    from django.contrib.auth.models import Group

    group = Group.objects.get_or_create(name="annotator")[0]
    users = [django_user_model.objects.create_user(f"u{i}", password="x") for i in range(4)]
    for user in users:
        user.groups.add(group)
    return users


def test_campaign_order_is_reproducible_with_the_same_seed(twist_set, four_annotators):
    first = campaign_create(slug="one", item_set=twist_set, annotators=four_annotators, seed=42)
    again = campaign_create(slug="two", item_set=twist_set, annotators=four_annotators, seed=42)
    other = campaign_create(slug="three", item_set=twist_set, annotators=four_annotators, seed=43)
    assert _orders(first) == _orders(again)
    assert _orders(first) != _orders(other)


def test_every_item_goes_to_exactly_k_distinct_annotators_balanced(db, four_annotators):
    item_set = make_twist_items(30)
    campaign = campaign_create(slug="k", item_set=item_set, annotators=four_annotators, per_item=3, seed=5)
    per_item = Counter()
    pairs = set(Assignment.objects.filter(enrollment__campaign=campaign).values_list("item_id", "enrollment_id"))
    for item_id, _ in pairs:
        per_item[item_id] += 1
    assert len(pairs) == 90 and set(per_item.values()) == {3} and len(per_item) == 30
    loads = [e.assigned_count for e in campaign.enrollments.all()]
    assert max(loads) - min(loads) <= 1 and sum(loads) == 90


def test_each_annotator_gets_a_different_order(twist_campaign):
    orders = _orders(twist_campaign)
    assert sorted(orders["A"]) == sorted(orders["B"]) and orders["A"] != orders["B"]


def test_campaign_create_command_makes_the_same_campaign(twist_set, annotator_a, annotator_b, capsys):
    call_command("campaign_create", "cmd", "--item-set", twist_set.name, "--annotators", "ann_a,ann_b", "--seed", "7")
    campaign_create(slug="svc", item_set=twist_set, annotators=[annotator_a, annotator_b], seed=7)
    assert _orders(Campaign.objects.get(slug="cmd")) == _orders(Campaign.objects.get(slug="svc"))
    assert "Created campaign 'cmd'" in capsys.readouterr().out


def test_campaign_create_refuses_more_annotators_per_item_than_annotators(twist_set, annotator_a):
    with pytest.raises(ApplicationError):
        campaign_create(slug="x", item_set=twist_set, annotators=[annotator_a], per_item=2)


def test_phase2_answer_is_refused_before_phase1_is_complete(twist_campaign, annotator_a):
    assignment = enrollment_of(twist_campaign, annotator_a).assignments.select_related("item").filter(
        item__gold_type="aligned").first()
    with pytest.raises(NotAllowed, match="Phase 2 opens"):
        answer_save(assignment=assignment, values={"q3": "clean"})


def test_completing_phase1_locks_it_and_opens_phase2(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is not None and enrollment.phase1_done_count == 6
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").first()
    with pytest.raises(NotAllowed, match="Phase 1 is locked"):
        answer_save(assignment=assignment, values={"q1": "contradicts"})
    with pytest.raises(NotAllowed, match="Phase 1 is locked"):
        answer_save(assignment=assignment, values={"q1note": "second thoughts"})
    # the same value again is not a change: retries after the lock stay harmless
    assert answer_save(assignment=assignment, values={"q1": "consistent"}).changed is False


def test_the_other_annotators_progress_does_not_complete_my_phase1(twist_campaign, annotator_a, annotator_b):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_b))
    assert enrollment_of(twist_campaign, annotator_a).phase1_completed_at is None


def test_submission_is_final(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    answer_all_phase2(enrollment)
    enrollment = enrollment_submit(enrollment=enrollment)
    assert enrollment.submitted_at is not None
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").first()
    with pytest.raises(NotAllowed, match="final"):
        answer_save(assignment=assignment, values={"p2note": "late"})


def test_submit_refuses_an_unfinished_annotation(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    with pytest.raises(ApplicationError, match="Phase 2 is not complete"):
        enrollment_submit(enrollment=enrollment)


def test_q3_conflict_needs_the_turn_id_before_phase2_counts_as_done(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").filter(
        item__gold_type="hard_negative").first()
    assert answer_save(assignment=assignment, values={"q3": "conflict"}).answer.phase2_done is False
    assert answer_save(assignment=assignment, values={"q3turn": "D1:1"}).answer.phase2_done is True


def test_declining_the_crisis_block_leaves_the_rest_untouched(db, annotator_a, annotator_b):
    item_set = make_twist_items(6, name="crisis", conversation_id="conv-c", crisis=2)
    campaign = campaign_create(slug="cr", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1, crisis_block=True)
    enrollment = enrollment_of(campaign, annotator_a)
    positions = list(enrollment.assignments.order_by("position").values_list("crisis", flat=True))
    assert positions == [False] * 4 + [True] * 2  # a separate block, after the rest
    first = enrollment.assignments.select_related("item", "enrollment__campaign").get(position=0)
    answer_save(assignment=first, values={"q1": "consistent", "q1note": "kept"})
    enrollment = crisis_block_decline(enrollment=enrollment)
    assert enrollment.crisis_declined_at is not None
    assert Answer.objects.get(assignment=first).values == {"q1": "consistent", "q1note": "kept"}


# ----- nothing lost -------------------------------------------------------------------------------

def _assignment(campaign, user, position=0):
    return enrollment_of(campaign, user).assignments.select_related("item", "enrollment__campaign").get(position=position)


def test_two_tabs_saving_different_fields_of_one_item_keep_both(twist_campaign, annotator_a):
    tab1 = _assignment(twist_campaign, annotator_a)
    tab2 = _assignment(twist_campaign, annotator_a)  # a separately loaded copy, as another tab has
    answer_save(assignment=tab1, values={"q1": "contradicts"})
    answer_save(assignment=tab2, values={"q1note": "from tab two"})
    answer_save(assignment=tab1, values={"q1": "cannot-tell"})
    assert Answer.objects.get(assignment=tab1).values == {"q1": "cannot-tell", "q1note": "from tab two"}
    assert list(AnswerRevision.objects.order_by("revision").values_list("values", flat=True)) == [
        {"q1": "contradicts"},
        {"q1": "contradicts", "q1note": "from tab two"},
        {"q1": "cannot-tell", "q1note": "from tab two"},
    ]


def test_a_double_submit_makes_one_revision(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    first = answer_save(assignment=assignment, values={"q1": "consistent"})
    second = answer_save(assignment=assignment, values={"q1": "consistent"})
    assert first.changed and not second.changed
    assert AnswerRevision.objects.count() == 1


def test_changing_an_answer_keeps_the_earlier_one_in_history(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1": "consistent"}, source="web")
    answer_save(assignment=assignment, values={"q1": "contradicts"}, source="api")
    history = list(AnswerRevision.objects.order_by("revision").values_list("values", "source"))
    assert history == [({"q1": "consistent"}, "web"), ({"q1": "contradicts"}, "api")]


def test_time_on_item_accumulates_without_a_revision(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1": "consistent"}, time_on_item_ms=1200)
    answer_save(assignment=assignment, values={}, time_on_item_ms=800)
    answer = Answer.objects.get(assignment=assignment)
    assert answer.time_on_item_ms == 2000 and answer.revision == 1


def test_an_invalid_value_is_refused_naming_item_and_field(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    with pytest.raises(ApplicationError) as excinfo:
        answer_save(assignment=assignment, values={"q1": "yes"})
    assert assignment.item.external_id in excinfo.value.message and "q1" in excinfo.value.message
