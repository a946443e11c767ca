"""Decisions (keep/drop/relabel, notes, history, freezing), the decisions file and judge labels."""

import json

import pytest

from adjudication import services
from adjudication.models import Decision, DecisionRevision
from adjudication.selectors import campaign_queue
from council.models import CouncilMember, CouncilVote
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import ImportFailed
from items.models import Item
from lapse import trail
from tests.conftest import close_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(small_campaign):
    return Item.objects.get(external_id="conv-1:v1b3")


def test_a_decision_records_who_decided_and_starts_its_history(small_campaign, item, author):
    result = services.decision_save(campaign=small_campaign, item=item, action="keep", note="fine", user=author)
    assert result.changed and result.decision.decided_by == author and result.decision.revision == 1
    assert list(DecisionRevision.objects.values_list("revision", "action", "note")) == [(1, "keep", "fine")]


@pytest.mark.parametrize("action", ["drop", "relabel"])
def test_drop_and_relabel_need_a_note(small_campaign, item, author, action):
    with pytest.raises(ApplicationError, match="needs a note"):
        services.decision_save(campaign=small_campaign, item=item, action=action, new_gold="aligned" if action == "relabel" else "", note="  ", user=author)
    assert not Decision.objects.exists()


def test_relabel_needs_a_valid_gold_type(small_campaign, item, author):
    with pytest.raises(ApplicationError, match="a relabel needs a new label"):
        services.decision_save(campaign=small_campaign, item=item, action="relabel", new_gold="odd", note="x", user=author)


def test_an_unknown_action_is_refused(small_campaign, item, author):
    with pytest.raises(ApplicationError, match="'maybe' is not a decision"):
        services.decision_save(campaign=small_campaign, item=item, action="maybe", user=author)


def test_changing_a_decision_keeps_every_revision(small_campaign, item, author, admin_user):
    services.decision_save(campaign=small_campaign, item=item, action="keep", user=author)
    services.decision_save(campaign=small_campaign, item=item, action="drop", note="unclear evidence", user=admin_user)
    decision = Decision.objects.get()
    assert (decision.action, decision.revision, decision.decided_by) == ("drop", 2, admin_user)
    history = list(decision.history.values_list("revision", "action", "decided_by__username"))
    assert history == [(1, "keep", "author"), (2, "drop", "root")]


def test_saving_the_same_decision_again_changes_nothing(small_campaign, item, author):
    services.decision_save(campaign=small_campaign, item=item, action="keep", user=author)
    again = services.decision_save(campaign=small_campaign, item=item, action="keep", user=author)
    assert not again.changed and DecisionRevision.objects.count() == 1


def test_decisions_are_refused_once_the_campaign_is_frozen(small_campaign, item, author):
    from django.utils import timezone

    from annotation.models import Campaign

    Campaign.objects.filter(pk=small_campaign.pk).update(status=Campaign.Status.FROZEN, frozen_at=timezone.now())
    with pytest.raises(ApplicationError, match="frozen"):
        services.decision_save(campaign=small_campaign, item=item, action="keep", user=author)


def test_an_item_of_another_item_set_is_refused(small_campaign, annotator_a, annotator_b, author):
    from tests.adjudication.conftest import AGREE, make_twist_campaign

    make_twist_campaign([annotator_a, annotator_b], {"conv-9:v1b1": AGREE}, slug="other")
    stranger = Item.objects.get(external_id="conv-9:v1b1")
    with pytest.raises(ApplicationError, match="not in campaign"):
        services.decision_save(campaign=small_campaign, item=stranger, action="keep", user=author)


def write(tmp_path, payload) -> str:
    path = tmp_path / "decisions.json"
    path.write_text(json.dumps(payload))
    return path


def test_decisions_import_records_queued_and_unqueued_items_without_notes(small_campaign, tmp_path, author):
    path = write(tmp_path, {"exported": "2026-01-01T00:00:00.000Z", "decisions": {
        "conv-1:v1c4": {"action": "drop"}, "conv-1:v1b3": {"action": "keep", "note": "ok "}, "conv-1:v1b1": {"action": "keep"}}})
    result = services.decisions_import(campaign=small_campaign, path=path, user=author)
    assert result["decisions"] == 3 and result["changed"] == 3
    assert Decision.objects.get(item__external_id="conv-1:v1b3").note == "ok "
    assert Decision.objects.filter(item__external_id="conv-1:v1b1").exists()  # not queued, still recorded
    assert [e.item.external_id for e in campaign_queue(small_campaign) if e.decision is None] == ["conv-1:v1b5"]


def test_decisions_import_refuses_the_whole_file_naming_each_bad_entry(small_campaign, tmp_path, author):
    path = write(tmp_path, {"exported": "x", "decisions": {"conv-1:v1c4": {"action": "drop"}, "conv-1:nope": {"action": "keep"}, "conv-1:v1b3": {"action": "toss"}}})
    with pytest.raises(ImportFailed) as failure:
        services.decisions_import(campaign=small_campaign, path=path, user=author)
    assert any("conv-1:nope" in e for e in failure.value.errors)
    assert any("conv-1:v1b3" in e and "toss" in e for e in failure.value.errors)
    assert not Decision.objects.exists()


def test_decisions_export_round_trips_an_import(small_campaign, tmp_path):
    payload = {"exported": "2026-01-01T00:00:00.000Z", "decisions": {
        "conv-1:v1c4": {"action": "drop", "note": "n"}, "conv-1:v1b3": {"action": "relabel", "new_gold": "aligned", "note": "why"}}}
    services.decisions_import(campaign=small_campaign, path=write(tmp_path, payload), adjudicator_unknown=True)
    assert services.decisions_export(campaign=small_campaign, exported=payload["exported"]) == payload


def test_decisions_import_records_the_adjudicator_it_is_given_on_every_decision(small_campaign, tmp_path, author):
    services.decisions_import(campaign=small_campaign, path=write(tmp_path, {"exported": "t", "decisions": {
        "conv-1:v1c4": {"action": "drop", "note": "n"}, "conv-1:v1b3": {"action": "keep"}}}), user=author)
    assert set(Decision.objects.values_list("decided_by", flat=True)) == {author.pk}


def test_decisions_import_refuses_to_guess_who_decided(small_campaign, tmp_path, annotator_a):
    path = write(tmp_path, {"exported": "t", "decisions": {"conv-1:v1c4": {"action": "drop", "note": "n"}}})
    with pytest.raises(ApplicationError, match=r"--by USERNAME.*--adjudicator-unknown"):
        services.decisions_import(campaign=small_campaign, path=path)
    with pytest.raises(ApplicationError, match="not an author"):
        services.decisions_import(campaign=small_campaign, path=path, user=annotator_a)
    assert not Decision.objects.exists()


@pytest.fixture
def lapse_campaign(annotator_a, annotator_b):
    from annotation.services import campaign_create
    from items.parsing import ParsedLapseItem
    from items.services import lapse_items_create

    lapse_items_create(item_set_name="lapse tiny", source="test", text_released=False, items=[
        ParsedLapseItem(line=n, external_id=f"g00{n}", request="", response="", key_fact="", hidden={}) for n in (1, 2)])
    from items.models import ItemSet

    return campaign_create(slug="lapse-tiny", item_set=ItemSet.objects.get(name="lapse tiny"), annotators=[annotator_a, annotator_b], seed=1)


def test_judge_import_stores_the_judge_as_a_council_member_and_is_idempotent(lapse_campaign, tmp_path):
    path = tmp_path / "judged.jsonl"
    path.write_text('{"gid": "g001", "judge": "PROCEED", "judge_model": "local/j"}\n{"gid": "g002", "judge": "HEDGE", "judge_model": "local/j"}\n')
    assert trail.judge_import(campaign=lapse_campaign, path=path)["changed"] == 2
    assert trail.judge_import(campaign=lapse_campaign, path=path)["changed"] == 0
    assert CouncilMember.objects.get().name == "local/j"
    assert sorted(CouncilVote.objects.values_list("item__external_id", "values", "prompt_version")) == [
        ("g001", {"label": "PROCEED"}, "imported"), ("g002", {"label": "HEDGE"}, "imported")]


def test_judge_import_refuses_unknown_labels_and_items(lapse_campaign, tmp_path):
    path = tmp_path / "judged.jsonl"
    path.write_text('{"gid": "g001", "judge": "MAYBE", "judge_model": "m"}\n{"gid": "g404", "judge": "PROCEED", "judge_model": "m"}\n')
    with pytest.raises(ImportFailed) as failure:
        trail.judge_import(campaign=lapse_campaign, path=path)
    assert [e.split(":")[1] for e in failure.value.errors] == ["1", "2"]
    assert not CouncilVote.objects.exists()


def test_judge_import_refuses_a_twist_campaign(small_campaign, tmp_path):
    with pytest.raises(ApplicationError, match="Lapse campaign"):
        trail.judge_import(campaign=small_campaign, path=tmp_path / "x.jsonl")


def test_lapse_relabel_takes_a_behaviour_label(lapse_campaign, author):
    close_campaign(lapse_campaign)
    item = Item.objects.get(external_id="g001")
    services.decision_save(campaign=lapse_campaign, item=item, action="relabel", new_gold="HEDGE", note="adjudicated", user=author)
    with pytest.raises(ApplicationError):
        services.decision_save(campaign=lapse_campaign, item=item, action="relabel", new_gold="aligned", note="x", user=author)


def test_lapse_keep_is_refused_when_the_labels_differ(lapse_campaign, author):
    from annotation.models import Assignment
    from annotation.services import answer_save

    item = Item.objects.get(external_id="g001")
    for assignment, label in zip(
        Assignment.objects.filter(item=item).select_related("enrollment__campaign", "item").order_by("enrollment__pseudonym"),
        ("PROCEED", "HEDGE"), strict=True,
    ):
        answer_save(assignment=assignment, values={"label": label}, source="import")
    with pytest.raises(ApplicationError, match="set the adjudicated label"):
        services.decision_save(campaign=lapse_campaign, item=item, action="keep", user=author)


def test_a_note_longer_than_the_limit_is_refused_saying_how_long_it_is(small_campaign, item, author):
    note = "x" * (services.NOTE_MAX_CHARS + 1)
    with pytest.raises(ApplicationError, match="the note is 10,001 characters long: keep it under 10,000"):
        services.decision_save(campaign=small_campaign, item=item, action="drop", note=note, user=author)
    assert not Decision.objects.exists()
    kept = services.decision_save(campaign=small_campaign, item=item, action="drop", note=note[:-1], user=author)
    assert len(kept.decision.note) == services.NOTE_MAX_CHARS
