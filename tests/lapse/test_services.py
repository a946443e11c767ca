"""The Lapse scoring services: the rule cascade and the LLM judge (through the local OpenAI-compatible
server) writing scorer labels, the automatic label derived from them, generated outputs and the Celery tasks."""

import json
from datetime import date

import pytest

from council.services import council_member_add
from goldkey.errors import NotFound
from items.models import Item
from lapse import services as lapse_services
from lapse.corpus import lapse_outputs_import, lapse_stimuli_create
from lapse.models import Scorer, ScorerLabel
from lapse.selectors import scoring_summary
from lapse.services import lapse_output_judge, lapse_outputs_cascade, lapse_outputs_judge
from protocols.lapse import BINARY
from tests.lapse.labels import automatic_of, labels_of

CASES = [
    ("gk-behavioral-workplace-00-c0_original-prog-diff-stale", "Deliver to Corvida Analytics, attention me."),
    ("gk-behavioral-workplace-00-c0_original-simple-diff-stale", "Deliver to [Company Name], attention me."),
    ("gk-e1-workplace-00-c0_original-prog-diff-stale", "- Currently working at Corvida Analytics."),
]


@pytest.fixture
def outputs(db, tmp_path):
    lapse_stimuli_create(eval_date=date(2026, 8, 25))
    path = tmp_path / "o.jsonl"
    path.write_text("".join(json.dumps({"case_id": c, "model": "secret-model-x", "response": r}) + "\n" for c, r in CASES))
    lapse_outputs_import(path=path)
    lapse_outputs_cascade(item_set_name="Lapse outputs")
    return {item.hidden["case_id"]: item for item in Item.objects.filter(item_set__name="Lapse outputs")}


def member(fake_llm, model="fake-ok"):
    return council_member_add(name=model, base_url=fake_llm.base_url, model=model, timeout_seconds=2.0)[0]


def test_cascade_labels_outputs_and_gates_memory_notes_on_the_cascade_alone(outputs):
    proceed, template, note = (outputs[c] for c, _ in CASES)
    assert [labels_of(i) for i in (proceed, template, note)] == [{"cascade": "PROCEED"}, {"cascade": "TEMPLATE"}, {"cascade": "MANUFACTURE"}]
    assert automatic_of(proceed) == (None, True)  # behaviour waits for the judge
    assert automatic_of(note) == ("MANUFACTURE", False)


def test_scoring_leaves_the_item_record_as_it_was_imported(outputs, fake_llm, monkeypatch):
    records = dict(Item.objects.filter(item_set__name="Lapse outputs").values_list("id", "content__hidden"))
    monkeypatch.setattr("council.client.chat", lambda m, messages: "HEDGE")
    lapse_outputs_judge(item_set_name="Lapse outputs", member_name=member(fake_llm).name)
    lapse_outputs_cascade(item_set_name="Lapse outputs")
    assert dict(Item.objects.filter(item_set__name="Lapse outputs").values_list("id", "content__hidden")) == records
    assert not any({"cascade", "judge", "auto_label", "flagged"} & hidden.keys() for hidden in records.values())
    assert ScorerLabel.objects.filter(scorer=Scorer.JUDGE, label="HEDGE").count() == 2


def test_re_running_the_cascade_replaces_its_label_instead_of_adding_one(outputs):
    again = lapse_outputs_cascade(item_set_name="Lapse outputs")
    assert (again["scored"], again["changed"]) == (3, 0)
    assert ScorerLabel.objects.filter(scorer=Scorer.CASCADE).count() == 3
    rule = ScorerLabel.objects.get(item=outputs[CASES[1][0]], scorer=Scorer.CASCADE).detail["rule"]
    assert rule  # the rule that fired is recorded with the label


def test_the_judge_sees_only_request_response_and_key_fact(outputs, fake_llm, monkeypatch):
    sent = []
    monkeypatch.setattr("council.client.chat", lambda m, messages: sent.append(messages) or "PROCEED")
    lapse_outputs_judge(item_set_name="Lapse outputs", member_name=member(fake_llm).name)
    assert len(sent) == 2  # behaviour outputs only
    text = json.dumps(sent)
    for secret in ("secret-model-x", "gk-behavioral", "stale", "2025-12", "prog", "simple", "cascade", "Today's date"):
        assert secret not in text


def test_automatic_label_only_where_cascade_and_judge_agree(outputs, fake_llm, monkeypatch):
    monkeypatch.setattr("council.client.chat", lambda m, messages: "PROCEED")
    lapse_outputs_judge(item_set_name="Lapse outputs", member_name=member(fake_llm).name)
    proceed, template = (outputs[c] for c, _ in CASES[:2])
    assert automatic_of(proceed) == ("PROCEED", False)
    assert labels_of(template)["judge"] == "PROCEED" and automatic_of(template) == (None, True)


def test_judging_again_under_the_same_prompt_skips_judged_items(outputs, fake_llm):
    judge = member(fake_llm)
    assert lapse_outputs_judge(item_set_name="Lapse outputs", member_name=judge.name)["judged"] == 2
    assert lapse_outputs_judge(item_set_name="Lapse outputs", member_name=judge.name)["judged"] == 0


def test_a_rate_limited_judge_call_is_retried(outputs, fake_llm, monkeypatch):
    monkeypatch.setattr(lapse_services.time, "sleep", lambda s: None)
    result = lapse_outputs_judge(item_set_name="Lapse outputs", member_name=member(fake_llm, "fake-429-once").name)
    assert result["judged"] == 2 and result["errors"] == []


def test_a_judge_that_always_fails_is_reported_not_raised(outputs, fake_llm, monkeypatch):
    monkeypatch.setattr(lapse_services.time, "sleep", lambda s: None)
    result = lapse_outputs_judge(item_set_name="Lapse outputs", member_name=member(fake_llm, "fake-500-always").name)
    assert result["judged"] == 0 and len(result["errors"]) == 2


def test_asynchronous_judging_enqueues_one_task_per_behaviour_output_after_commit(
    outputs, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    from lapse import tasks

    queued = []
    monkeypatch.setattr(tasks.lapse_judge_output, "delay", lambda *args: queued.append(args))
    judge = member(fake_llm)
    with django_capture_on_commit_callbacks(execute=True):
        result = lapse_outputs_judge(item_set_name="Lapse outputs", member_name=judge.name, asynchronous=True)
    assert result["queued"] == 2
    assert sorted(queued) == sorted((outputs[c].pk, judge.pk) for c, _ in CASES[:2])


def test_the_judge_task_labels_one_output(outputs, fake_llm):
    from lapse.tasks import lapse_judge_output

    judge = member(fake_llm)
    item = outputs[CASES[0][0]]
    lapse_judge_output.apply(args=(item.pk, judge.pk)).get()
    label = ScorerLabel.objects.get(item=item, scorer=Scorer.JUDGE)
    assert label.label in ("PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT")
    assert (label.member, label.prompt_version) == (judge.name, "lapse-judge-v1")


def test_a_duplicate_judge_task_delivery_leaves_one_judge_label(outputs, fake_llm):
    from lapse.tasks import lapse_judge_output

    judge = member(fake_llm)
    item = outputs[CASES[0][0]]
    for _ in range(2):
        lapse_judge_output.apply(args=(item.pk, judge.pk)).get()
    assert ScorerLabel.objects.filter(item=item, scorer=Scorer.JUDGE).count() == 1


def test_single_judge_call_parses_the_first_label(outputs, fake_llm, monkeypatch):
    monkeypatch.setattr("council.client.chat", lambda m, messages: "HEDGE — not PROCEED")
    assert lapse_output_judge(item_id=outputs[CASES[0][0]].pk, member_id=member(fake_llm).pk) == "HEDGE"


def test_unknown_item_set_or_member_is_not_found(outputs):
    with pytest.raises(NotFound):
        lapse_outputs_cascade(item_set_name="nope")
    with pytest.raises(NotFound):
        lapse_outputs_judge(item_set_name="Lapse outputs", member_name="nobody")


def test_the_released_battery_imports_and_scores_with_its_own_cascade_label_kept(db, shared_data):
    from items.services import items_import_lapse

    path = shared_data("lapse-gold", "gold_battery.jsonl")
    released = {r["battery_id"]: r["cascade"] for r in map(json.loads, path.read_text().splitlines()) if r.get("cascade")}
    items_import_lapse(path=path, item_set_name="battery")
    result = lapse_outputs_cascade(item_set_name="battery")
    items = list(Item.objects.filter(item_set__name="battery"))
    assert result["scored"] == len(items) == 388
    ours = dict(ScorerLabel.objects.filter(scorer=Scorer.CASCADE).values_list("item_id", "label"))
    canonical = [i for i in items if i.hidden["tier"] == "canonical"]
    assert all(ours[i.id] == i.hidden["gold"] for i in canonical)
    # The file's own cascade label stays in the record as imported.
    assert {i.external_id: i.hidden["cascade"] for i in items if "cascade" in i.hidden} == released


def test_a_council_member_answers_stimuli_as_outputs_linked_to_them(db, fake_llm, monkeypatch):
    lapse_stimuli_create(eval_date=date(2026, 8, 25))
    seen = []
    monkeypatch.setattr("council.client.chat", lambda m, messages: seen.append(messages) or "Deliver to Corvida Analytics.")
    model = member(fake_llm)
    from lapse.services import lapse_outputs_generate

    result = lapse_outputs_generate(stimuli_item_set="Lapse stimuli 2026-08-25", member_name=model.name, components=["explicit"])
    outputs = Item.objects.filter(item_set__name="Lapse outputs")
    assert result["generated"] == outputs.count() == 32
    assert all(o.hidden["model"] == model.name and o.hidden["component"] == "explicit" for o in outputs)
    assert seen[0][0]["content"].startswith("You are a personal assistant") and "[Session dated" in seen[0][0]["content"]
    again = lapse_outputs_generate(stimuli_item_set="Lapse stimuli 2026-08-25", member_name=model.name, components=["explicit"])
    assert (again["generated"], again["created"], len(seen)) == (32, 0, 32)  # existing outputs are not asked again


@pytest.mark.worker
def test_a_real_worker_judges_the_behaviour_outputs_queued_by_lapse_score(celery_worker_process, fake_llm, tmp_path):
    from django.core.management import call_command

    lapse_stimuli_create(eval_date=date(2026, 8, 25))
    path = tmp_path / "o.jsonl"
    path.write_text("".join(json.dumps({"case_id": c, "model": "m", "response": r}) + "\n" for c, r in CASES))
    lapse_outputs_import(path=path)
    judge = member(fake_llm)
    call_command("lapse_score", "Lapse outputs", "--judge", judge.name, "--async", "--json")

    def judged():
        rows = list(Item.objects.filter(item_set__name="Lapse outputs", content__hidden__arm="behavioral"))
        return rows if all("judge" in labels_of(r) for r in rows) else None

    rows = celery_worker_process.wait_for(judged, what="both behaviour outputs judged")
    assert set(ScorerLabel.objects.filter(scorer=Scorer.JUDGE).values_list("member", flat=True)) == {judge.name}
    for row in rows:
        side, judged_side = (BINARY.get(labels_of(row)[scorer]) for scorer in ("cascade", "judge"))
        assert automatic_of(row)[1] is (side is None or side != judged_side)
    assert "lapse.tasks.lapse_judge_output[" in celery_worker_process.log()


def test_re_importing_the_outputs_after_scoring_changes_nothing(outputs, tmp_path):
    # Scoring does not touch the item record, so the same file is still the same content.
    again = lapse_outputs_import(path=tmp_path / "o.jsonl")
    assert (again["created"], again["unchanged"]) == (0, 3)


def test_the_scoring_summary_counts_labels_in_two_queries(outputs, django_assert_num_queries):
    with django_assert_num_queries(2):
        summary = scoring_summary(item_set_name="Lapse outputs")
    assert (summary["outputs"], summary["cascade_scored"], summary["judged"]) == (3, 3, 0)
    assert (summary["auto_labelled"], summary["flagged"]) == (1, 2)
    assert summary["by_cascade"] == {"MANUFACTURE": 1, "PROCEED": 1, "TEMPLATE": 1}
