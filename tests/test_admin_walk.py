"""Every admin changelist, add and change page answers without a server error for a superuser, on GET and on
a POST of the empty form; a read-only model's add page says where its rows come from."""

import pytest
from django.contrib import admin
from django.urls import NoReverseMatch, reverse

pytestmark = pytest.mark.django_db

admin.autodiscover()  # as the URLconf does (settings: SimpleAdminConfig), before the pages are listed


def _admin_pages():
    for model in admin.site._registry:
        meta = model._meta
        for view in ("changelist", "add"):
            yield f"admin:{meta.app_label}_{meta.model_name}_{view}"


@pytest.mark.parametrize("name", sorted(_admin_pages()))
def test_every_admin_list_and_add_page_answers_without_a_server_error(admin_client, name):
    try:
        url = reverse(name)
    except NoReverseMatch:
        pytest.skip(f"{name} has no page")
    response = admin_client.get(url)
    assert response.status_code in (200, 302, 403), (name, response.status_code)
    if name.endswith("_add") and response.status_code == 200:
        # Posting the empty form shows its errors (or refuses); it never fails with a 500.
        posted = admin_client.post(url, {})
        assert posted.status_code in (200, 302, 403), (name, posted.status_code)


def _one_of_each(admin_user, author, annotator_b, outsider) -> None:
    """A row of every model the admin registers: a frozen key from a small campaign, with its council,
    errata, runs, labels and the login records."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from chains.models import ChainRun
    from council.models import CouncilMember, CouncilRun, CouncilVote, GateVerdict, ResponseCache
    from council.services import prompt_version_default
    from items.models import GenerationReject, Item
    from judges.models import JudgeCalibration
    from keys.models import KeyJob
    from keys.services import erratum_file, key_freeze
    from lapse.models import ScorerLabel
    from scoring.models import RunPrediction, ScoreLevelIngest, SystemRun
    from tests.adjudication.conftest import make_campaign

    campaign = make_campaign(slug="walk", n=6, annotators=[author, annotator_b])
    key = key_freeze(campaign=campaign, version="WALK-v1.0", user=author)
    erratum_file(key=key, item_external_id="s-0001", kind="drop", description="a typo", user=outsider)
    KeyJob.objects.create(action="freeze", status="done", target=f"campaign:{campaign.pk}", campaign=campaign, key=key,
                          version=key.version, requested_by=author, result=key)
    item = Item.objects.filter(item_set=campaign.item_set).first()
    member = CouncilMember.objects.create(name="walker", model="m")
    prompt = prompt_version_default(protocol="twist_b")
    run = CouncilRun.objects.create(campaign=campaign, prompt_version=prompt, total_items=6, members_count=1)
    run.members.set([member])
    CouncilVote.objects.create(campaign=campaign, member=member, item=item, prompt_version=prompt.name,
                               values={"q1": "contradicts"}, run=run)
    GateVerdict.objects.create(item_set=campaign.item_set, item=item, gate="recipient_speaker", passed=True, blocking=True)
    ResponseCache.objects.create(model="m", prompt_hash="0" * 64, content="{}")
    GenerationReject.objects.create(item_set=campaign.item_set, external_id="rejected-1", conversation_external_id="conv-walk",
                                    record={}, verdict="unsupported", dropped_by="verifier")
    system_run = SystemRun.objects.create(key=key, system="flatrag", source_name="run.jsonl", source_sha256="0" * 64)
    RunPrediction.objects.create(run=system_run, item_external_id="s-0000", aligned=True)
    ScoreLevelIngest.objects.create(key=key, system="mindtwin", scores={"CR": 0.5}, source_name="s.json", source_sha256="0" * 64)
    calibration = JudgeCalibration.objects.create(item_set=campaign.item_set, member=member, judge="walker", judge_model="m",
                                                  template_version="judged-decoys/2", seed=1, admissible=True)
    ChainRun.objects.create(key=key, system="memsys", source_name="run.jsonl", source_sha256="0" * 64, member=member,
                            judge="walker", judge_model="m", judge_prompt_version="twist-c-judge/1", calibration=calibration,
                            grades={"s-0000": {"gold": True}})
    ScorerLabel.objects.create(item=item, scorer=ScorerLabel._meta.get_field("scorer").choices[0][0], label="PROCEED")
    Token.objects.create(user=admin_user)
    AccessAttempt.objects.create(username="x", ip_address="127.0.0.1", user_agent="t", failures_since_start=1)
    AccessLog.objects.create(username="x", ip_address="127.0.0.1", user_agent="t")
    AccessFailureLog.objects.create(username="x", ip_address="127.0.0.1", user_agent="t", attempt_time=timezone.now())


def test_every_admin_change_page_answers_without_a_server_error_on_get_and_on_an_empty_post(
    admin_client, admin_user, author, annotator_b, outsider
):
    _one_of_each(admin_user, author, annotator_b, outsider)
    walked, failures = [], []
    for model in admin.site._registry:
        meta = model._meta
        obj = model._default_manager.first()
        if obj is None:
            failures.append(f"{meta.label}: no row to walk (add one to _one_of_each)")
            continue
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        got = admin_client.get(url)
        posted = admin_client.post(url, {})
        for method, response in (("GET", got), ("POST", posted)):
            if response.status_code not in (200, 302, 403):
                failures.append(f"{meta.label} {method} {url}: {response.status_code}")
        walked.append(meta.label)
    assert not failures, failures
    assert len(walked) == len(admin.site._registry) >= 20, walked


def test_a_read_only_models_add_page_says_so(admin_client):
    refused = []
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        if model_admin.has_add_permission(admin_client.get("/admin/").wsgi_request):
            continue
        response = admin_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
        refused.append(meta.label)
        body = response.content.decode()
        # Goldkey's own read-only models explain where their rows come from; third-party ones (the login
        # records) answer with the plain refusal.
        if meta.app_label in {"items", "annotation", "council", "adjudication", "keys", "lapse", "chains"}:
            assert response.status_code == 403 and 'data-testid="read-only"' in body, (meta.label, response.status_code)
    assert "council.CouncilVote" in refused and "keys.Erratum" in refused and "items.Item" in refused
