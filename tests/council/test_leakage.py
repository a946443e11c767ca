"""The draft-only shortcut-leakage audit."""

import json
import math
import random
import re
from collections import Counter

import numpy as np
import pytest

from council.leakage import _vectorizer, leakage_audit, loco_predictions, loco_predictions_counted
from goldkey.errors import ApplicationError
from items.models import Item


def _leaky_campaign(small_twist, annotator_a, annotator_b, leak: bool):
    """Twelve items over three conversations; with `leak`, every contradicting draft says 'sadly'."""
    from annotation.services import campaign_create
    from items.models import Conversation, Evidence, Session, Turn

    Item.objects.filter(item_set=small_twist).delete()
    for c in range(3):
        conv = Conversation.objects.create(external_id=f"conv-l{c}", speaker_a="Ana", speaker_b="Ben")
        session = Session.objects.create(conversation=conv, number=1, date_time_raw="1 May 2023")
        turn = Turn.objects.create(conversation=conv, session=session, dia_id="D1:1", speaker="Ana", text="hi", order=0)
        for i in range(4):
            contradicting = i % 2 == 0
            others = ["hope", "great", "fine" if leak else "sadly", "week"]
            word = "sadly" if (contradicting and leak) else others[(i + c) % 4]
            item = Item.objects.create(
                item_set=small_twist, kind="twist", external_id=f"conv-l{c}:{i}", conversation=conv, recipient="Ana",
                gold_label="contradicting" if contradicting else "aligned", draft=f"{word} see you at the lake {c} {i}",
            )
            Evidence.objects.create(item=item, turn=turn, position=0)
    return campaign_create(slug=f"leak-{leak}", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=2)


@pytest.mark.django_db
def test_a_label_word_in_every_contradicting_draft_is_caught(small_twist, annotator_a, annotator_b):
    result = leakage_audit(campaign=_leaky_campaign(small_twist, annotator_a, annotator_b, leak=True))
    assert result["balanced_accuracy"] == 1.0
    assert result["contradicting_recall"] == 1.0
    assert result["tokens_for_contradicting"][0] == "sadly"
    assert result["scope"] == "candidates"


@pytest.mark.django_db
def test_the_audit_reports_the_mean_draft_length_per_type(small_twist, annotator_a, annotator_b):
    result = leakage_audit(campaign=_leaky_campaign(small_twist, annotator_a, annotator_b, leak=False))
    assert set(result["draft_words_mean"]) == {"aligned", "contradicting"}
    assert result["conversations"] == 3 and result["items"] == 12


@pytest.mark.django_db
def test_one_conversation_is_too_few_for_leave_one_conversation_out(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    campaign = campaign_create(slug="one", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=2)
    with pytest.raises(ApplicationError):
        leakage_audit(campaign=campaign)


def authors_naive_bayes(rows: list[tuple[str, bool, str]]) -> list[bool]:
    """The authors' method written out by hand (PROTOCOL §6), to check the sklearn pipeline against."""
    predicted = [False] * len(rows)
    for held_out in sorted({conv for _, _, conv in rows}):
        train = [(re.findall(r"[a-z']+", d.lower()), y) for d, y, conv in rows if conv != held_out]
        vocabulary = {w for words, _ in train for w in words}
        counts = {True: Counter(), False: Counter()}
        docs = Counter()
        for words, y in train:
            counts[y].update(words)
            docs[y] += 1
        totals = {y: sum(counts[y].values()) + len(vocabulary) for y in (True, False)}
        prior = math.log(docs[True] / len(train)) - math.log(docs[False] / len(train))
        for i, (draft, _, conv) in enumerate(rows):
            if conv != held_out:
                continue
            score = prior + sum(
                math.log((counts[True][w] + 1) / totals[True]) - math.log((counts[False][w] + 1) / totals[False])
                for w in re.findall(r"[a-z']+", draft.lower())
                if w in vocabulary
            )
            predicted[i] = score > 0
    return predicted


def test_the_sklearn_pipeline_equals_the_hand_written_method_on_random_drafts():
    rng = random.Random(5)
    words = ["sadly", "glad", "won't", "lake", "move", "new", "job", "x1", "it's", "hope"]
    rows = [
        (" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))), rng.random() < 0.4, f"c{rng.randint(0, 5)}")
        for _ in range(120)
    ]
    y = np.array([r[1] for r in rows], dtype=int)
    predicted = loco_predictions([r[0] for r in rows], y, np.array([r[2] for r in rows]))
    assert [bool(p) for p in predicted] == authors_naive_bayes(rows)


@pytest.mark.django_db
def test_the_audit_on_the_released_candidates_is_labelled_and_matches_the_hand_written_method(twist_campaign, shared_data):
    result = leakage_audit(campaign=twist_campaign)
    records = sorted(
        (json.loads(line) for line in shared_data("twist-v1", "track_b_items_v1_candidates.jsonl").open()),
        key=lambda r: r["id"],
    )
    rows = [(r["draft"], r["type"] == "contradicting", r["conv"]) for r in records]
    predicted = authors_naive_bayes(rows)
    recall = sum(p and y for p, (_, y, _) in zip(predicted, rows, strict=True)) / sum(y for _, y, _ in rows)
    assert result["scope"] == "candidates"
    assert result["items"] == 200 and result["folds"] == 10
    assert result["contradicting_recall"] == pytest.approx(recall, abs=1e-4)


def _signal_rows(seed: int, n: int, conversations: int) -> list[tuple[str, bool, str]]:
    """Random drafts whose contradicting ones lean on a few words, so that the folds predict both ways."""
    rng = random.Random(seed)
    common = [f"w{i}" for i in range(60)] + ["it's", "won't"]
    leaning = ["sadly", "never", "didn't"]
    rows = []
    for _ in range(n):
        positive = rng.random() < 0.35
        words = [rng.choice(common) for _ in range(rng.randint(1, 15))]
        if positive and rng.random() < 0.7:
            words.append(rng.choice(leaning))
        if rng.random() < 0.1:
            words.append(f"rare{rng.randint(0, 10_000)}")  # a word only one fold holds
        rows.append((" ".join(words), positive, f"c{rng.randint(0, conversations - 1)}"))
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_counted_folds_predict_exactly_what_refitting_each_fold_predicts(seed):
    rows = _signal_rows(seed, 400, 9)
    drafts = [d for d, _, _ in rows]
    y = np.array([p for _, p, _ in rows], dtype=int)
    groups = np.array([c for _, _, c in rows])
    counted = loco_predictions_counted(_vectorizer().fit_transform(drafts), y, groups)
    plain = loco_predictions(drafts, y, groups)
    assert 0 < plain.sum() < len(plain)  # both ways, or the comparison shows nothing
    assert counted.tolist() == plain.tolist()


def test_the_counted_folds_equal_refitting_on_the_released_candidates(shared_data):
    records = [json.loads(line) for line in shared_data("twist-v1", "track_b_items_v1_candidates.jsonl").open()]
    drafts = [r["draft"] for r in records]
    y = np.array([r["type"] == "contradicting" for r in records], dtype=int)
    groups = np.array([r["conv"] for r in records])
    counted = loco_predictions_counted(_vectorizer().fit_transform(drafts), y, groups)
    assert counted.tolist() == loco_predictions(drafts, y, groups).tolist()
    assert counted.sum() > 0
