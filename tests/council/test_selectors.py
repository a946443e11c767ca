"""Triage bands, flags and pairwise kappa; the real-data replay of the released council files."""

import json
from itertools import combinations

import pytest
from sklearn.metrics import cohen_kappa_score

from council.selectors import band_for, council_report, flags_for, triage
from tests.council.conftest import COUNCIL_FILES


def test_every_member_matching_gold_is_unanimous_match():
    assert band_for("contradicts", ["contradicts"] * 3, protocol="twist_b") == "unanimous_match"


def test_abstentions_are_not_votes_against_gold():
    assert band_for("contradicts", ["contradicts", "cannot-tell", "cannot-tell"], protocol="twist_b") == "abstain_heavy"


def test_two_of_three_opposite_votes_are_majority_against():
    assert band_for("consistent", ["contradicts", "contradicts", "consistent"], protocol="twist_b") == "majority_against"


def test_two_of_three_matching_votes_are_majority_match():
    assert band_for("consistent", ["consistent", "cannot-tell", "consistent"], protocol="twist_b") == "majority_match"


def test_a_missing_vote_prevents_unanimous_match():
    assert band_for("consistent", ["consistent", "consistent", None], protocol="twist_b") == "majority_match"


def test_q2_no_and_q3_conflict_are_flagged_per_member():
    flags = flags_for({"m1": {"q2": "no"}, "m2": {"q3": "conflict", "q3turn": "D3:4"}, "m3": {"q2": "yes"}}, protocol="twist_b")
    assert flags == [
        {"member": "m1", "flag": "q2_no", "turn": ""},
        {"member": "m2", "flag": "q3_conflict", "turn": "D3:4"},
    ]


def _released_answers(shared_data) -> dict[str, dict]:
    folder = shared_data("twist-v1", "annotation", "council")
    return {member: json.loads((folder / name).read_text())["answers"] for member, name in COUNCIL_FILES.items()}


@pytest.mark.django_db
def test_replaying_the_released_council_reproduces_the_papers_bands(released_council, shared_data):
    """TWIST §5.1: 115 unanimously match gold, 43 majority match, 34 abstain-heavy, 8 majority against."""
    report = council_report(released_council)
    # Independently of Goldkey: count the bands from the raw files and the candidates' gold types.
    answers = _released_answers(shared_data)
    candidates = [json.loads(line) for line in shared_data("twist-v1", "track_b_items_v1_candidates.jsonl").open()]
    expected = {"unanimous_match": 0, "majority_match": 0, "abstain_heavy": 0, "majority_against": 0}
    for item in candidates:
        gold = "contradicts" if item["type"] == "contradicting" else "consistent"
        q1 = [answers[m].get(item["id"], {}).get("q1") for m in answers]
        match, against = sum(v == gold for v in q1), sum(v not in (gold, "cannot-tell", None) for v in q1)
        band = ("unanimous_match" if match == 3 else "majority_against" if against >= 2
                else "majority_match" if match >= 2 else "abstain_heavy")
        expected[band] += 1
    assert report["bands"] == expected
    assert report["bands"] == {"unanimous_match": 115, "majority_match": 43, "abstain_heavy": 34, "majority_against": 8}


@pytest.mark.django_db
def test_pairwise_kappa_claude_gemini_is_the_papers_055_on_q1_over_all_items(released_council, shared_data):
    """The reading that gives the paper's κ(Claude, Gemini) = 0.55: q1 on all 200 candidates, three
    categories (cannot-tell is its own category). Dropping cannot-tell gives 0.73; binary readings ~0.6."""
    report = council_report(released_council)
    answers = _released_answers(shared_data)
    ids = sorted(answers["anthropic-claude-sonnet-4-6"])
    for a, b in combinations(sorted(answers), 2):
        ours = report["pairwise_kappa"][f"{a}|{b}"]
        reference = cohen_kappa_score([answers[a][i]["q1"] for i in ids], [answers[b][i]["q1"] for i in ids])
        assert ours == pytest.approx(reference, abs=1e-4)
        assert report["pairwise_n"][f"{a}|{b}"] == 200
    assert round(report["pairwise_kappa"]["anthropic-claude-sonnet-4-6|gemini-gemini-3.5-flash"], 2) == 0.55


@pytest.mark.django_db
def test_the_generator_member_is_disclosed_in_the_report(released_council):
    report = council_report(released_council)
    assert [m["name"] for m in report["members"] if m["is_generator"]] == ["openai-gpt-4o"]
    assert "openai-gpt-4o" in report["circularity"]


@pytest.mark.django_db
def test_triage_reads_a_constant_number_of_queries(released_council, django_assert_max_num_queries):
    with django_assert_max_num_queries(3):
        data = triage(released_council)
    assert len(data["rows"]) == 200
