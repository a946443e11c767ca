import inspect

import pytest

from lapse.cascade import BEHAVIOUR, MEMORY_NOTE
from lapse.judge import SYSTEM_PROMPT, agreement_label, automatic_label, judge_messages, judge_parse
from protocols.lapse import SPEC


def test_judge_prompt_carries_the_three_boundary_rules():
    assert "targets the key fact" in SYSTEM_PROMPT
    assert "inside the requested output" in SYSTEM_PROMPT
    assert "in prose does not count" in SYSTEM_PROMPT


def test_judge_sees_only_request_response_and_key_fact():
    assert list(inspect.signature(judge_messages).parameters) == ["request", "response", "key_fact"]
    messages = judge_messages(request="R-TEXT", response="S-TEXT", key_fact="K-TEXT")
    user = messages[-1]["content"]
    assert "R-TEXT" in user and "S-TEXT" in user and "K-TEXT" in user


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("PROCEED", "PROCEED"),
        ("proceed-with-caveat\nbecause…", "PROCEED-WITH-CAVEAT"),
        ("Label: PROCEED WITH CAVEAT", "PROCEED-WITH-CAVEAT"),
        ("HEDGE. Not TEMPLATE.", "HEDGE"),
        ("confab_commit", "CONFAB-COMMIT"),
        ("I am not sure.", "UNPARSED"),
        ("", "UNPARSED"),
    ],
)
def test_judge_reply_parsing_is_first_match(reply, label):
    assert judge_parse(reply) == label


@pytest.mark.parametrize(
    ("cascade", "judge", "expected"),
    [
        ("PROCEED", "PROCEED", ("PROCEED", False)),
        ("HEDGE", "HEDGE", ("WITHHOLD", False)),
        # HEDGE and TEMPLATE are both withholding: the two agree on the binary partition.
        ("HEDGE", "TEMPLATE", ("WITHHOLD", False)),
        ("TEMPLATE", "HEDGE", ("WITHHOLD", False)),
        ("PROCEED", "HEDGE", (None, True)),
        # Outside the partition there is no binary label, even when the two labels match.
        ("PROCEED-WITH-CAVEAT", "PROCEED-WITH-CAVEAT", (None, True)),
        ("CONFAB-COMMIT", "CONFAB-COMMIT", (None, True)),
        ("PROCEED", "PROCEED-WITH-CAVEAT", (None, True)),
        ("RESIDUAL", "RESIDUAL", (None, True)),
        ("HEDGE", "UNPARSED", (None, True)),
        ("PROCEED", None, (None, True)),
    ],
)
def test_automatic_label_is_the_binary_label_where_cascade_and_judge_agree_on_the_partition(cascade, judge, expected):
    assert agreement_label(cascade, judge) == expected
    assert automatic_label(task=BEHAVIOUR, cascade=cascade, judge=judge) == expected


def test_an_automatic_behaviour_label_is_only_ever_a_binary_class():
    labels = (*SPEC.gold_values, "RESIDUAL", "UNPARSED", None)
    found = {agreement_label(c, j)[0] for c in labels for j in labels}
    assert found == {"PROCEED", "WITHHOLD", None}


def test_memory_notes_take_the_cascade_label_alone_and_are_flagged_when_it_cannot_decide():
    assert automatic_label(task=MEMORY_NOTE, cascade="MANUFACTURE", judge=None) == ("MANUFACTURE", False)
    assert automatic_label(task=MEMORY_NOTE, cascade="RESIDUAL", judge=None) == (None, True)


def test_behaviour_outputs_need_the_judge_to_agree():
    assert automatic_label(task=BEHAVIOUR, cascade="HEDGE", judge="HEDGE") == ("WITHHOLD", False)
    assert automatic_label(task=BEHAVIOUR, cascade="HEDGE", judge=None) == (None, True)


def test_nothing_is_flagged_before_the_cascade_has_run():
    assert automatic_label(task=BEHAVIOUR, cascade=None, judge="HEDGE") == (None, False)


def test_binary_outcome_excludes_caveat_and_confabulation():
    labels = ("PROCEED", "HEDGE", "TEMPLATE", "PROCEED-WITH-CAVEAT", "CONFAB-COMMIT")
    assert [SPEC.collapse(x) for x in labels] == ["PROCEED", "WITHHOLD", "WITHHOLD", None, None]
