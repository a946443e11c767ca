import random
from collections import Counter

import pytest
from django.core.management import call_command

from annotation import selectors
from annotation.models import Answer, AnswerRevision, Assignment, Campaign
from annotation.services import (
    answer_save,
    campaign_create,
    crisis_block_decline,
    enrollment_submit,
    phase1_finish,
)
from goldkey.errors import AnnotatorError, ApplicationError
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
        item__gold_label="aligned").first()
    with pytest.raises(AnnotatorError, match="Phase 2 opens") as excinfo:
        answer_save(assignment=assignment, values={"q3": "clean"})
    assert excinfo.value.status_code == 403


def test_finishing_phase1_locks_it_and_opens_phase2(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is not None and enrollment.phase1_done_count == 6
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").first()
    with pytest.raises(AnnotatorError, match="Phase 1 is locked"):
        answer_save(assignment=assignment, values={"q1": "contradicts"})
    with pytest.raises(AnnotatorError, match="Phase 1 is locked"):
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
    with pytest.raises(AnnotatorError, match="final"):
        answer_save(assignment=assignment, values={"p2note": "late"})


def test_submit_refuses_an_unfinished_annotation(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    with pytest.raises(AnnotatorError, match="Phase 2 is not complete"):
        enrollment_submit(enrollment=enrollment)


def test_q3_conflict_needs_the_turn_id_before_phase2_counts_as_done(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    assignment = enrollment.assignments.select_related("item", "enrollment__campaign").filter(
        item__gold_label="hard_negative").first()
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


def test_an_invalid_value_is_refused_naming_the_item_by_position_and_the_field_never_by_id(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a, position=2)
    with pytest.raises(AnnotatorError) as excinfo:
        answer_save(assignment=assignment, values={"q1": "yes"})
    message = excinfo.value.message
    assert message.startswith("item 3 of 6: field 'q1': 'yes' is not one of contradicts")
    assert assignment.item.external_id not in message and "conv-x" not in message


def test_campaign_create_command_dry_run_writes_nothing(twist_set, annotator_a, annotator_b, capsys):
    call_command("campaign_create", "dry", "--item-set", twist_set.name, "--annotators", "ann_a,ann_b", "--dry-run")
    assert "dry run" in capsys.readouterr().out
    assert not Campaign.objects.filter(slug="dry").exists()


# ----- the order cannot be guessed ------------------------------------------------------------------

def _old_order(campaign, index: int) -> list[str]:
    """The order as derived from a small integer seed (what an annotator could search for)."""
    enrollment = campaign.enrollments.get(pseudonym=chr(65 + index))
    ids = sorted(enrollment.assignments.values_list("item__external_id", flat=True))
    random.Random(random.Random(f"{campaign.seed}:{index}").randrange(2**31)).shuffle(ids)
    return ids


def test_without_an_explicit_seed_each_order_comes_from_a_secret_not_from_a_small_integer(twist_set, annotator_a,
                                                                                           annotator_b):
    campaigns = [campaign_create(slug=f"c{i}", item_set=twist_set, annotators=[annotator_a, annotator_b])
                 for i in range(3)]
    for campaign in campaigns:
        assert len(campaign.order_secret) == 64 and int(campaign.order_secret, 16)
        assert set(campaign.enrollments.values_list("order_seed", flat=True)) == {None}
    assert len({c.order_secret for c in campaigns}) == 3
    # Knowing the campaign seed no longer gives the order: with 6 items the old derivation matches by
    # chance in 1 of 720 orders, for both annotators of all three campaigns in about 1 of 10^17.
    orders = [_orders(c) for c in campaigns]
    assert any(orders[i][p] != _old_order(c, j) for i, c in enumerate(campaigns) for j, p in enumerate("AB"))


def test_an_explicit_seed_gives_the_orders_of_the_released_trails_unchanged(twist_set, annotator_a, annotator_b):
    campaign = campaign_create(slug="trail", item_set=twist_set, annotators=[annotator_a, annotator_b], seed=7)
    assert campaign.order_secret is None
    assert _orders(campaign) == {"A": _old_order(campaign, 0), "B": _old_order(campaign, 1)}


def test_the_order_secret_is_disclosed_only_once_the_campaign_is_closed(twist_set, annotator_a, annotator_b, author):
    from annotation.services import campaign_close

    campaign = campaign_create(slug="sec", item_set=twist_set, annotators=[annotator_a, annotator_b])
    for user in (annotator_a, annotator_b):
        enrollment = enrollment_of(campaign, user)
        answer_all_phase1(enrollment)
        answer_all_phase2(enrollment)
        enrollment_submit(enrollment=enrollment)
    assert selectors.order_disclosure(campaign) is None  # every enrollment in, but not yet closed
    campaign_close(campaign=campaign, user=author)
    assert selectors.order_disclosure(campaign) == {"seed": campaign.seed, "order_secret": campaign.order_secret}


# ----- Phase 1 ends only when the annotator finishes it ----------------------------------------------

def test_answering_the_last_item_does_not_lock_phase1(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment, finish=False)
    enrollment.refresh_from_db()
    assert enrollment.phase1_completed_at is None and enrollment.phase1_done_count == 6
    first = _assignment(twist_campaign, annotator_a)
    assert answer_save(assignment=first, values={"q1": "cannot-tell", "q1note": "second thoughts"}).changed
    with pytest.raises(AnnotatorError, match="Phase 2 opens"):
        answer_save(assignment=first, values={"p2note": "too early"})


def test_finishing_phase1_is_refused_while_an_item_is_unanswered_naming_its_position(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign").exclude(position=3):
        answer_save(assignment=assignment, values={"q1": "consistent"})
    with pytest.raises(AnnotatorError, match="item 4 has no answer") as excinfo:
        phase1_finish(enrollment=enrollment)
    assert "conv-x" not in excinfo.value.message
    assert enrollment_of(twist_campaign, annotator_a).phase1_completed_at is None


def test_finishing_phase1_twice_keeps_the_first_time(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answer_all_phase1(enrollment)
    first = enrollment_of(twist_campaign, annotator_a).phase1_completed_at
    assert phase1_finish(enrollment=enrollment).phase1_completed_at == first


# ----- a stale tab never overwrites what another saved ------------------------------------------------

def test_a_stale_tab_changing_a_field_changed_elsewhere_is_refused_with_the_current_answer(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1note": "from tab one"}, base_revision=0, writer="tab1", writer_seq=1)
    with pytest.raises(AnnotatorError) as excinfo:
        answer_save(assignment=assignment, values={"q1note": "from tab two"}, base_revision=0, writer="tab2",
                    writer_seq=1)
    error = excinfo.value
    assert error.status_code == 409 and error.message.startswith("item 1 of 6: this item was changed in another tab")
    assert error.extra["current"] == {"values": {"q1note": "from tab one"}, "revision": 1}
    assert Answer.objects.get(assignment=assignment).values == {"q1note": "from tab one"}


def test_a_stale_tab_changing_another_field_keeps_both(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1note": "from tab one"}, base_revision=0, writer="tab1", writer_seq=1)
    result = answer_save(assignment=assignment, values={"q1": "consistent"}, base_revision=0, writer="tab2",
                         writer_seq=1)
    assert result.answer.values == {"q1note": "from tab one", "q1": "consistent"}


def test_a_pages_own_earlier_revision_is_not_a_conflict(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1note": "ab"}, base_revision=0, writer="tab1", writer_seq=1)
    # sent as the page unloaded, before the answer to the first came back: still based on revision 0
    result = answer_save(assignment=assignment, values={"q1note": "abcd"}, base_revision=0, writer="tab1", writer_seq=2)
    assert result.changed and result.answer.values == {"q1note": "abcd"}


def test_a_pages_older_request_arriving_after_its_newer_one_is_not_applied(twist_campaign, annotator_a):
    assignment = _assignment(twist_campaign, annotator_a)
    answer_save(assignment=assignment, values={"q1note": "abcd"}, base_revision=0, writer="tab1", writer_seq=2)
    late = answer_save(assignment=assignment, values={"q1note": "ab"}, base_revision=0, writer="tab1", writer_seq=1)
    assert not late.changed and Answer.objects.get(assignment=assignment).values == {"q1note": "abcd"}
    assert AnswerRevision.objects.count() == 1
