"""Council fixtures: a campaign over the v1 candidates, the local OpenAI-compatible server, members."""

import pytest

from council.fakellm import serve_in_thread

COUNCIL_FILES = {
    "openai-gpt-4o": "twist_v1_answers_openai-gpt-4o.json",
    "anthropic-claude-sonnet-4-6": "twist_v1_answers_anthropic-claude-sonnet-4-6.json",
    "gemini-gemini-3.5-flash": "twist_v1_answers_gemini-gemini-3.5-flash.json",
}


@pytest.fixture
def twist_campaign(twist_corpus, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="twist-v1", item_set=twist_corpus, annotators=[annotator_a, annotator_b], seed=7)


@pytest.fixture
def released_council(twist_campaign, shared_data):
    """The three released council files replayed as votes (GPT-4o marked as the item generator)."""
    from council.services import council_votes_import

    folder = shared_data("twist-v1", "annotation", "council")
    for member, filename in COUNCIL_FILES.items():
        council_votes_import(
            campaign=twist_campaign, path=folder / filename, member_name=member, is_generator=member == "openai-gpt-4o"
        )
    return twist_campaign


@pytest.fixture
def fake_llm():
    server = serve_in_thread(port=0, slow_seconds=2.0, retry_after=0.05)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def small_twist(db):
    """A tiny self-written conversation and three items (one per gold type), built in-app."""
    from items.models import Benchmark, Conversation, Evidence, Item, ItemSet, Session, Track, Turn

    benchmark, _ = Benchmark.objects.get_or_create(slug="twist", defaults={"name": "TWIST"})
    track, _ = Track.objects.get_or_create(benchmark=benchmark, slug="b", defaults={"name": "Track B"})
    item_set = ItemSet.objects.create(track=track, name="small", kind="twist")
    conv = Conversation.objects.create(external_id="conv-x", speaker_a="Ana", speaker_b="Ben")
    s1 = Session.objects.create(conversation=conv, number=1, date_time_raw="9:00 am on 1 May, 2023")
    s2 = Session.objects.create(conversation=conv, number=2, date_time_raw="9:00 am on 9 May, 2023")
    turns = {}
    for order, (session, dia, speaker, text) in enumerate([
        (s1, "D1:1", "Ana", "I signed up for the pottery class, it starts Monday!"),
        (s1, "D1:2", "Ben", "Nice. I'm still training for the marathon."),
        (s2, "D2:1", "Ana", "I quit the pottery class, it was too far away."),
        (s2, "D2:2", "Ben", "Shame! My knee is better now."),
    ]):
        turns[dia] = Turn.objects.create(conversation=conv, session=session, dia_id=dia, speaker=speaker, text=text, order=order)

    def make(external_id, gold_type, draft, evidence, quote=""):
        item = Item.objects.create(
            item_set=item_set, kind="twist", external_id=external_id, conversation=conv, recipient="Ana",
            draft=draft, gold_label=gold_type, contradicted_quote=quote, family="x", rationale="generator's reason",
        )
        for position, dia in enumerate(evidence):
            Evidence.objects.create(item=item, turn=turns[dia], position=position)
        return item

    make("conv-x:1", "contradicting", "Hope the pottery class is going great, Ana!", ["D2:1"], "I quit the pottery class.")
    make("conv-x:2", "aligned", "Sorry the pottery class did not work out.", ["D2:1"])
    make("conv-x:3", "hard_negative", "Are you still doing pottery?", ["D1:1", "D2:1"])
    return item_set


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The personas' passwords are hashed once per test; the default hasher is deliberately slow."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
