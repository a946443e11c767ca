"""A model's reply is untrusted input: a hostile one is a recorded problem, never a crashed task."""

from council.gates import parse_verification
from council.prompts import parse_answer

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_answer_is_a_problem_not_a_recursion_error():
    values, problems = parse_answer(DEEP, "twist_b", ("q1", "q1note"))
    assert values == {} and problems == ["not JSON: nested more than 32 levels deep"]


def test_an_answer_with_nan_is_a_problem():
    values, problems = parse_answer('{"q1": "consistent", "q1note": NaN}', "twist_b", ("q1", "q1note"))
    assert values == {} and problems[0].startswith("not JSON: NaN is not a JSON number")


def test_a_hostile_verification_reply_is_no_verdict():
    assert parse_verification(DEEP) is None
    assert parse_verification('{"contradicts": true, "claim_stated": NaN}') is None
    assert parse_verification('{"contradicts": true, "claim_stated": false}') == {"contradicts": True, "claim_stated": False}
