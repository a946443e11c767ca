import json

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.models import Campaign
from items.models import Item
from lapse.models import Scorer, ScorerLabel
from lapse.selectors import scorer_validation
from lapse.trail import lapse_gold_import

BINARY = {"PROCEED": "P", "HEDGE": "W", "TEMPLATE": "W"}


def jsonl(path):
    return [json.loads(line) for line in path.open() if line.strip()]


@pytest.fixture
def gold_trail(db, shared_data):
    lapse_gold_import(directory=shared_data("lapse-gold"), slug="lapse-gold")
    return Campaign.objects.get(slug="lapse-gold")


def test_judge_gold_agreement_on_the_released_gold_set_is_the_published_219_of_230(gold_trail, shared_data):
    folder = shared_data("lapse-gold")
    a = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator1.jsonl")}
    b = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator2.jsonl")}
    adjudicated = {r["gid"]: r["label"] for r in jsonl(folder / "gold_adjudicated.jsonl")}
    judge = {r["gid"]: r["judge"] for r in jsonl(folder / "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl")}
    gold = {g: a[g] if a[g] == b[g] else adjudicated[g] for g in a}
    eligible = [g for g in gold if gold[g] in BINARY and judge.get(g) in BINARY]
    independent = cohen_kappa_score([BINARY[gold[g]] for g in eligible], [BINARY[judge[g]] for g in eligible])

    report = scorer_validation(gold_trail)
    binary = report["judge"]["binary"]
    assert report["judge_source"] == "council votes" and report["n_gold"] == len(gold)
    assert binary["kappa"] == pytest.approx(independent, abs=1e-12)
    assert (binary["agree"], binary["n"]) == (219, 230)  # paper §4.3: 95.2% (219/230, κ=.780)
    assert round(binary["kappa"], 3) == 0.780
    assert report["judge"]["five_way"]["kappa"] < binary["kappa"]  # "Five-way agreement was lower"


def test_released_gold_has_no_cascade_labels_so_cascade_agreement_is_empty(gold_trail):
    report = scorer_validation(gold_trail)
    assert report["cascade"] == {"labelled": 0}


def test_scorer_validation_runs_a_constant_number_of_queries(gold_trail, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        scorer_validation(gold_trail)


def test_scorer_validation_does_not_apply_to_a_twist_campaign():
    campaign = Campaign(slug="t", protocol="twist_b")
    assert scorer_validation(campaign) == {"campaign": "t", "applicable": False}


def test_cascade_scorer_labels_are_compared_with_gold(gold_trail):
    items = list(Item.objects.filter(item_set=gold_trail.item_set))
    ScorerLabel.objects.bulk_create(ScorerLabel(item=item, scorer=Scorer.CASCADE, label="PROCEED") for item in items)
    report = scorer_validation(gold_trail)
    assert report["cascade"]["labelled"] == len(items)
    assert report["judge_source"] == "council votes"
    assert report["cascade_judge"]["n"] == len(items)


def test_the_agreement_page_of_a_lapse_campaign_shows_scorer_validation(client, gold_trail, author):
    from django.urls import reverse

    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[gold_trail.slug])).content.decode()
    section = page.split('data-testid="scorer-validation"')[1]
    assert 'data-testid="llm-judge-binary-kappa">0.780<' in section
    assert "Rule cascade" in section and "no labels" in section


def test_annotators_cannot_open_the_agreement_page_with_scorer_validation(client, gold_trail, annotator_a):
    from django.urls import reverse

    client.force_login(annotator_a)
    response = client.get(reverse("adjudication:agreement", args=[gold_trail.slug]))
    assert response.status_code in (403, 404)
    assert b"scorer-validation" not in response.content


def test_the_automatic_label_is_compared_with_gold_on_the_binary_partition_only(gold_trail, shared_data):
    folder = shared_data("lapse-gold")
    a = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator1.jsonl")}
    b = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator2.jsonl")}
    adjudicated = {r["gid"]: r["label"] for r in jsonl(folder / "gold_adjudicated.jsonl")}
    judge = {r["gid"]: r["judge"] for r in jsonl(folder / "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl")}
    gold = {g: a[g] if a[g] == b[g] else adjudicated[g] for g in a}
    # A stand-in cascade: annotator 2's labels (the released trail carries no cascade labels).
    items = list(Item.objects.filter(item_set=gold_trail.item_set))
    ScorerLabel.objects.bulk_create(ScorerLabel(item=i, scorer=Scorer.CASCADE, label=b[i.external_id]) for i in items)
    automatic = {
        g: BINARY[b[g]] for g in gold if b[g] in BINARY and judge[g] in BINARY and BINARY[b[g]] == BINARY[judge[g]]
    }
    eligible = [g for g in sorted(gold) if g in automatic and gold[g] in BINARY]
    independent = cohen_kappa_score([BINARY[gold[g]] for g in eligible], [automatic[g] for g in eligible])

    report = scorer_validation(gold_trail)
    figure = report["auto_label"]["binary"]
    assert report["auto_label"]["five_way"] is None
    assert figure["kappa"] == pytest.approx(independent, abs=1e-12)
    assert figure["n"] == len(eligible) and figure["missing"] == len(gold) - len(automatic)
    assert report["auto_label"]["labelled"] == len(automatic)
    assert report["cascade_judge"]["auto_label_coverage"] == pytest.approx(len(automatic) / len(gold))


def test_scorer_validation_of_the_released_trail_says_no_tier_was_recorded_and_gives_the_bars(gold_trail):
    report = scorer_validation(gold_trail)
    assert report["sealed"] is False and report["tiers"] == [] and "no tier recorded" in report["tier_note"]
    assert report["bars"] == {"passes": 0.75, "revise": 0.65, "between": report["bars"]["between"]}
    assert report["judge"]["binary"]["verdict"] == "pass"  # 0.780 >= 0.75
