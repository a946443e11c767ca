"""The leakage audit of a key version runs on the key's own items (PROTOCOL §6)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from keys.services import key_freeze
from tests.council.test_leakage import authors_naive_bayes

pytestmark = [pytest.mark.django_db, pytest.mark.realdata]


def test_the_released_key_reproduces_the_papers_leakage_figures(twist_decided, author):
    key = key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)
    out = StringIO()
    call_command("leakage_audit", "--key", "TWIST-v1.0", "--json", stdout=out)
    result = json.loads(out.getvalue())

    assert result["scope"] == "key"
    assert result["key"] == {"version": "TWIST-v1.0", "sha256": key.sha256}
    assert result["items"] == 161 and result["folds"] == 10 and result["contradicting"] == 38
    # The paper's figures (TWIST §6: balanced accuracy 0.651, 34% of contradicting items recovered).
    assert result["balanced_accuracy"] == 0.6507
    assert result["contradicting_recall"] == 0.3421
    # ... and the same predictions as the method written out by hand, over the key's own entries.
    rows = [
        (e.item.draft, e.gold == "contradicting", e.item.conversation.external_id)
        for e in key.entries.select_related("item__conversation").order_by("external_id")
    ]
    predicted = authors_naive_bayes(rows)
    assert sum(p and y for p, (_, y, _) in zip(predicted, rows, strict=True)) == round(0.3421 * 38)


def test_the_command_needs_exactly_one_of_campaign_and_key(db):
    with pytest.raises(Exception, match="either a campaign"):
        call_command("leakage_audit", stdout=StringIO())
