"""Shortcut-leakage audit (PROTOCOL §6): can the gold verdict be read off the draft text alone?

The authors' method: a binary task (contradicting versus everything else) from the draft alone;
features are lowercase runs of letters and apostrophes counted with multiplicity; multinomial Naive
Bayes with add-one smoothing over the training vocabulary and a log prior from class document counts;
a draft is predicted contradicting when its summed log-ratio is strictly above 0 (unseen tokens are
skipped); one fold per conversation, retrained each fold. A balanced accuracy near 0.5 means no
surface signal.

The figure that describes a benchmark is the one on a key version's own items (`keys` runs it on a
frozen key); the audit over a campaign's candidates is a different, labelled figure.
"""

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.naive_bayes import MultinomialNB

import protocols
from annotation.models import Campaign
from goldkey.errors import ApplicationError
from items.models import Item

TOKEN_PATTERN = r"[a-z']+"
POSITIVE = "contradicting"  # the class the audit tries to recover from the draft
TOP_TOKENS = 12


@dataclass(frozen=True)
class LeakageRow:
    draft: str
    gold: str
    conversation: str
    batch: str = ""


def _vectorizer() -> CountVectorizer:
    # CountVectorizer lowercases before it matches the pattern; its vocabulary is the training folds'
    # words only, so a held-out draft's unseen words are skipped, as the method says.
    return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN)


def _fit(drafts: Sequence[str], y: np.ndarray) -> tuple[CountVectorizer, MultinomialNB]:
    vectorizer = _vectorizer()
    model = MultinomialNB(alpha=1.0, fit_prior=True).fit(vectorizer.fit_transform(drafts), y)
    return vectorizer, model


def _log_ratio(vectorizer: CountVectorizer, model: MultinomialNB, drafts: Sequence[str]) -> np.ndarray:
    joint = model.predict_joint_log_proba(vectorizer.transform(drafts))
    return joint[:, 1] - joint[:, 0]


def loco_predictions(drafts: Sequence[str], y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Leave-one-conversation-out predictions: 1 where the summed log-ratio is strictly above 0."""
    predicted = np.zeros_like(y)
    for train, test in LeaveOneGroupOut().split(drafts, y, groups):
        vectorizer, model = _fit([drafts[i] for i in train], y[train])
        predicted[test] = (_log_ratio(vectorizer, model, [drafts[i] for i in test]) > 0).astype(int)
    return predicted


def leakage_figures(rows: Sequence[LeakageRow], *, top: int = TOP_TOKENS) -> dict:
    """Every figure of §6 for a set of items (pure: no database)."""
    if len(rows) < 4:
        raise ApplicationError("a leakage audit needs at least four items")
    drafts = [r.draft for r in rows]
    y = np.array([r.gold == POSITIVE for r in rows], dtype=int)
    groups = np.array([r.conversation for r in rows])
    if len(set(groups)) < 2 or len(set(y)) < 2:
        raise ApplicationError("a leakage audit needs two conversations and both classes")
    predicted = loco_predictions(drafts, y, groups)
    positives, negatives = int(y.sum()), int(len(y) - y.sum())
    recall = float(((predicted == 1) & (y == 1)).sum() / positives)
    other = float(((predicted == 0) & (y == 0)).sum() / negatives)

    # Descriptive only: a fit on the whole set, for the tokens that carry the signal.
    vectorizer, model = _fit(drafts, y)
    vocabulary = vectorizer.get_feature_names_out()
    log_ratio = model.feature_log_prob_[1] - model.feature_log_prob_[0]
    order = np.argsort(log_ratio, kind="stable")
    lengths: dict[str, list[int]] = defaultdict(list)
    batches: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        lengths[r.gold].append(len(r.draft.split()))
        batches[r.batch][r.gold] += 1
    return {
        "items": len(rows),
        "conversations": len(set(groups)),
        "folds": len(set(groups)),
        "contradicting": positives,
        "accuracy": round(float((predicted == y).mean()), 4),
        "contradicting_recall": round(recall, 4),
        "other_recall": round(other, 4),
        "balanced_accuracy": round((recall + other) / 2, 4),
        "majority_baseline": round(max(positives, negatives) / len(y), 4),
        "draft_words_mean": {k: round(float(np.mean(v)), 2) for k, v in sorted(lengths.items())},
        "batch_by_type": {b: dict(sorted(c.items())) for b, c in sorted(batches.items())},
        "tokens_for_contradicting": [str(vocabulary[i]) for i in order[::-1][:top]],
        "tokens_for_other": [str(vocabulary[i]) for i in order[:top]],
    }


def leakage_audit(*, campaign: Campaign, top: int = TOP_TOKENS) -> dict:
    """The candidate-level figure: every gold-labelled item of a campaign's item set, kept or not."""
    spec = protocols.get(campaign.protocol)
    if POSITIVE not in spec.gold_values:
        raise ApplicationError(f"campaign '{campaign.slug}' has no contradicting class to audit")
    rows = [
        LeakageRow(*values)
        for values in Item.objects.filter(item_set_id=campaign.item_set_id)
        .exclude(gold_label="")
        .values_list("content__draft", "gold_label", "conversation__external_id", "batch")
        .order_by("external_id")
    ]
    return {"scope": "candidates", "campaign": campaign.slug, **leakage_figures(rows, top=top)}
