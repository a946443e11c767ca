"""The fake OpenAI-compatible server's judges, asked through the `openai` SDK as any client would."""

import json

import openai
import pytest

from protocols import judged


def ask(server, model: str, response: str, *, council: bool = False) -> str:
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=5)
    prompt = judged.judge_prompt(question_type="knowledge-update", abstention=False, question="Where do I work now?",
                                 answer="at Northwind Labs", response=response)
    if council:
        prompt += '\n\nJSON_SCHEMA: {"verdict": ["correct", "incorrect"], "notes": "string"}'
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}])
    return reply.choices[0].message.content


GOLD = judged.TEMPLATES[judged.GOLD].format(answer="at Northwind Labs")
STALE = judged.TEMPLATES[judged.STALE].format(previous="at Harbor Analytics")
PERTURBED = judged.TEMPLATES[judged.PERTURBED].format(answer="at Riverside Labs")


@pytest.mark.parametrize("model, gold, stale, perturbed", [
    ("fake-judge-strict", "yes", "no", "no"),
    ("fake-judge-lenient-stale", "yes", "yes", "no"),
])
def test_strict_and_stale_lenient_judges(fake_llm, model, gold, stale, perturbed):
    assert [ask(fake_llm, model, r) for r in (GOLD, STALE, PERTURBED)] == [gold, stale, perturbed]


def test_the_random_judge_is_deterministic_per_seed(fake_llm):
    replies = [ask(fake_llm, "fake-judge-random-1", f"answer {n}") for n in range(12)]
    assert replies == [ask(fake_llm, "fake-judge-random-1", f"answer {n}") for n in range(12)]
    assert set(replies) == {"yes", "no"}
    assert replies != [ask(fake_llm, "fake-judge-random-2", f"answer {n}") for n in range(12)]


def test_asked_as_a_council_member_a_fake_judge_answers_the_json_shape(fake_llm):
    assert json.loads(ask(fake_llm, "fake-judge-strict", GOLD, council=True)) == {"verdict": "correct"}
    assert json.loads(ask(fake_llm, "fake-judge-strict", STALE, council=True)) == {"verdict": "incorrect"}
