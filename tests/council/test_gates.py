"""Structural gates, the addressee warning and the verification-as-seen gate."""

import json

import pytest

from council.gates import gate_addressee, gate_evidence_ids, gate_verbatim_quote, gates_run
from council.models import GateVerdict
from council.services import council_member_add
from items.models import Evidence, Item, Turn
from tests.conftest import item_content_update


def _item(item_set, external_id):
    return Item.objects.prefetch_related("evidence__turn__session").select_related("conversation").get(
        item_set=item_set, external_id=external_id
    )


@pytest.mark.django_db
def test_every_released_v1_candidate_passes_the_structural_gates(twist_corpus):
    result = gates_run(item_set_id=twist_corpus.pk)
    assert result["checked"] == 200
    assert result["passed"] == 200
    assert result["rejected_by_gate"] == {"recipient_speaker": 0, "verbatim_quote": 0, "evidence_ids": 0}
    assert GateVerdict.objects.filter(item_set=twist_corpus, blocking=True, passed=False).count() == 0
    # The addressee warning never blocks; each warned draft does name the other participant.
    warned = Item.objects.filter(gate_verdicts__gate="addressee", gate_verdicts__passed=False).select_related("conversation")
    assert result["warnings"]["addressee"] == warned.count()
    for item in warned:
        assert item.conversation.other_speaker(item.recipient).split()[0] in item.draft


@pytest.mark.django_db
def test_on_the_v0_pilot_the_recipient_gate_rejects_exactly_the_role_flips(twist_corpus, shared_data):
    from items.services import items_import_twist

    v0_path = shared_data("twist-v1", "track_b_items_v0.jsonl")
    report = items_import_twist(path=v0_path, item_set_name="TWIST Track B v0 pilot")
    item_set = Item.objects.get(external_id="conv-26:b0").item_set
    assert report.created == 153
    # Independently, from the LoCoMo files: items citing a turn spoken by someone other than the recipient.
    speakers = {}
    for path in shared_data("locomo10").glob("*.json"):
        data = json.loads(path.read_text())
        conv = f"conv-{path.stem}"
        for key, session in data.items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    speakers[(conv, turn["dia_id"])] = turn["speaker"]
    flips = set()
    for line in v0_path.open():
        record = json.loads(line)
        if any(speakers[(record["conv"], e)] != record["speaker"] for e in record["evidence"]):
            flips.add(record["id"])
    assert flips  # the pilot's dominant defect is present

    result = gates_run(item_set_id=item_set.pk)
    rejected = set(
        GateVerdict.objects.filter(item_set=item_set, gate="recipient_speaker", passed=False).values_list(
            "item__external_id", flat=True
        )
    )
    assert rejected == flips
    # Exactly the role flips: no other gate rejects a pilot item.
    assert result["rejected_by_gate"] == {"recipient_speaker": len(flips), "verbatim_quote": 0, "evidence_ids": 0}
    assert result["passed"] == 153 - len(flips)
    # The pilot schema predates contradicted_quote: the quote gate does not apply there, and says so.
    contradicting = Item.objects.filter(item_set=item_set, gold_label="contradicting").count()
    assert result["not_applicable"] == {"verbatim_quote": contradicting}


@pytest.mark.django_db
def test_a_v1_item_without_a_quote_is_still_rejected_by_the_quote_gate(small_twist):
    item = _item(small_twist, "conv-x:1")
    assert item.item_set.schema != "twist-v0"
    item.contradicted_quote = ""
    passed, detail = gate_verbatim_quote(item)
    assert passed is False and "without a contradicted_quote" in detail


@pytest.mark.django_db
def test_a_quote_matches_up_to_case_whitespace_and_final_punctuation(small_twist):
    item = _item(small_twist, "conv-x:1")
    item.contradicted_quote = "  i QUIT the pottery class!  "
    assert gate_verbatim_quote(item)[0] is True


@pytest.mark.django_db
def test_a_quote_that_is_not_in_a_cited_turn_fails(small_twist):
    item = _item(small_twist, "conv-x:1")
    item.contradicted_quote = "I never liked pottery"
    assert gate_verbatim_quote(item)[0] is False


@pytest.mark.django_db
def test_a_contradicting_item_without_a_quote_fails_the_quote_gate(small_twist):
    item = _item(small_twist, "conv-x:1")
    item.contradicted_quote = ""
    assert gate_verbatim_quote(item)[0] is False


@pytest.mark.django_db
def test_an_item_without_evidence_fails_the_evidence_gate(small_twist):
    item = Item.objects.get(item_set=small_twist, external_id="conv-x:2")
    Evidence.objects.filter(item=item).delete()
    ok, detail = gate_evidence_ids(_item(small_twist, "conv-x:2"))
    assert ok is False and "no evidence" in detail


@pytest.mark.django_db
def test_a_malformed_turn_id_fails_the_evidence_gate(small_twist):
    Turn.objects.filter(dia_id="D2:1").update(dia_id="turn-7")
    ok, detail = gate_evidence_ids(_item(small_twist, "conv-x:2"))
    assert ok is False and "turn-7" in detail


@pytest.mark.django_db
def test_a_turn_of_another_conversation_fails_the_evidence_gate(small_twist):
    from items.models import Conversation, Session

    other = Conversation.objects.create(external_id="conv-y", speaker_a="Ana", speaker_b="Cy")
    session = Session.objects.create(conversation=other, number=1, date_time_raw="1 June 2023")
    stranger = Turn.objects.create(conversation=other, session=session, dia_id="D1:1", speaker="Ana", text="Hi", order=0)
    Evidence.objects.create(item=Item.objects.get(external_id="conv-x:2"), turn=stranger, position=5)
    ok, detail = gate_evidence_ids(_item(small_twist, "conv-x:2"))
    assert ok is False and "not a turn of conv-x" in detail


@pytest.mark.django_db
def test_well_formed_evidence_passes_the_evidence_gate(small_twist):
    assert gate_evidence_ids(_item(small_twist, "conv-x:3")) == (True, "")


@pytest.mark.django_db
def test_a_draft_greeting_the_other_participant_raises_the_addressee_warning(small_twist):
    item = _item(small_twist, "conv-x:2")
    item.draft = "Hey Ben, sorry the pottery class did not work out."
    ok, detail = gate_addressee(item)
    assert ok is False and "Ben" in detail


@pytest.mark.django_db
def test_a_draft_naming_the_recipient_raises_no_addressee_warning(small_twist):
    assert gate_addressee(_item(small_twist, "conv-x:1"))[0] is True


@pytest.mark.django_db
def test_the_addressee_warning_does_not_reject_an_item(small_twist):
    item_content_update(Item.objects.filter(external_id="conv-x:2"), draft="Hi Ben! Sorry the pottery class did not work out.")
    result = gates_run(item_set_id=small_twist.pk)
    assert result["warnings"] == {"addressee": 1}
    assert result["passed"] == 3


@pytest.mark.django_db
def test_an_item_failing_two_gates_counts_under_both(small_twist):
    item_content_update(Item.objects.filter(external_id="conv-x:1"), contradicted_quote="")
    Evidence.objects.filter(item__external_id="conv-x:1").update(turn=Turn.objects.get(dia_id="D2:2"))
    result = gates_run(item_set_id=small_twist.pk)
    assert result["rejected_by_gate"]["recipient_speaker"] == 1
    assert result["rejected_by_gate"]["verbatim_quote"] == 1
    assert result["passed"] == 2


@pytest.mark.django_db
def test_the_verification_gate_sees_only_the_dated_excerpts_and_the_draft(small_twist):
    from council.gates import verification_messages

    text = json.dumps(verification_messages(_item(small_twist, "conv-x:1")))
    assert "9:00 am on 9 May, 2023" in text and "I quit the pottery class" in text
    for hidden in ("contradicting", "generator's reason", "I quit the pottery class.\""):
        assert hidden not in text


@pytest.mark.django_db
def test_the_verification_gate_records_a_verdict_per_item_through_the_local_server(small_twist, fake_llm):
    member, _ = council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-ok", timeout_seconds=5)
    result = gates_run(item_set_id=small_twist.pk, llm_member_id=member.pk)
    verdicts = GateVerdict.objects.filter(item_set=small_twist, gate="verification")
    assert verdicts.count() == 3
    assert all(v.detail.startswith("contradicts=") for v in verdicts)
    assert result["rejected_by_gate"]["verification"] == verdicts.filter(passed=False).count()
