"""Shortcut-leakage audit (PROTOCOL §6): can the gold verdict be read off the draft text alone?

A multinomial Naive Bayes on the draft's words under leave-one-conversation-out cross-validation. A
balanced accuracy near 0.5 means no surface signal; a high one means the drafts leak their label.
"""

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import balanced_accuracy_score, recall_score
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.naive_bayes import MultinomialNB

from annotation.models import Campaign
from goldkey.errors import ApplicationError
from items.models import Item
from protocols import twist_b


def _vectorizer() -> CountVectorizer:
    return CountVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b")


def leakage_audit(*, campaign: Campaign, top: int = 10) -> dict:
    rows = list(
        # A TWIST audit: the drafts and their gold types (PROTOCOL §6).
        Item.objects.filter(item_set_id=campaign.item_set_id, kind=twist_b.SPEC.item_kind)
        .exclude(gold_type="")
        .values_list("draft", "gold_type", "conversation__external_id")
        .order_by("external_id")
    )
    if len(rows) < 4:
        raise ApplicationError(f"campaign '{campaign.slug}' has too few TWIST items for a leakage audit")
    drafts = [r[0] for r in rows]
    y = np.array([twist_b.SPEC.verdict_of(r[1]) == twist_b.CONTRADICTS for r in rows], dtype=int)
    groups = np.array([r[2] for r in rows])
    if len(set(groups)) < 2 or len(set(y)) < 2:
        raise ApplicationError("the leakage audit needs two conversations and both verdicts")
    predicted = np.zeros_like(y)
    for train, test in LeaveOneGroupOut().split(drafts, y, groups):
        vectorizer = _vectorizer()
        x_train = vectorizer.fit_transform([drafts[i] for i in train])
        model = MultinomialNB().fit(x_train, y[train])
        predicted[test] = model.predict(vectorizer.transform([drafts[i] for i in test]))
    vectorizer = _vectorizer()
    model = MultinomialNB().fit(vectorizer.fit_transform(drafts), y)
    vocabulary = vectorizer.get_feature_names_out()
    log_ratio = model.feature_log_prob_[1] - model.feature_log_prob_[0]
    order = np.argsort(log_ratio)
    lengths: dict[str, list[int]] = {}
    for draft, gold_type, _ in rows:
        lengths.setdefault(gold_type, []).append(len(draft.split()))
    return {
        "campaign": campaign.slug,
        "items": len(rows),
        "conversations": len(set(groups)),
        "balanced_accuracy": round(float(balanced_accuracy_score(y, predicted)), 4),
        "contradicting_recall": round(float(recall_score(y, predicted)), 4),
        "draft_words_mean": {k: round(float(np.mean(v)), 2) for k, v in sorted(lengths.items())},
        "tokens_for_contradicts": [str(vocabulary[i]) for i in order[::-1][:top]],
        "tokens_for_consistent": [str(vocabulary[i]) for i in order[:top]],
    }
