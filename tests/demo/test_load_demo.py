import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Assignment, Campaign, Enrollment
from demo.management.commands.load_demo import ACCOUNTS, CHAINS_SET, LAPSE_SET, TWIST_SET, demo_dir
from items.models import Conversation, Evidence, GenerationReject, Item, Turn

FAMILIES = {
    "B1 invented-activity",
    "B2 negated-commitment",
    "B3 stale-assumption",
    "B-AL consistent-message",
    "HN-B1 committed-despite-challenges",
    "HN-B2 acknowledged-pause",
    "HN-B3 change-question",
}
BEHAVIOUR_LABELS = {"PROCEED", "PROCEED-WITH-CAVEAT", "HEDGE", "TEMPLATE", "CONFAB-COMMIT"}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Three demo accounts per load: the default PBKDF2 cost would dominate this module's run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def load_demo(*args) -> dict:
    out = StringIO()
    call_command("load_demo", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def counts() -> dict:
    models = (Conversation, Turn, Item, Evidence, GenerationReject, get_user_model(), Group, Campaign, Enrollment, Assignment)
    return {model.__name__: model.objects.count() for model in models}


def jsonl_lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (demo_dir() / name).read_text().splitlines() if line.strip()]


@pytest.mark.django_db
def test_loading_the_demo_twice_changes_no_count():
    load_demo()
    first = counts()
    second_report = load_demo()
    assert counts() == first
    assert second_report["twist_items"]["created"] == 0
    assert second_report["lapse_items"]["created"] == 0
    assert second_report["chain_items"]["created"] == 0
    assert second_report["users_created"] == []
    assert second_report["campaigns_created"] == []


@pytest.mark.django_db
def test_demo_loads_every_line_of_its_files():
    load_demo()
    # The LoCoMo folder's conversations, and Track C's invented conversation with its version.
    assert Conversation.objects.count() == len(list((demo_dir() / "locomo").glob("*.json"))) + 2
    assert Item.objects.filter(item_set__name=TWIST_SET).count() == len(jsonl_lines("twist_items.jsonl"))
    assert GenerationReject.objects.count() == len(jsonl_lines("twist_rejects.jsonl"))
    assert Item.objects.filter(item_set__name=LAPSE_SET).count() == len(jsonl_lines("lapse_items.jsonl"))
    assert Item.objects.filter(item_set__name=CHAINS_SET).count() == len(jsonl_lines("twist_c/items.jsonl"))


@pytest.mark.django_db
def test_demo_track_c_set_is_its_own_campaign_over_a_conversation_version_with_every_family():
    load_demo()
    campaign = Campaign.objects.get(slug="demo-twist-c")
    assert campaign.protocol == "twist_c" and campaign.item_set.name == CHAINS_SET
    items = Item.objects.filter(item_set__name=CHAINS_SET).select_related("conversation__version_of")
    assert {i.family for i in items} == {"C1", "C2", "C3", "C4", "HN-C1"}
    assert {(i.conversation.external_id, i.conversation.version_of.external_id) for i in items} == {("conv-c.tc1", "conv-c")}


@pytest.mark.django_db
def test_demo_twist_items_cover_the_three_types_and_every_family():
    load_demo()
    twist = Item.objects.filter(kind="twist")
    assert set(twist.values_list("gold_label", flat=True)) == {"contradicting", "aligned", "hard_negative"}
    assert set(twist.values_list("family", flat=True)) == FAMILIES


@pytest.mark.django_db
def test_demo_evidence_is_spoken_by_the_recipient_and_quotes_are_verbatim():
    load_demo()
    items = Item.objects.filter(kind="twist").prefetch_related("evidence__turn")
    for item in items:
        turns = [ev.turn for ev in item.evidence.all()]
        assert turns, item.external_id
        assert {t.speaker for t in turns} == {item.recipient}, item.external_id
        if item.gold_label == "contradicting":
            assert item.contradicted_quote, item.external_id
            assert any(item.contradicted_quote in t.text for t in turns), item.external_id
        else:
            assert item.contradicted_quote == "", item.external_id


@pytest.mark.django_db
def test_demo_history_length_is_the_conversation_length():
    load_demo()
    for item in Item.objects.filter(kind="twist").select_related("conversation"):
        assert item.history_turns == Turn.objects.filter(conversation=item.conversation).count(), item.external_id


@pytest.mark.django_db
def test_demo_lapse_items_cover_the_five_behaviour_labels_and_keep_metadata_hidden():
    load_demo()
    lapse = list(Item.objects.filter(kind="lapse"))
    assert {item.hidden["cascade"] for item in lapse} == BEHAVIOUR_LABELS
    for item in lapse:
        assert item.key_fact and item.request and item.response
        assert {"form", "gap", "frame", "model", "task", "cascade", "judge"} <= set(item.hidden)


@pytest.mark.django_db
def test_demo_campaigns_give_every_item_to_both_annotators():
    load_demo()
    for campaign in Campaign.objects.all():
        items = Item.objects.filter(item_set=campaign.item_set).count()
        enrollments = Enrollment.objects.filter(campaign=campaign).select_related("annotator")
        assert sorted(e.annotator.username for e in enrollments) == ["ann1", "ann2"]
        for enrollment in enrollments:
            assert Assignment.objects.filter(enrollment=enrollment).count() == items


@pytest.mark.django_db
@pytest.mark.parametrize("username,password,groups,admin", ACCOUNTS)
def test_demo_account_logs_in_with_its_published_password(username, password, groups, admin):
    load_demo()
    user = get_user_model().objects.get(username=username)
    assert set(user.groups.values_list("name", flat=True)) == set(groups)
    assert user.is_superuser == admin
    response = Client().post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302 and response.url == "/"


@pytest.mark.django_db
def test_demo_dry_run_writes_nothing():
    before = counts()
    report = load_demo("--dry-run")
    assert report["dry_run"] is True
    assert report["twist_items"]["created"] == len(jsonl_lines("twist_items.jsonl"))
    assert counts() == before


@pytest.mark.django_db
def test_demo_refuses_to_create_public_accounts_in_production(settings):
    settings.GOLDKEY_PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        load_demo()
    assert not get_user_model().objects.filter(username="ann1").exists()
