"""Adding a protocol is one module: a toy protocol registered for one test is imported, annotated,
queued, suggested and exported by the apps without a line of theirs naming it."""

import json

import pytest

import protocols
from adjudication.selectors import campaign_data, queue_from_data
from annotation.services import campaign_create
from annotation.transfer import answers_export_text, answers_load
from items.models import Item
from items.services import item_set_get_or_create
from protocols.base import DISCUSS, MISSING_ANSWERS, AnswerFile, Benchmark, ProtocolSpec, Question

VERDICTS = ("correct", "incorrect")


def _rules(spec, gold, answers, council_votes=None):
    verdicts = [(a or {}).get("verdict") for a in answers]
    reasons = []
    if len({v for v in verdicts if v}) > 1:
        reasons.append("verdict_disagreement")
    if not all(verdicts):
        reasons.append(MISSING_ANSWERS)
    return reasons


JUDGED = ProtocolSpec(
    name="toy",
    label="Toy verdicts",
    item_kind="toy",
    item_kind_label="Toy answer",
    benchmark=Benchmark("toy-bench", "Toy benchmark", "toy-track", "Toy track"),
    version="toy-verdicts/1",
    blind_fields=("request", "response"),
    hidden_fields=("external_id", "hidden"),
    questions=(Question("verdict", 1, VERDICTS, label="Is the answer correct?"), Question("why", 1, None, note=True)),
    primary_key="verdict",
    agreement_keys=("verdict",),
    gold_values=VERDICTS,
    gold_from_answers=True,
    answer_file=AnswerFile(layout="records", stem="labels", suffix=".jsonl", id_field="question_id",
                           fields=("verdict", "why"), required=("verdict",)),
    reasons={"verdict_disagreement": "the two verdicts differ", MISSING_ANSWERS: "a verdict is missing"},
    queue_rules=_rules,
    suggest=lambda spec, gold, answers, reasons: (DISCUSS, "set the verdict"),
)


@pytest.fixture
def judged_registered(monkeypatch):
    monkeypatch.setitem(protocols.REGISTRY, JUDGED.name, JUDGED)
    monkeypatch.setitem(protocols.BY_KIND, JUDGED.item_kind, JUDGED)
    return JUDGED


@pytest.mark.django_db
def test_a_registered_protocol_runs_through_campaign_queue_and_export(judged_registered, annotator_a, annotator_b):
    item_set = item_set_get_or_create(name="toy answers", kind="toy")
    assert item_set.track.benchmark.name == "Toy benchmark"
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="toy", external_id=f"q{n}", request=f"question {n}", response=f"answer {n}")
        for n in range(3)
    )
    campaign = campaign_create(slug="judged", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)
    assert campaign.protocol == "toy" and campaign.get_protocol_display() == "Toy verdicts"
    answers_load(campaign=campaign, annotator="A", answers={"q0": {"verdict": "correct"}, "q1": {"verdict": "correct"},
                                                            "q2": {"verdict": "incorrect", "why": "off by a day"}})
    answers_load(campaign=campaign, annotator="B", answers={"q0": {"verdict": "correct"}, "q1": {"verdict": "incorrect"}})

    queue = {e.item.external_id: (e.reasons, e.suggestion) for e in queue_from_data(campaign_data(campaign))}
    assert queue == {"q1": (["verdict_disagreement"], DISCUSS), "q2": ([MISSING_ANSWERS], DISCUSS)}

    name, text = answers_export_text(enrollment=campaign.enrollments.get(pseudonym="A"))
    records = [json.loads(line) for line in text.splitlines()]
    assert name == "judged_labels_A.jsonl"
    assert [(r["question_id"], r["verdict"], r["why"]) for r in records] == [
        ("q0", "correct", ""), ("q1", "correct", ""), ("q2", "incorrect", "off by a day"),
    ]


def test_an_item_set_of_an_unregistered_kind_is_refused_with_the_known_kinds(db):
    from goldkey.lib.jsonio import ImportFailed

    with pytest.raises(ImportFailed, match="no protocol annotates items of kind 'toy' \\(known: twist, lapse, judged, twist_c\\)"):
        item_set_get_or_create(name="toy answers", kind="toy")
