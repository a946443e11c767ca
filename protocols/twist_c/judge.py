"""How a judge grades a Track C answer: the prompt per query kind (Goldkey's wording: the sources publish
none), and the two questions asked of a run's answer, whose yes / no the metrics read."""

from protocols.twist_c.chain import CURRENT, HISTORY, HN_C1, POST_RESOLUTION, ChainItem

# The judge's prompt for a Track C answer (Goldkey's wording: the sources publish none). LongMemEval's
# knowledge-update rubric accepts "previous information along with an updated answer", which would pass an
# unordered both-states answer; here the rubric says which form each query kind requires.
JUDGE_PROMPT_VERSION = "twist-c-judge/1"
RUBRICS = {
    CURRENT: (
        "I will give you a question about the current state of something, the correct answer, and a response from a "
        "model. Answer yes only if the response gives the correct answer as what holds now. If the response asserts "
        "an earlier, replaced belief as current, changes a detail of the answer, or commits to no answer, answer no. "
        "Where the correct answer names several facts that all hold now, the response must give all of them."
    ),
    HISTORY: (
        "I will give you a question about how something changed, the correct answer, and a response from a model. "
        "Answer yes only if the response names every state in the correct answer in the order they happened, the "
        "latest as the current one. If it lists the states without saying which came first, leaves one out, "
        "presents an earlier state as current, changes a detail, or commits to no answer, answer no."
    ),
}
JUDGE_PROMPT = "{rubric}\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n" \
    "Is the model response correct? Answer yes or no only."


def judge_prompt(*, query_kind: str, question: str, answer: str, response: str) -> str:
    """The prompt a judge grades one Track C answer (a decoy, a gold answer, a run's answer) with."""
    return JUDGE_PROMPT.format(rubric=RUBRICS[query_kind], question=question, answer=answer, response=response)


def answer_prompts(item: ChainItem, response: str) -> dict[str, str]:
    """The prompts a run's answer is graded with: "gold" (is it the right answer for its query kind?) and,
    for an update chain, "stale" (does it give the belief the current one replaced as what holds now?).
    A post-resolution probe is a current-state question asked again after `resolve`."""
    kind = CURRENT if item.query_kind == POST_RESOLUTION else item.query_kind
    prompts = {"gold": judge_prompt(query_kind=kind, question=item.question, answer=item.gold, response=response)}
    if item.family != HN_C1:
        prompts["stale"] = judge_prompt(query_kind=CURRENT, question=item.question, answer=item.superseded[-1],
                                        response=response)
    return prompts
