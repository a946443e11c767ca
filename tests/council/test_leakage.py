"""The draft-only shortcut-leakage audit."""

import json

import pytest

from council.leakage import leakage_audit
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
            word = "sadly" if (contradicting and leak) else ["hope", "great", "sadly", "week"][(i + c) % 4]
            item = Item.objects.create(
                item_set=small_twist, kind="twist", external_id=f"conv-l{c}:{i}", conversation=conv, recipient="Ana",
                gold_type="contradicting" if contradicting else "aligned", draft=f"{word} see you at the lake {c} {i}",
            )
            Evidence.objects.create(item=item, turn=turn, position=0)
    return campaign_create(slug=f"leak-{leak}", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=2)


@pytest.mark.django_db
def test_a_label_word_in_every_contradicting_draft_is_caught(small_twist, annotator_a, annotator_b):
    result = leakage_audit(campaign=_leaky_campaign(small_twist, annotator_a, annotator_b, leak=True))
    assert result["balanced_accuracy"] == 1.0
    assert result["contradicting_recall"] == 1.0
    assert result["tokens_for_contradicts"][0] == "sadly"


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


@pytest.mark.django_db
def test_the_audit_on_the_released_candidates_matches_an_independent_computation(twist_campaign, shared_data):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.pipeline import make_pipeline

    result = leakage_audit(campaign=twist_campaign)
    rows = sorted(
        (json.loads(line) for line in shared_data("twist-v1", "track_b_items_v1_candidates.jsonl").open()),
        key=lambda r: r["id"],
    )
    drafts = [r["draft"] for r in rows]
    y = [int(r["type"] == "contradicting") for r in rows]
    pipeline = make_pipeline(CountVectorizer(token_pattern=r"(?u)\b\w+\b"), MultinomialNB())
    predicted = cross_val_predict(pipeline, drafts, y, groups=[r["conv"] for r in rows], cv=LeaveOneGroupOut())
    assert result["items"] == 200 and result["conversations"] == 10
    assert result["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, predicted), abs=1e-4)
