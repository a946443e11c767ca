import json

import pytest
from django.core.management import call_command

from annotation.models import AnswerRevision, Enrollment
from annotation.services import answer_save, campaign_create
from annotation.transfer import answers_export, answers_export_data, answers_import, answers_load
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import ImportFailed
from items.models import ItemSet
from items.parsing import ParsedLapseItem
from items.services import lapse_items_create
from tests.annotation.conftest import answer_all_phase1, enrollment_of

pytestmark = pytest.mark.realdata


def _without_empty(answers: dict) -> dict:
    return {item: {k: v for k, v in values.items() if v != ""} for item, values in answers.items()}


def test_released_twist_answers_round_trip_through_import_and_export(twist_corpus, annotator_a, annotator_b, shared_data, tmp_path):
    campaign = campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    for name in ("A", "B"):
        source = shared_data("twist-v1", "annotation", f"twist_v1_answers_{name}.json")
        result = answers_import(campaign=campaign, path=source, annotator=name)
        assert result["answers"] == 200 and result["submitted"]
        out = tmp_path / f"{name}.json"
        answers_export(campaign=campaign, annotator=name, out=out)
        original, exported = json.loads(source.read_text()), json.loads(out.read_text())
        assert exported["annotator"] == original["annotator"]
        assert _without_empty(exported["answers"]) == _without_empty(original["answers"])
        assert exported["exported"].endswith("Z")


def test_released_lapse_annotations_round_trip_through_import_and_export(db, annotator_a, annotator_b, shared_data, tmp_path):
    sources = [shared_data("lapse-gold", f"gold_annotations_annotator{i}.jsonl") for i in (1, 2)]
    gids = sorted({json.loads(line)["gid"] for line in sources[0].read_text().splitlines()})
    lapse_items_create(
        item_set_name="lapse gold",
        items=[ParsedLapseItem(line=i, external_id=g, request="", response="", key_fact="", hidden={}) for i, g in enumerate(gids)],
        source="test",
        text_released=False,
    )
    campaign = campaign_create(
        slug="lapse-gold",
        item_set=ItemSet.objects.get(name="lapse gold"),
        annotators=[annotator_a, annotator_b],
        seed=1,
        pseudonyms=["sugam", "annotator2"],
    )
    for source, name in zip(sources, ("sugam", "annotator2"), strict=True):
        answers_import(campaign=campaign, path=source, annotator=name)
        out = tmp_path / f"{name}.jsonl"
        call_command("answers_export", "lapse-gold", "--annotator", name, "--out", str(out))
        original = {r["gid"]: r for r in map(json.loads, source.read_text().splitlines())}
        exported = {r["gid"]: r for r in map(json.loads, out.read_text().splitlines())}
        assert exported == original


def test_import_rejects_an_unknown_value_naming_item_and_field_and_writes_nothing(twist_corpus, annotator_a, annotator_b, shared_data, tmp_path):
    campaign = campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    data = json.loads(shared_data("twist-v1", "annotation", "twist_v1_answers_A.json").read_text())
    data["answers"]["conv-26:v1b1"]["q1"] = "maybe"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ImportFailed) as excinfo:
        answers_import(campaign=campaign, path=path, annotator="A")
    assert "conv-26:v1b1" in str(excinfo.value.errors) and "q1" in str(excinfo.value.errors)
    assert not AnswerRevision.objects.exists()


def test_importing_a_finished_file_with_missing_verdicts_hands_it_in_as_it_is(twist_corpus, annotator_a, annotator_b, shared_data, tmp_path):
    campaign = campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    data = json.loads(shared_data("twist-v1", "annotation", "twist_v1_answers_A.json").read_text())
    missing = "conv-26:v1b1"
    del data["answers"][missing]["q1"]
    path = tmp_path / "missing.json"
    path.write_text(json.dumps(data))
    result = answers_import(campaign=campaign, path=path, annotator="A", submit=True)
    # An exported file is finished work: the missing verdict stays missing (the queue's missing_answers).
    assert result["phase1_complete"] and result["submitted"]
    assignment = enrollment_of(campaign, annotator_a).assignments.select_related("item", "enrollment__campaign").get(
        item__external_id=missing)
    with pytest.raises(ApplicationError, match="submitted"):
        answer_save(assignment=assignment, values={"q1": "contradicts"})


def test_importing_without_submit_leaves_the_annotation_open(twist_corpus, annotator_a, annotator_b, shared_data):
    campaign = campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    result = answers_import(
        campaign=campaign, path=shared_data("twist-v1", "annotation", "twist_v1_answers_A.json"), annotator="A", submit=False
    )
    assert not result["submitted"]
    assert enrollment_of(campaign, annotator_a).submitted_at is None


def test_answers_load_takes_answers_in_any_order_of_phases(twist_campaign, annotator_a):
    enrollment = enrollment_of(twist_campaign, annotator_a)
    answers = {}
    for assignment in enrollment.assignments.select_related("item"):
        phase2 = {"q2": "yes", "q2quote": "no"} if assignment.item.gold_label == "contradicting" else {"q3": "clean"}
        answers[assignment.item.external_id] = {**phase2, "q1": "consistent", "p2note": "n"}
    result = answers_load(campaign=twist_campaign, annotator="A", answers=answers)
    assert result["submitted"] and result["answers"] == 6
    assert answers_export_data(enrollment=enrollment)["answers"] == answers


def test_reimporting_the_same_file_changes_nothing(twist_corpus, annotator_a, annotator_b, shared_data):
    campaign = campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    source = shared_data("twist-v1", "annotation", "twist_v1_answers_A.json")
    answers_import(campaign=campaign, path=source, annotator="A")
    revisions = AnswerRevision.objects.count()
    again = answers_import(campaign=campaign, path=source, annotator="A")
    assert again["changed"] == 0 and AnswerRevision.objects.count() == revisions


def test_export_holds_only_this_annotators_answers(twist_campaign, annotator_a, annotator_b):
    answer_all_phase1(enrollment_of(twist_campaign, annotator_a), q1="contradicts")
    answer_all_phase1(enrollment_of(twist_campaign, annotator_b), q1="consistent")
    data = answers_export_data(enrollment=Enrollment.objects.get(campaign=twist_campaign, annotator=annotator_a))
    assert {v["q1"] for v in data["answers"].values()} == {"contradicts"}


def test_answers_import_dry_run_validates_everything_and_writes_nothing(twist_corpus, annotator_a, annotator_b, shared_data, capsys):
    campaign_create(slug="v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=1)
    source = shared_data("twist-v1", "annotation", "twist_v1_answers_B.json")
    call_command("answers_import", "v1", str(source), "--annotator", "B", "--submit", "--dry-run", "--json")
    result = json.loads(capsys.readouterr().out)
    assert result["dry_run"] and result["answers"] == 200 and result["submitted"]
    assert not AnswerRevision.objects.exists()
    assert Enrollment.objects.get(campaign__slug="v1", pseudonym="B").submitted_at is None


def test_lapse_record_fields_goldkey_does_not_interpret_come_back_unchanged(lapse_campaign, tmp_path):
    gids = list(lapse_campaign.item_set.items.order_by("external_id").values_list("external_id", flat=True))
    records = [{"gid": g, "label": "HEDGE", "notes": "", "annotator": "A", "ts": "not a time", "ui": 3} for g in gids]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    answers_import(campaign=lapse_campaign, path=path, annotator="A")
    exported = answers_export_data(enrollment=Enrollment.objects.get(campaign=lapse_campaign, pseudonym="A"))
    assert sorted(exported, key=lambda r: r["gid"]) == records


def test_an_answer_file_error_names_the_line_of_the_item(twist_campaign, annotator_a, tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"annotator": "A", "exported": "t", "answers": {"nope:1": {"q1": "consistent"}}}, indent=1))
    with pytest.raises(ImportFailed) as excinfo:
        answers_import(campaign=twist_campaign, path=path, annotator="A")
    assert excinfo.value.errors == ["answers.json:5: item 'nope:1' is not assigned to A in campaign 'tw'"]


@pytest.mark.django_db
def test_an_import_records_that_the_order_its_annotator_saw_is_unknown_or_the_seed_given(tmp_path, annotator_a, annotator_b):
    from tests.annotation.conftest import make_twist_items

    item_set = make_twist_items(2, name="order set", conversation_id="conv-order")
    campaign = campaign_create(slug="order", item_set=item_set, annotators=[annotator_a, annotator_b], seed=5)
    assert set(Enrollment.objects.filter(campaign=campaign).values_list("order_source", flat=True)) == {"drawn"}
    first = item_set.items.order_by("external_id").first().external_id
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"annotator": "A", "exported": "t", "answers": {first: {"q1": "consistent"}}}))
    answers_import(campaign=campaign, path=path, annotator="A", submit=False)
    answers_import(campaign=campaign, path=path, annotator="B", submit=False, order_seed=20260919)
    orders = dict(Enrollment.objects.filter(campaign=campaign).values_list("pseudonym", "order_source"))
    assert orders == {"A": "imported", "B": "given"}
    assert Enrollment.objects.get(campaign=campaign, pseudonym="B").imported_order_seed == 20260919
