"""Small synthetic corpora for annotation tests: every hidden value is a distinctive marker string, so
that a blindness test can search response bodies for it."""

import pytest

from annotation.services import campaign_create
from items.models import Conversation, Evidence, Item, Session, Turn
from items.parsing import ParsedLapseItem
from items.services import item_set_get_or_create, lapse_items_create

TYPES = ["contradicting", "aligned", "hard_negative"]


def make_twist_items(n: int, name: str = "synthetic twist", conversation_id: str = "conv-x", crisis: int = 0):
    """n synthetic TWIST items in one conversation (types rotate), each citing one turn of Caroline."""
    item_set = item_set_get_or_create(name=name, kind="twist")
    conversation, _ = Conversation.objects.get_or_create(
        external_id=conversation_id, defaults={"speaker_a": "Caroline", "speaker_b": "Melanie"}
    )
    session, _ = Session.objects.get_or_create(
        conversation=conversation, number=1, defaults={"date_time_raw": "1:56 pm on 8 May, 2023"}
    )
    start = Turn.objects.filter(conversation=conversation).count()
    turns = Turn.objects.bulk_create(
        Turn(
            conversation=conversation,
            session=session,
            dia_id=f"D1:{start + i + 1}",
            speaker="Caroline" if i % 2 == 0 else "Melanie",
            text=f"visible turn text {start + i}",
            order=start + i,
        )
        for i in range(max(2, n) * 2)
    )
    items = Item.objects.bulk_create(
        Item(
            item_set=item_set,
            kind="twist",
            external_id=f"{conversation_id}:s{i:05d}",
            conversation=conversation,
            recipient="Caroline",
            draft=f"Visible draft number {i}",
            gold_label=TYPES[i % 3],
            family=f"SECRET-FAMILY-{conversation_id}-{i}",
            contradicted_quote=f"SECRET-QUOTE-{conversation_id}-{i}" if TYPES[i % 3] == "contradicting" else "",
            rationale=f"SECRET-RATIONALE-{conversation_id}-{i}",
            history_turns=400,
            batch="s",
            hidden={"crisis": True} if i >= n - crisis else {},
        )
        for i in range(n)
    )
    Evidence.objects.bulk_create(
        Evidence(item=item, turn=turns[(i * 2) % len(turns)], position=0) for i, item in enumerate(items)
    )
    return item_set


def make_lapse_items(n: int, name: str = "synthetic lapse"):
    lapse_items_create(
        item_set_name=name,
        items=[
            ParsedLapseItem(
                line=i + 1,
                external_id=f"g{i + 1:03d}",
                request=f"Visible request {i}",
                response=f"Visible response {i}",
                key_fact=f"the Marbury Residences {i}",
                hidden={"form": f"SECRET-FORM-{i}", "gap_days": f"SECRET-GAP-{i}", "model": f"SECRET-MODEL-{i}"},
            )
            for i in range(n)
        ],
        source="test",
    )
    from items.models import ItemSet

    return ItemSet.objects.get(name=name)


def make_judged_items(n: int, name: str = "synthetic judged"):
    """n judged answers (types rotate, every third an abstention item) whose judge, run, date and
    superseded value carry the marker."""
    from protocols.judged import TYPES

    item_set = item_set_get_or_create(name=name, kind="judged")
    Item.objects.bulk_create(
        Item(
            item_set=item_set,
            kind="judged",
            external_id=f"lme-{i:03d}" + ("_abs" if i % 3 == 2 else ""),
            family=TYPES[i % len(TYPES)] + ("_abs" if i % 3 == 2 else ""),
            question=f"Visible question {i}?",
            answer=f"Visible gold answer {i}",
            hypothesis=f"Visible hypothesis {i}",
            hidden={
                "question_date": f"SECRET-DATE-{i}", "run": f"SECRET-RUN-{i}", "previous_answer": f"SECRET-PREVIOUS-{i}",
                "judge": {"label": "yes", "judge_model": f"SECRET-JUDGE-MODEL-{i}"},
            },
        )
        for i in range(n)
    )
    return item_set


def make_chain_items(n: int, name: str = "synthetic chains", conversation_id: str = "conv-y"):
    """n synthetic TWIST Track C items over a version of one conversation, each citing two turns as its
    chain steps; their family, step values and superseded values carry the marker."""
    item_set = item_set_get_or_create(name=name, kind="twist_c")
    original, _ = Conversation.objects.get_or_create(
        external_id=conversation_id, defaults={"speaker_a": "Noor", "speaker_b": "Elias"}
    )
    version, _ = Conversation.objects.get_or_create(
        external_id=f"{conversation_id}.tc1", defaults={"speaker_a": "Noor", "speaker_b": "Elias", "version_of": original}
    )
    session, _ = Session.objects.get_or_create(
        conversation=version, number=1, defaults={"date_time_raw": "9:05 am on 4 February, 2025"}
    )
    start = Turn.objects.filter(conversation=version).count()
    turns = Turn.objects.bulk_create(
        Turn(conversation=version, session=session, dia_id=f"D1:{start + i + 1}", speaker="Noor",
             text=f"visible chain turn {start + i}", order=start + i)
        for i in range(2 * n)
    )
    items = Item.objects.bulk_create(
        Item(
            item_set=item_set, kind="twist_c", external_id=f"{conversation_id}:c{i:05d}", conversation=version,
            gold_label="coexistence" if i % 4 == 3 else "supersession", family=f"SECRET-FAMILY-C{i}",
            question=f"Visible chain question {i}?", answer=f"Visible proposed answer {i}",
            step_values=[f"SECRET-VALUE-{i}-0", f"SECRET-VALUE-{i}-1"],
            superseded=[] if i % 4 == 3 else [f"SECRET-SUPERSEDED-{i}"],
        )
        for i in range(n)
    )
    Evidence.objects.bulk_create(
        Evidence(item=item, turn=turns[2 * i + step], role="step", position=step)
        for i, item in enumerate(items) for step in (0, 1)
    )
    return item_set


@pytest.fixture
def twist_set(db):
    return make_twist_items(6)


@pytest.fixture
def twist_campaign(twist_set, annotator_a, annotator_b):
    return campaign_create(slug="tw", item_set=twist_set, annotators=[annotator_a, annotator_b], seed=7)


@pytest.fixture
def lapse_campaign(db, annotator_a, annotator_b):
    item_set = make_lapse_items(5)
    return campaign_create(slug="lp", item_set=item_set, annotators=[annotator_a, annotator_b], seed=3)


def enrollment_of(campaign, user):
    return campaign.enrollments.select_related("campaign").get(annotator=user)


def answer_all_phase1(enrollment, q1="consistent", finish=True):
    """Answer every open item's Phase 1 question, then (`finish`) finish Phase 1 as the annotator's
    "Finish Phase 1" button does: answering the last item locks nothing by itself."""
    import protocols
    from annotation.services import answer_save, phase1_finish

    spec = protocols.get(enrollment.campaign.protocol)
    key = spec.primary_key
    value = q1 if q1 in spec.primary_choices else spec.primary_choices[0]  # Lapse: PROCEED
    # Every other required Phase 1 choice question (Track C asks three) gets its first choice; optional flags none.
    values = {q.key: q.choices[0] for q in spec.asked(1) if q.choices is not None and not q.optional} | {key: value}
    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
        if assignment.crisis and enrollment.crisis_declined_at:
            continue
        answer_save(assignment=assignment, values=values)
    if finish:
        phase1_finish(enrollment=enrollment)


def answer_all_phase2(enrollment):
    from annotation.services import answer_save

    for assignment in enrollment.assignments.select_related("item", "enrollment__campaign"):
        if assignment.item.gold_label == "contradicting":
            values = {"q2": "yes", "q2quote": "yes"}
        else:
            values = {"q3": "clean"}
        answer_save(assignment=assignment, values=values)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The personas log in a lot here; PBKDF2's deliberate slowness is not what these tests measure.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
