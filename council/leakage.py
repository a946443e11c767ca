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
POSITIVE = "contradicting"  # the class the audit tries to recover from the draft, unless the protocol names another
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
    model = MultinomialNB(alpha=ALPHA, fit_prior=True).fit(vectorizer.fit_transform(drafts), y)
    return vectorizer, model


def _log_ratio(vectorizer: CountVectorizer, model: MultinomialNB, drafts: Sequence[str]) -> np.ndarray:
    joint = model.predict_joint_log_proba(vectorizer.transform(drafts))
    return joint[:, 1] - joint[:, 0]


def loco_predictions(drafts: Sequence[str], y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Leave-one-conversation-out predictions: 1 where the summed log-ratio is strictly above 0. The
    method as written: a vectorizer and a model fitted afresh on each fold's training drafts."""
    predicted = np.zeros_like(y)
    for train, test in LeaveOneGroupOut().split(drafts, y, groups):
        vectorizer, model = _fit([drafts[i] for i in train], y[train])
        predicted[test] = (_log_ratio(vectorizer, model, [drafts[i] for i in test]) > 0).astype(int)
    return predicted


ALPHA = 1.0  # add-one smoothing


def loco_predictions_counted(counts, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Exactly loco_predictions (tested), from the drafts' word counts (`counts`: the vectorizer fitted on
    every draft). A freeze audits every key, and refitting per fold cost 31 s for 20,000 drafts over 100
    conversations: here each fold's training counts are the whole set's minus the held-out drafts', its
    vocabulary the words those counts hold (what a vectorizer fitted on the training drafts keeps, in the
    same sorted order), and the model is MultinomialNB's fit written out on them. Word counts are whole
    numbers, so every sum is exact and the log-probabilities are the model's to the last bit."""
    indicator = np.stack([1 - y, y], axis=1).astype(np.float64)
    total = np.asarray((counts.T @ indicator).T)  # per class, each word's count over every draft
    predicted = np.zeros_like(y)
    for train, test in LeaveOneGroupOut().split(np.zeros(len(y)), y, groups):
        held = counts[test]
        fold = total - np.asarray((held.T @ indicator[test]).T)
        vocabulary = np.flatnonzero(fold.sum(axis=0))
        smoothed = fold[:, vocabulary] + ALPHA
        feature_log_prob = np.log(smoothed) - np.log(smoothed.sum(axis=1).reshape(-1, 1))
        class_count = indicator[train].sum(axis=0)
        if not class_count.all():  # one class only in the training folds: nothing is predicted positive
            continue
        class_log_prior = np.log(class_count) - np.log(class_count.sum())
        joint = np.asarray(held[:, vocabulary] @ feature_log_prob.T) + class_log_prior
        predicted[test] = (joint[:, 1] - joint[:, 0] > 0).astype(int)
    return predicted


def leakage_figures(rows: Sequence[LeakageRow], *, positive: str = POSITIVE, top: int = TOP_TOKENS) -> dict:
    """Every figure of §6 for a set of items (pure: no database). `positive`: the gold value the audit
    tries to recover from the text (the figures keep TWIST's names for it: `contradicting`, …)."""
    if len(rows) < 4:
        raise ApplicationError("a leakage audit needs at least four items")
    drafts = [r.draft or "" for r in rows]  # an item whose content holds no text reads as an empty draft
    y = np.array([r.gold == positive for r in rows], dtype=int)
    groups = np.array([r.conversation for r in rows])
    if len(set(groups)) < 2 or len(set(y)) < 2:
        raise ApplicationError("a leakage audit needs two conversations and both classes")
    vectorizer = _vectorizer()
    counts = vectorizer.fit_transform(drafts)
    predicted = loco_predictions_counted(counts, y, groups)
    positives, negatives = int(y.sum()), int(len(y) - y.sum())
    recall = float(((predicted == 1) & (y == 1)).sum() / positives)
    other = float(((predicted == 0) & (y == 0)).sum() / negatives)

    # Descriptive only: a fit on the whole set, for the tokens that carry the signal.
    model = MultinomialNB(alpha=ALPHA, fit_prior=True).fit(counts, y)
    vocabulary = vectorizer.get_feature_names_out()
    log_ratio = model.feature_log_prob_[1] - model.feature_log_prob_[0]
    order = np.argsort(log_ratio, kind="stable")
    lengths: dict[str, list[int]] = defaultdict(list)
    batches: dict[str, Counter] = defaultdict(Counter)
    for r, draft in zip(rows, drafts, strict=True):
        lengths[r.gold].append(len(draft.split()))
        batches[r.batch][r.gold] += 1
    return {
        "items": len(rows),
        "conversations": len(set(groups)),
        "folds": len(set(groups)),
        "positive": positive,
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
    audit = protocols.get(campaign.protocol).leakage_audit
    if audit is None:
        raise ApplicationError(f"campaign '{campaign.slug}': its protocol declares no leakage audit")
    rows = [
        LeakageRow(*values)
        for values in Item.objects.filter(item_set_id=campaign.item_set_id)
        .exclude(gold_label="")
        .values_list(f"content__{audit.text}", "gold_label", "conversation__external_id", "batch")
        .order_by("external_id")
    ]
    return {"scope": "candidates", "campaign": campaign.slug, **leakage_figures(rows, positive=audit.positive, top=top)}
