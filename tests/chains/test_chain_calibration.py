"""Decoy calibration of a judge on a TWIST Track C set: decoys built from the chains (judged-decoys/2), graded
through the council's client by the local OpenAI-compatible server's judges."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from council.services import council_member_add
from goldkey.errors import ApplicationError
from items.models import Item
from judges.services import calibration_set_of, judge_calibration_run
from protocols import judged
from protocols.twist_c import decoys

pytestmark = pytest.mark.django_db


@pytest.fixture
def chains(demo_chains):
    return demo_chains


def test_the_decoy_calibration_command_gives_every_class_a_non_empty_count_on_a_track_c_set(chains, fake_llm, author):
    council_member_add(name="strict", base_url=fake_llm.base_url, model="fake-judge-strict", timeout_seconds=5)
    out = StringIO()
    call_command("decoy_calibration", "chains", "--judge", "strict", "--by", author.username, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["template_version"] == decoys.DECOY_VERSION
    assert all(result["classes"][cls]["n"] > 0 for cls in decoys.DECOY_CLASSES)
    assert result["gold"]["n"] > 0 and result["admissible"] is True


def test_every_record_carries_the_chain_decoy_version_and_gold_answers_are_mixed_in(chains):
    calibration = calibration_set_of(item_set=chains, seed=3)
    assert {r["version"] for r in calibration.records} == {decoys.DECOY_VERSION}
    assert any(r["class"] == judged.GOLD for r in calibration.records)
    assert calibration.not_built == {}


def test_a_judge_that_accepts_stale_answers_is_not_admissible_and_the_stale_class_fails(chains, fake_llm):
    member, _ = council_member_add(name="lenient", base_url=fake_llm.base_url, model="fake-judge-lenient-stale", timeout_seconds=5)
    calibration = judge_calibration_run(item_set=chains, member=member, seed=1)
    assert not calibration.admissible
    assert not calibration.results["classes"][judged.STALE]["clears"]
    assert any(f.startswith(judged.STALE) for f in calibration.results["failing"])


def test_a_class_that_applies_to_no_chain_of_the_set_is_not_applicable_not_failed(chains, fake_llm):
    Item.objects.filter(item_set=chains, family="C3").delete()  # no history-aware probe left
    member, _ = council_member_add(name="strict", base_url=fake_llm.base_url, model="fake-judge-strict", timeout_seconds=5)
    calibration = judge_calibration_run(item_set=chains, member=member, seed=1)
    assert calibration.results["classes"][judged.UNORDERED]["not_applicable"]
    assert calibration.admissible


def test_a_set_without_a_current_or_history_probe_is_refused(chains):
    Item.objects.filter(item_set=chains).exclude(family="C4").delete()
    with pytest.raises(ApplicationError, match="no current-state or history-aware chain"):
        calibration_set_of(item_set=chains, seed=1)
