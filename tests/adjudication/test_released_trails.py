"""The released annotation trails reproduce the published figures, computed from the answers.

TWIST: ../shared/seeds/twist-paper.txt §5. Lapse: ../shared/seeds/lapse-paper.txt (main text and
Appendix B). Each figure is compared at the precision it was printed with, and every kappa is also
recomputed independently with scikit-learn from the raw files.
"""

import json
from collections import Counter
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from sklearn.metrics import cohen_kappa_score

from adjudication.agreement import campaign_agreement
from adjudication.selectors import campaign_queue, undecided_items
from adjudication.services import decisions_export, decisions_import
from annotation.models import Campaign
from annotation.services import campaign_close, campaign_create
from annotation.transfer import answers_import
from lapse.trail import lapse_gold_import
from tests.conftest import require_shared_data

pytestmark = [pytest.mark.realdata, pytest.mark.django_db]

GOLD_VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def released(django_db_setup, django_db_blocker):
    """Both released trails, imported ONCE for this module inside a transaction that is rolled back at
    the end (each test runs in its own savepoint on top, so a test's writes vanish after it)."""
    from items.models import ItemSet
    from items.services import corpus_import_locomo, items_import_twist

    data = require_shared_data()
    with django_db_blocker.unblock(), transaction.atomic():
        corpus_import_locomo(path=data / "locomo10")
        items_import_twist(
            path=data / "twist-v1" / "track_b_items_v1_candidates.jsonl",
            item_set_name="TWIST Track B v1 candidates",
            rejects_path=data / "twist-v1" / "track_b_v1_generation_rejects.jsonl",
        )
        users = [get_user_model().objects.create(username=name) for name in ("released-a", "released-b")]
        twist = campaign_create(
            slug="twist-v1", item_set=ItemSet.objects.get(name="TWIST Track B v1 candidates"),
            annotators=users, per_item=2, seed=20260919,
        )
        folder = data / "twist-v1" / "annotation"
        answers_import(campaign=twist, path=folder / "twist_v1_answers_A.json", annotator="A")
        answers_import(campaign=twist, path=folder / "twist_v1_answers_B.json", annotator="B")
        campaign_close(campaign=twist, user=None)
        lapse_gold_import(directory=data / "lapse-gold", slug="lapse-gold")
        yield SimpleNamespace(twist=twist, lapse=Campaign.objects.get(slug="lapse-gold"))
        transaction.set_rollback(True)


@pytest.fixture
def twist_trail(released, db):
    return released.twist


@pytest.fixture
def lapse_trail(released, db):
    return released.lapse


@pytest.fixture
def twist_decided(twist_trail, shared_data):
    decisions_import(campaign=twist_trail, path=shared_data("twist-v1", "annotation", "adjudication_decisions.json"),
                     adjudicator_unknown=True)
    return twist_trail


@pytest.fixture
def twist_files(shared_data):
    folder = shared_data("twist-v1")
    items = {r["id"]: r for r in read_jsonl(folder / "track_b_items_v1_candidates.jsonl")}
    a = json.loads((folder / "annotation" / "twist_v1_answers_A.json").read_text())["answers"]
    b = json.loads((folder / "annotation" / "twist_v1_answers_B.json").read_text())["answers"]
    decisions = json.loads((folder / "annotation" / "adjudication_decisions.json").read_text())["decisions"]
    return items, a, b, decisions


def test_twist_q1_kappa_on_all_items_is_the_published_0_565(twist_trail, twist_files):
    items, a, b, _ = twist_files
    result = campaign_agreement(twist_trail)
    ids = [i for i in items if a.get(i, {}).get("q1") and b.get(i, {}).get("q1")]
    independent = cohen_kappa_score([a[i]["q1"] for i in ids], [b[i]["q1"] for i in ids])
    assert result["q1"]["kappa"] == pytest.approx(independent, abs=1e-12)
    assert round(result["q1"]["kappa"], 3) == 0.565
    assert result["n_items"] == 200 and result["q1"]["n"] == len(ids)
    low, high = result["q1"]["ci95"]
    assert low < result["q1"]["kappa"] < high


def test_twist_raw_agreement_per_gold_type_is_the_published_61_62_and_36_74(twist_trail):
    by_type = campaign_agreement(twist_trail)["q1"]["by_gold_type"]
    published = {"aligned": (61, 62), "hard_negative": (62, 64), "contradicting": (36, 74)}
    assert {t: (s["agree"], s["n"]) for t, s in by_type.items()} == published


def test_twist_q2_agreement_is_the_published_66_74(twist_trail, twist_files):
    items, a, b, _ = twist_files
    result = campaign_agreement(twist_trail)
    contradicting = [i for i, r in items.items() if r["type"] == "contradicting"]
    independent = sum(a[i].get("q2") == b[i].get("q2") for i in contradicting)
    assert (result["q2"]["agree"], result["q2"]["n"]) == (independent, 74) == (66, 74)


def test_twist_31_items_both_not_self_contained_26_from_the_contradicting_only_top_up_batches(twist_trail):
    section = campaign_agreement(twist_trail)["not_self_contained"]
    assert section["n"] == 31
    assert section["from_contradicting_only_batches"] == 26
    top_up = [b for b, s in section["by_batch"].items() if s["contradicting_only"]]
    assert len(top_up) == 2  # "the two contradicting-only top-up generation passes"


def test_twist_queue_is_exactly_the_items_of_the_released_decisions_file(twist_trail, twist_files):
    from adjudication.selectors import campaign_queue

    _, _, _, decisions = twist_files
    assert {e.item.external_id for e in campaign_queue(twist_trail)} == set(decisions)


def test_twist_adjudication_drops_39_keeps_161_and_retained_kappa_is_the_published_0_851(twist_decided, twist_files):
    items, a, b, decisions = twist_files
    retained = campaign_agreement(twist_decided)["retained"]
    assert retained["complete"] is True
    assert retained["dropped"]["n"] == 39
    assert retained["dropped"]["by_type"] == {"contradicting": 36, "aligned": 1, "hard_negative": 2}
    assert retained["n"] == 161
    assert retained["by_type"] == {"contradicting": 38, "aligned": 61, "hard_negative": 62}
    kept = [i for i in items if decisions.get(i, {}).get("action") != "drop"]
    independent = cohen_kappa_score([a[i]["q1"] for i in kept], [b[i]["q1"] for i in kept])
    assert retained["kappa"] == pytest.approx(independent, abs=1e-12)
    assert round(retained["kappa"], 3) == 0.851
    assert retained["bar"] == 0.8 and retained["passes"] is True
    for pseudonym, answers in (("A", a), ("B", b)):
        expected = sum(answers[i]["q1"] == GOLD_VERDICT[items[i]["type"]] for i in kept)
        assert retained["gold_agreement"][pseudonym] == expected


def test_council_flags_outside_the_human_queue_do_not_hold_back_the_retained_set(twist_decided, shared_data):
    from tests.adjudication.conftest import _council_import

    _council_import(twist_decided, shared_data("twist-v1", "annotation", "council"))
    agreement = campaign_agreement(twist_decided)
    triage_only = [e for e in campaign_queue(twist_decided) if e.reasons == ["council_majority_against"]]
    assert triage_only and all(e.decision is None for e in triage_only)  # shown in the queue, undecided
    assert agreement["queue"]["undecided"] == 0
    assert agreement["queue"]["triage_only_undecided"] == len(triage_only)
    assert undecided_items(twist_decided) == []
    retained = agreement["retained"]
    assert retained["complete"] is True and retained["n"] == 161 and round(retained["kappa"], 3) == 0.851


def test_twist_decisions_export_reproduces_the_released_file(twist_decided, shared_data):
    path = shared_data("twist-v1", "annotation", "adjudication_decisions.json")
    released = json.loads(path.read_text())
    assert decisions_export(campaign=twist_decided, exported=released["exported"]) == released


def test_twist_agreement_command_prints_the_json(twist_decided, capsys):
    call_command("agreement", twist_decided.slug, "--json")
    result = json.loads(capsys.readouterr().out)
    assert round(result["q1"]["kappa"], 3) == 0.565
    assert result["queue"]["n"] == 61 and result["queue"]["undecided"] == 0
    assert set(result["retained"]) >= {"n", "by_type", "kappa", "gold_agreement", "bar", "passes"}


# ---------------------------------------------------------------------------------------------
# Lapse: "On eligible items, human–human binary agreement was 99.1% (218/220, κ=.949); judge–gold
# agreement was 95.2% (219/230, κ=.780)." and "adjudicated 25 disagreements".

BINARY = {"PROCEED": "P", "HEDGE": "W", "TEMPLATE": "W"}


@pytest.fixture
def lapse_files(shared_data):
    folder = shared_data("lapse-gold")
    a = {r["gid"]: r["label"] for r in read_jsonl(folder / "gold_annotations_annotator1.jsonl")}
    b = {r["gid"]: r["label"] for r in read_jsonl(folder / "gold_annotations_annotator2.jsonl")}
    adjudicated = {r["gid"]: r["label"] for r in read_jsonl(folder / "gold_adjudicated.jsonl")}
    judge = {r["gid"]: r["judge"] for r in read_jsonl(folder / "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl")}
    gold = {g: (a[g] if a[g] == b[g] else adjudicated[g]) for g in a}
    return a, b, judge, gold


def test_lapse_binary_human_agreement_is_the_published_218_of_220_kappa_949(lapse_trail, lapse_files):
    a, b, _, _ = lapse_files
    binary = campaign_agreement(lapse_trail)["binary"]
    eligible = [g for g in a if a[g] in BINARY and b[g] in BINARY]
    independent = cohen_kappa_score([BINARY[a[g]] for g in eligible], [BINARY[b[g]] for g in eligible])
    assert binary["kappa"] == pytest.approx(independent, abs=1e-12)
    assert (binary["agree"], binary["n"]) == (218, 220)
    assert round(100 * binary["observed"], 1) == 99.1
    assert round(binary["kappa"], 3) == 0.949


def test_lapse_judge_gold_agreement_is_the_published_219_of_230_kappa_780(lapse_trail, lapse_files):
    _, _, judge, gold = lapse_files
    judge_gold = campaign_agreement(lapse_trail)["judge_gold"]
    eligible = [g for g in gold if gold[g] in BINARY and judge.get(g) in BINARY]
    independent = cohen_kappa_score([BINARY[gold[g]] for g in eligible], [BINARY[judge[g]] for g in eligible])
    assert judge_gold["binary"]["kappa"] == pytest.approx(independent, abs=1e-12)
    assert (judge_gold["binary"]["agree"], judge_gold["binary"]["n"]) == (219, 230)
    assert round(100 * judge_gold["binary"]["observed"], 1) == 95.2
    assert round(judge_gold["binary"]["kappa"], 3) == 0.780
    assert judge_gold["judge"] == "local/seed-oss-36b-instruct-pv2"


def test_lapse_25_disagreements_are_queued_and_adjudicated(lapse_trail, lapse_files):
    a, b, _, gold = lapse_files
    result = campaign_agreement(lapse_trail)
    assert result["queue"]["n"] == sum(a[g] != b[g] for g in a) == 25
    assert result["queue"]["by_reason"] == {"label_disagreement": 25}
    assert result["queue"]["undecided"] == 0
    assert result["gold"]["n"] == 250
    assert result["gold"]["by_label"] == dict(sorted(Counter(gold.values()).items()))


def test_lapse_five_way_kappa_is_lower_than_binary_as_published(lapse_trail, lapse_files):
    # The paper prints no five-way figure ("Five-way agreement was lower"); the value is recomputed.
    a, b, _, _ = lapse_files
    result = campaign_agreement(lapse_trail)
    gids = sorted(a)
    independent = cohen_kappa_score([a[g] for g in gids], [b[g] for g in gids])
    assert result["five_way"]["kappa"] == pytest.approx(independent, abs=1e-12)
    assert result["five_way"]["n"] == 250
    assert result["five_way"]["kappa"] < result["binary"]["kappa"]


def test_lapse_gold_placeholders_are_marked_text_not_released(lapse_trail):
    items = lapse_trail.item_set.items.all()
    assert items.count() == 250
    assert not items.filter(content__text_released=True).exists()
