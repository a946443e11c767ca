"""TWIST Track C's verification-as-seen gate, through the council's client and the local OpenAI-compatible server."""

import pytest

from chains.gates import GATE, chain_items, chain_verification_run
from council.models import GateVerdict, ResponseCache
from council.services import council_member_add
from goldkey.errors import ApplicationError
from items.models import Item
from protocols.twist_c import chain as tc
from tests.conftest import TWIST_C_DEMO as DEMO

pytestmark = pytest.mark.django_db


@pytest.fixture
def chains(demo_chains):
    return demo_chains


def test_a_stored_item_gives_back_the_chain_its_line_gave(chains):
    lines = {i.id: i for i in (tc.validate_line(t)[0] for t in (DEMO / "items.jsonl").read_text().splitlines() if t)}
    for _, chain in chain_items(chains):
        assert chain.model_dump() == lines[chain.id].model_dump()


def test_a_careful_verifier_passes_every_family_and_each_verdict_names_the_prompt_version(chains, fake_llm):
    member, _ = council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-chain-verifier", timeout_seconds=5)
    result = chain_verification_run(item_set_id=chains.pk, llm_member_id=member.pk)
    assert result["checked"] == Item.objects.filter(item_set=chains).count() and result["rejected"] == 0
    assert set(result["by_family"]) == set(tc.FAMILIES)
    verdicts = GateVerdict.objects.filter(item_set=chains, gate=GATE)
    assert verdicts.count() == result["checked"] and all(v.detail.startswith(tc.VERIFY_PROMPT_VERSION) for v in verdicts)
    assert not Item.objects.filter(item_set=chains, gate_rejected=True).exists()


def test_a_verifier_that_cannot_read_the_chain_rejects_every_item_with_its_reasons(chains, fake_llm):
    member, _ = council_member_add(name="guesser", base_url=fake_llm.base_url, model="fake-ok", timeout_seconds=5)
    result = chain_verification_run(item_set_id=chains.pk, llm_member_id=member.pk)
    assert result["rejected"] == result["checked"] > 0
    assert Item.objects.filter(item_set=chains, gate_rejected=True).count() == result["checked"]
    assert all("verification:" in v.detail or "no verdict" in v.detail for v in GateVerdict.objects.filter(gate=GATE))


def test_the_verifier_sees_only_the_dated_steps(chains, fake_llm):
    member, _ = council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-chain-verifier", timeout_seconds=5)
    chain_verification_run(item_set_id=chains.pk, llm_member_id=member.pk)
    for item, chain in chain_items(chains):
        prompt, _ = tc.verification_prompt(chain)
        for hidden in (item.external_id, f"({item.family})", chain.question, chain.gold):
            assert hidden not in prompt
    # One call per distinct prompt went through the client (its replies cached: a re-run asks nothing again).
    prompts = {tc.verification_prompt(chain)[0] for _, chain in chain_items(chains)}
    assert ResponseCache.objects.filter(model="fake-chain-verifier").count() == len(prompts)


def test_a_rejected_chain_is_not_taken_by_a_campaign(chains, fake_llm, annotator_a, annotator_b):
    from annotation.services import campaign_create

    member, _ = council_member_add(name="guesser", base_url=fake_llm.base_url, model="fake-ok", timeout_seconds=5)
    chain_verification_run(item_set_id=chains.pk, llm_member_id=member.pk)
    with pytest.raises(ApplicationError, match="rejected"):
        campaign_create(slug="tc", item_set=chains, annotators=[annotator_a, annotator_b], seed=1)


def test_the_council_gates_page_offers_a_track_c_set_its_verification_gate_through_a_member_only(client, author, chains, fake_llm):
    from django.urls import reverse

    council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-chain-verifier", timeout_seconds=5)
    client.force_login(author)
    body = client.get(reverse("council:index")).content.decode()
    row = body.split(f"<tr><td>{chains.name}</td>")[1].split("</tr>")[0]
    assert 'value="verifier"' in row and "structural only" not in row


def test_an_author_queues_a_track_c_sets_verification_gate_from_the_gates_page(client, author, chains, fake_llm, monkeypatch,
                                                                              django_capture_on_commit_callbacks):
    from django.urls import reverse

    from council import tasks

    member, _ = council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-chain-verifier", timeout_seconds=5)
    sent = []
    monkeypatch.setattr(tasks.gates_run_task, "delay", lambda *args: sent.append(args))
    client.force_login(author)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("council:gates-start", args=[chains.pk]), {"llm": "verifier"}).status_code == 302
    assert sent == [(chains.pk, member.pk)]
    tasks.gates_run_task.run(*sent[0])  # what the worker does with it
    assert GateVerdict.objects.filter(item_set=chains, gate=GATE).count() == Item.objects.filter(item_set=chains).count()
    body = client.get(reverse("council:index")).content.decode()
    assert f"<tr><td>{chains.name}</td><td>{Item.objects.filter(item_set=chains).count()}</td>" in body


def test_a_track_c_sets_gate_without_a_member_is_refused_naming_why(client, author, chains):
    from django.urls import reverse

    client.force_login(author)
    response = client.post(reverse("council:gates-start", args=[chains.pk]), {"llm": ""})
    assert response.status_code == 400 and "through a council member" in response.content.decode()
    assert not GateVerdict.objects.filter(item_set=chains).exists()


def test_gates_run_on_a_track_c_set_runs_its_verification_gate(chains, fake_llm):
    from django.core.management import CommandError, call_command

    council_member_add(name="verifier", base_url=fake_llm.base_url, model="fake-chain-verifier", timeout_seconds=5)
    call_command("gates_run", chains.name, "--llm", "verifier", "--json")
    assert GateVerdict.objects.filter(item_set=chains, gate=GATE).count() == Item.objects.filter(item_set=chains).count()
    assert not GateVerdict.objects.filter(item_set=chains).exclude(gate=GATE).exists()  # no Track B gate ran
    with pytest.raises(CommandError, match="through a council member"):
        call_command("gates_run", chains.name)
