"""Decoy calibration against the real local OpenAI-compatible server (council/fakellm.py) through the
`openai` SDK: a strict judge is admissible, a judge lenient to stale-as-current answers is not."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from council.services import council_member_add
from goldkey.lib import statistics as st
from judges.models import JudgeCalibration
from judges.services import calibration_figures, decoy_set, judge_calibration_run
from protocols import judged

pytestmark = pytest.mark.django_db


def calibrate(*args) -> dict:
    out = StringIO()
    call_command("decoy_calibration", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def member(fake_llm, name, model):
    return council_member_add(name=name, base_url=fake_llm.base_url, model=model, timeout_seconds=5.0)[0]


def expected_counts(judged_set, seed=1):
    records, _ = decoy_set(item_set=judged_set, seed=seed)
    return {cls: sum(r["class"] == cls for r in records) for cls in judged.DECOY_CLASSES}


def test_a_strict_judge_rejects_every_decoy_class_and_is_admissible(judged_set, fake_llm, admin_user):
    member(fake_llm, "strict", "fake-judge-strict")
    result = calibrate(judged_set.name, "--judge", "strict", "--seed", "1")
    counts = expected_counts(judged_set)
    assert counts == {judged.STALE: 3, judged.PERTURBED: 10, judged.NON_ANSWER: 11, judged.UNORDERED: 3}
    assert set(result["classes"]) == set(judged.DECOY_CLASSES)
    for cls, figures in result["classes"].items():
        n = counts[cls]
        lo, hi = st.wilson_interval(n, n)
        assert {k: figures[k] for k in ("n", "rejected", "rate", "wilson")} == {"n": n, "rejected": n, "rate": 1.0, "wilson": [lo, hi]}
    assert result["gold"] == {"n": 11, "accepted": 11, "rate": 1.0, "wilson": list(st.wilson_interval(11, 11))}
    assert result["admissible"] is True
    stored = JudgeCalibration.objects.get(pk=result["calibration"])
    assert stored.admissible and stored.judge_model == "fake-judge-strict" and stored.template_version == judged.DECOY_VERSION
    assert stored.response_models == "fake-judge-strict"  # what the endpoint said answered, once for 38 replies
    assert all(r["version"] == judged.DECOY_VERSION for r in stored.records) and len(stored.replies) == 38


def test_a_judge_whose_replies_end_in_a_nul_character_is_calibrated_on_what_it_said(judged_set, fake_llm, admin_user):
    member(fake_llm, "strict-nul", "fake-judge-strict-nul-reply")
    result = calibrate(judged_set.name, "--judge", "strict-nul", "--seed", "1")
    assert result["admissible"] is True
    stored = JudgeCalibration.objects.get(pk=result["calibration"])
    assert len(stored.replies) == 38 and set(stored.replies.values()) == {"yes", "no"}


def test_a_judge_lenient_to_stale_answers_fails_that_class_and_is_not_admissible(judged_set, fake_llm, admin_user):
    member(fake_llm, "lenient", "fake-judge-lenient-stale")
    result = calibrate(judged_set.name, "--judge", "lenient", "--seed", "1")
    stale = result["classes"][judged.STALE]
    assert (stale["n"], stale["rejected"], stale["rate"], stale["clears"]) == (3, 0, 0.0, False)
    assert stale["wilson"] == list(st.wilson_interval(0, 3))
    assert all(result["classes"][c]["rate"] == 1.0 for c in judged.DECOY_CLASSES if c != judged.STALE)
    assert result["admissible"] is False
    assert not JudgeCalibration.objects.get(pk=result["calibration"]).admissible


def test_a_random_judge_is_seeded_so_the_calibration_repeats_exactly(judged_set, fake_llm, admin_user):
    judge = member(fake_llm, "coin", "fake-judge-random-7")
    first = judge_calibration_run(item_set=judged_set, member=judge, seed=3)
    second = judge_calibration_run(item_set=judged_set, member=judge, seed=3)
    assert first.replies == second.replies and first.results == second.results
    rejected = sum(c["rejected"] for c in first.results["classes"].values())
    assert 0 < rejected < 27 and not first.admissible  # a coin rejects some decoys, not 95% of every class


def test_the_mixed_order_is_seeded_and_ids_say_nothing_of_provenance(judged_set):
    one, _ = decoy_set(item_set=judged_set, seed=1)
    again, _ = decoy_set(item_set=judged_set, seed=1)
    other, _ = decoy_set(item_set=judged_set, seed=2)
    assert one == again
    assert [r["class"] for r in one] != [r["class"] for r in other]
    assert [r["id"] for r in one] == [f"c{n:04d}" for n in range(1, len(one) + 1)]
    prompt = judged.calibration_prompt(one[0])
    for leak in (one[0]["class"], one[0]["source"], "decoy", judged.DECOY_VERSION):
        assert leak not in prompt


def test_the_decoy_set_is_exported_as_jsonl_for_a_rerun_elsewhere(judged_set, tmp_path):
    path = tmp_path / "decoys.jsonl"
    result = calibrate(judged_set.name, "--export", str(path), "--seed", "1")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == result["records"] == 38
    assert records == decoy_set(item_set=judged_set, seed=1)[0]
    assert set(records[0]) == {"id", "source", "question_type", "abstention", "question", "answer", "response",
                               "class", "slot", "version"}
    assert "calibration" not in result and not JudgeCalibration.objects.exists()


def test_a_judge_whose_calls_fail_records_no_calibration(judged_set, fake_llm, admin_user):
    member(fake_llm, "broken", "fake-500-always")
    with pytest.raises(CommandError, match="judge 'broken' could not grade the decoy set: .*nothing recorded"):
        calibrate(judged_set.name, "--judge", "broken")
    assert not JudgeCalibration.objects.exists()


def test_an_unknown_item_set_or_judge_is_a_clear_error(judged_set, admin_user):
    with pytest.raises(CommandError, match="no item set 'nope'"):
        calibrate("nope", "--judge", "x")
    with pytest.raises(CommandError, match="no council member\\(s\\) named ghost"):
        calibrate(judged_set.name, "--judge", "ghost")


def test_a_class_without_decoys_has_not_cleared_the_bar():
    records = [{"id": "c1", "class": judged.PERTURBED}, {"id": "c2", "class": judged.NON_ANSWER},
               {"id": "c3", "class": judged.GOLD}]
    figures = calibration_figures(records, {"c1": "incorrect", "c2": "incorrect", "c3": "correct"})
    assert figures["classes"][judged.STALE] == {"n": 0, "rejected": 0, "rate": None, "wilson": [0.0, 0.0], "clears": False}
    assert figures["classes"][judged.PERTURBED]["clears"] and not figures["admissible"]


def test_the_bar_is_on_the_point_rate_of_every_class():
    # 19 of 20 rejected is exactly 95%: it clears, though its Wilson lower bound (0.764) does not.
    records = [{"id": f"{cls}{n}", "class": cls} for cls in judged.DECOY_CLASSES for n in range(20)]
    verdicts = {r["id"]: "incorrect" for r in records}
    verdicts[f"{judged.STALE}0"] = "correct"
    figures = calibration_figures(records, verdicts)
    stale = figures["classes"][judged.STALE]
    assert stale["rate"] == 0.95 and stale["clears"] and stale["wilson"][0] < 0.95 and figures["admissible"]
    verdicts[f"{judged.STALE}1"] = ""  # an unparsed reply is no rejection
    figures = calibration_figures(records, verdicts)
    assert figures["classes"][judged.STALE]["rate"] == 0.9 and not figures["admissible"] and figures["unparsed"] == 1
