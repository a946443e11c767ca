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


def test_an_endpoints_error_message_is_recorded_without_a_nul_character():
    """An error body's message ends up in the vote's error column: what no column stores is dropped."""
    import httpx2 as httpx
    import openai

    from council.client import PermanentCallError, TransientCallError, _sorted_error

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")

    class Member:
        timeout_seconds = 1.0

    refused = _sorted_error(openai.BadRequestError("bad\x00 request", response=httpx.Response(400, request=request), body=None), Member())
    assert isinstance(refused, PermanentCallError) and str(refused) == "400: bad request"
    busy = _sorted_error(openai.InternalServerError("down\x00", response=httpx.Response(503, request=request), body=None), Member())
    assert isinstance(busy, TransientCallError) and str(busy) == "503 server error: down"
