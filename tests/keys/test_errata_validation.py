"""Errata re-validate: a derived version's changed entries pass the structural gates, and one open
erratum per item and kind."""

import pytest

from goldkey.errors import ApplicationError
from items.models import Turn
from keys.models import Erratum, GoldKey, KeyEntry
from keys.services import erratum_decide, erratum_file, key_derive, key_freeze


@pytest.fixture
def v1(twist_decided, author):
    return key_freeze(campaign=twist_decided, version="TWIST-v1.0", user=author)


def _accepted(key, author, item, kind, value=""):
    erratum = erratum_file(key=key, item_external_id=item, kind=kind, value=value, description="because", user=author)
    return erratum_decide(erratum=erratum, accept=True, note="ok", user=author)


def _aligned(key):
    entry = KeyEntry.objects.filter(key=key, gold="aligned").select_related("item__conversation").order_by("external_id").first()
    other_speaker = entry.item.conversation.other_speaker(entry.item.recipient)
    foreign = Turn.objects.filter(conversation=entry.item.conversation, speaker=other_speaker).order_by("id").first()
    return entry, foreign


def test_an_aligned_item_made_contradicting_citing_another_speaker_with_an_unfound_quote_is_refused(v1, author):
    entry, foreign = _aligned(v1)
    relabel = _accepted(v1, author, entry.external_id, "relabel", "contradicting")
    _accepted(v1, author, entry.external_id, "fix-evidence", foreign.dia_id)
    _accepted(v1, author, entry.external_id, "fix-quote", "a sentence nobody ever said")
    with pytest.raises(ApplicationError) as refused:
        key_derive(parent=v1, version="TWIST-v1.2", user=author)
    message = str(refused.value)
    assert "TWIST-v1.2 cannot be derived" in message and f"erratum {relabel.pk} (relabel)" in message
    assert "recipient_speaker: cited turn(s) not spoken by the recipient" in message
    assert "verbatim_quote: the quote is not in any cited turn" in message
    assert not GoldKey.objects.filter(version="TWIST-v1.2").exists()
    assert Erratum.objects.filter(applied_in__isnull=False).count() == 0


def test_a_relabel_to_contradicting_without_a_quote_is_refused_by_the_quote_gate(v1, author):
    entry, _ = _aligned(v1)
    _accepted(v1, author, entry.external_id, "relabel", "contradicting")
    with pytest.raises(ApplicationError, match="verbatim_quote: contradicting item without a contradicted_quote"):
        key_derive(parent=v1, version="TWIST-v1.2", user=author)


def test_a_relabel_to_contradicting_with_a_verbatim_quote_from_a_cited_turn_derives(v1, author):
    entry, _ = _aligned(v1)
    cited = Turn.objects.get(conversation=entry.item.conversation, dia_id=entry.evidence[0])
    _accepted(v1, author, entry.external_id, "relabel", "contradicting")
    _accepted(v1, author, entry.external_id, "fix-quote", cited.text.split(".")[0])
    v12 = key_derive(parent=v1, version="TWIST-v1.2", user=author)
    derived = KeyEntry.objects.get(key=v12, external_id=entry.external_id)
    assert (derived.gold, derived.quote) == ("contradicting", cited.text.split(".")[0])


def test_a_valid_relabel_still_derives(v1, author):
    entry, _ = _aligned(v1)
    _accepted(v1, author, entry.external_id, "relabel", "hard_negative")
    v11 = key_derive(parent=v1, version="TWIST-v1.1", user=author)
    assert KeyEntry.objects.get(key=v11, external_id=entry.external_id).gold == "hard_negative"


def test_one_open_erratum_per_item_and_kind(v1, author, outsider):
    entry, _ = _aligned(v1)
    first = erratum_file(key=v1, item_external_id=entry.external_id, kind="relabel", value="contradicting",
                         description="d", user=outsider)
    with pytest.raises(ApplicationError, match=f"erratum {first.pk} \\(relabel, filed\\) is already open"):
        erratum_file(key=v1, item_external_id=entry.external_id, kind="relabel", value="hard_negative",
                     description="d", user=author)
    erratum_decide(erratum=first, accept=True, note="ok", user=author)  # accepted, not applied: still open
    with pytest.raises(ApplicationError, match="accepted\\) is already open"):
        erratum_file(key=v1, item_external_id=entry.external_id, kind="relabel", value="hard_negative",
                     description="d", user=author)
    # Another kind on the same item is its own erratum.
    assert erratum_file(key=v1, item_external_id=entry.external_id, kind="fix-quote", value="q",
                        description="d", user=author).status == Erratum.Status.FILED
