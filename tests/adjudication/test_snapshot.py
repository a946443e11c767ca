"""The campaign snapshot batch work reads, and the queue's per-combination memo against the plain path."""

import random

import pytest

from adjudication import queue as q
from adjudication import selectors
from adjudication.agreement import campaign_agreement
from council.models import CouncilMember, CouncilVote
from items.models import Item
from tests.adjudication.conftest import make_twist_campaign

pytestmark = pytest.mark.django_db

Q1 = ["contradicts", "consistent", "cannot-tell", ""]
YES_NO = ["yes", "no", ""]


def _random_answer(rng: random.Random) -> dict:
    values = {"q1": rng.choice(Q1), "q2": rng.choice(YES_NO), "q2quote": rng.choice(YES_NO),
              "q3": rng.choice(["clean", "conflict", ""]), "q3turn": rng.choice(["D1:3", "D2:4", ""])}
    return {k: v for k, v in values.items() if v and rng.random() < 0.9}


@pytest.fixture
def mixed_campaign(annotator_a, annotator_b):
    """60 items over every gold type with repeating random answers (the memo's case), a few unanswered,
    and council votes on some items."""
    rng = random.Random(20261201)
    pool = [_random_answer(rng) for _ in range(8)]
    answers = {f"conv-{n % 3 + 1}:v1b{n}": (rng.choice(pool), rng.choice(pool + [{}])) for n in range(60)}
    gold = {item_id: rng.choice(["contradicting", "aligned", "hard_negative"]) for item_id in answers}
    campaign = make_twist_campaign([annotator_a, annotator_b], answers, gold=gold)
    members = [CouncilMember.objects.create(name=name) for name in ("gpt", "claude", "gemini")]
    for item in Item.objects.filter(item_set=campaign.item_set).order_by("external_id")[:20]:
        for member in members:
            CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version="v1",
                                       values={"q1": rng.choice(Q1[:3])})
    return campaign


def test_the_memoised_queue_equals_the_plain_path_item_by_item(mixed_campaign):
    data = selectors.campaign_data(mixed_campaign)
    plain = []
    for item in data.items:
        ballots = data.council.get(item.id)
        answers = data.answer_list(item.id)
        votes = [b.values for b in ballots] if ballots else None
        reasons = q.queue_reasons(item.gold_label, answers, votes, protocol=data.protocol)
        if reasons:
            action, why = q.suggestion(item.gold_label, answers, reasons, protocol=data.protocol)
            plain.append((item.external_id, reasons, action, why))
    plain.sort(key=lambda row: q.sort_key(row[2], row[0]))
    memoised = [(e.item.external_id, e.reasons, e.suggestion, e.suggestion_why) for e in selectors.queue_from_data(data)]
    assert memoised == plain
    assert len({tuple(r) for _, r, _, _ in plain}) > 3  # the case is not trivial: several reason sets


def test_the_loaded_answers_are_read_only(mixed_campaign):
    data = selectors.campaign_data(mixed_campaign)
    answer = next(a for per_item in data.answers.values() for a in per_item.values() if a)
    with pytest.raises(TypeError):
        answer["q1"] = "consistent"


def test_a_snapshot_holds_the_queue_and_the_retained_set_of_its_load(mixed_campaign):
    snapshot = selectors.campaign_snapshot(mixed_campaign)
    data = snapshot.data
    assert [e.item.id for e in snapshot.queue] == [e.item.id for e in selectors.queue_from_data(data)]
    assert list(snapshot.retained) == selectors.retained_from_data(data)
    assert snapshot.undecided == [e for e in snapshot.queue if e.needs_decision] and snapshot.undecided


def test_agreement_from_a_snapshot_equals_agreement_from_a_fresh_load(mixed_campaign):
    snapshot = selectors.campaign_snapshot(mixed_campaign)
    assert campaign_agreement(mixed_campaign, snapshot=snapshot) == campaign_agreement(mixed_campaign)


def test_the_memoised_agreement_cells_equal_the_plain_path_item_by_item(mixed_campaign):
    from adjudication import agreement

    data = selectors.campaign_data(mixed_campaign)
    pairs: dict = {}
    cells = list(agreement._verdict_cells(data, pairs))
    plain = []
    for item in data.items:
        answers = data.answer_list(item.id) + [{}, {}]
        pair, q2, quote = agreement._answer_pairs(answers[0], answers[1], data.spec.primary_key)
        plain.append((pair, item.gold_label, agreement._history_bucket(item.history_turns), item.family or "(none)",
                      item.batch, q2, quote))
    assert cells == plain
    assert pairs == {item.id: cell[0] for item, cell in zip(data.items, plain, strict=True)}


def test_council_votes_share_values_only_when_their_content_and_types_are_equal():
    shared: dict = {}
    first = selectors._shared_values({"q1": "consistent"}, shared)
    assert selectors._shared_values({"q1": "consistent"}, shared) is first
    assert selectors._shared_values({"q1": 1}, shared) is not selectors._shared_values({"q1": True}, shared)
    nested = selectors._shared_values({"q1": "consistent", "turns": ["D1:3"]}, shared)
    assert nested == {"q1": "consistent", "turns": ["D1:3"]} and nested is not first
    with pytest.raises(TypeError):
        first["q1"] = "contradicts"


def test_answers_decode_once_by_one_rule_for_the_agreement_keys_and_the_whole_answer(mixed_campaign):
    """The snapshot's agreement values and the whole answers a release ships come from one read of the
    stored text: non-string JSON (written past validation) is the decoded value on every database,
    not json_extract's 1 nor `->>`'s 'true'; falsy values are no answer."""
    from annotation.models import Answer

    answer = Answer.objects.filter(assignment__enrollment__campaign=mixed_campaign).order_by("id").first()
    Answer.objects.filter(pk=answer.pk).update(values={"q1": True, "q2": 0, "q3": ["D1:3"], "q3turn": "", "q1note": "n"})
    data = selectors.campaign_data(mixed_campaign, full_answers=True)
    item_id, pseudonym = answer.assignment.item_id, answer.assignment.enrollment.pseudonym
    assert data.answers[item_id][pseudonym] == {"q1": True, "q3": ["D1:3"]}
    assert data.full_answers[item_id][pseudonym] == {"q1": True, "q2": 0, "q3": ["D1:3"], "q3turn": "", "q1note": "n"}
    # Every answer the release would ship, and the agreement values of each, from the same decoding.
    stored = {(a.assignment.item_id, a.assignment.enrollment.pseudonym): a.values
              for a in Answer.objects.filter(assignment__enrollment__campaign=mixed_campaign).select_related("assignment__enrollment")}
    assert {(i, p): v for i, per_item in data.full_answers.items() for p, v in per_item.items()} == {
        k: v for k, v in stored.items() if v}
    keys = data.spec.agreement_keys
    for (item_id, pseudonym), values in stored.items():
        assert data.answers[item_id][pseudonym] == {k: values[k] for k in keys if values.get(k)}
    assert selectors.campaign_data(mixed_campaign).full_answers is None  # kept only when asked for


def test_the_decoder_shares_agreement_values_by_content_and_type():
    decoder = selectors.AnswerDecoder(("q1", "q2"))
    first = decoder.agreement('{"q1": "consistent", "note": "a"}')
    assert decoder.agreement('{"q1": "consistent", "note": "b"}') is first  # notes are not agreement keys
    assert decoder.agreement('{"q1": 1}') is not decoder.agreement('{"q1": true}')
    assert decoder.agreement('{"q1": 1}') == {"q1": 1} and decoder.agreement('{"q1": true}') == {"q1": True}
    assert decoder.agreement("[1, 2]") == {} and decoder.agreement(None) == {}
    assert decoder.values('{"q1": "x"}') is decoder.values('{"q1": "x"}')  # each distinct text decoded once


def test_the_tabled_retained_figures_equal_the_plain_path(mixed_campaign, author):
    """twist_retained sums a table keyed by the shared answers' identities: the same counts as one
    look at every retained item."""
    from adjudication import agreement
    from tests.adjudication.conftest import decide

    queued = [e for e in selectors.campaign_snapshot(mixed_campaign).queue if e.needs_decision]
    for n, entry in enumerate(queued):
        action, new_gold = [("keep", ""), ("relabel", "aligned"), ("drop", "")][n % 3]
        decide(mixed_campaign, entry.item.external_id, action, author, new_gold)
    snapshot = selectors.campaign_snapshot(mixed_campaign)
    data = snapshot.data
    result = agreement.twist_retained(data, snapshot.queue, retained=snapshot.retained)
    spec, retained = data.spec, snapshot.retained
    detail = {p: {"agree": 0, "n": 0} for p in data.pseudonyms}
    for item, final_gold, _how in retained:
        for pseudonym, answer in data.answers.get(item.id, {}).items():
            if answer.get("q1"):
                detail[pseudonym]["n"] += 1
                detail[pseudonym]["agree"] += answer["q1"] == spec.verdict_of(final_gold)
    assert {p: {"agree": v["agree"], "n": v["n"]} for p, v in result["gold_agreement_detail"].items()} == detail
    assert result["by_type"] == {t: n for t in spec.gold_values if (n := sum(1 for _, g, _ in retained if g == t))}
    assert result["by_how"] == {how: sum(1 for *_, h in retained if h == how) for how in sorted({h for *_, h in retained})}
    assert result["relabelled"] == sum(1 for *_, h in retained if h == "relabelled") > 0
    assert len(result["by_how"]) >= 2 and result["n"] == len(retained)


def test_one_items_answers_are_read_in_one_statement_without_a_server_side_cursor(mixed_campaign):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Answer

    answer = Answer.objects.filter(assignment__enrollment__campaign=mixed_campaign).exclude(values={}).order_by("id").first()
    item_id = answer.assignment.item_id
    with CaptureQueriesContext(connection) as queries:
        answers = selectors.full_answers(mixed_campaign, item_id)
    assert answers[item_id][answer.assignment.enrollment.pseudonym] == answer.values
    # On PostgreSQL a chunked read is a declared cursor (DECLARE, FETCH, CLOSE): three round trips an item
    # page would pay for two rows.
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]
    # The whole campaign is still read in chunks.
    assert len(selectors.full_answers(mixed_campaign)) == len({a.assignment.item_id for a in Answer.objects.filter(
        assignment__enrollment__campaign=mixed_campaign).exclude(values={})})
