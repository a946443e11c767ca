"""Detector labels sealed until every disagreement is decided (PROTOCOL §11), on the released Lapse trail
loaded as it stood before adjudication: the adjudicator's side-by-side page and the agreement figures
carry no judge label while a disagreement is undecided; after the last decision the scorer validation
shows its figures, binary and five-way, with the bars, and says that the trail records no tier."""

import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from adjudication.agreement import campaign_agreement
from adjudication.models import Action
from adjudication.selectors import campaign_queue
from adjudication.services import decision_save
from annotation.models import Campaign
from lapse.selectors import NO_TIER, scorer_validation
from lapse.trail import lapse_gold_import
from protocols.lapse import BINARY, LABELS

JUDGE_FILE = "gold_items.judged.local-seed-oss-36b-instruct-pv2.jsonl"
JUDGE_MEMBER = "local/seed-oss-36b-instruct-pv2"


def jsonl(path):
    return [json.loads(line) for line in path.open() if line.strip()]


@pytest.fixture
def folder(shared_data):
    return shared_data("lapse-gold")


@pytest.fixture
def undecided_trail(db, folder):
    lapse_gold_import(directory=folder, slug="lapse-undecided", with_decisions=False)
    return Campaign.objects.get(slug="lapse-undecided")


@pytest.fixture
def judge_labels(folder):
    return {r["gid"]: r["judge"] for r in jsonl(folder / JUDGE_FILE)}


def decide_all(campaign, folder, user, *, leave: int = 0):
    adjudicated = {r["gid"]: r["label"] for r in jsonl(folder / "gold_adjudicated.jsonl")}
    entries = campaign_queue(campaign)
    for entry in entries[: len(entries) - leave]:
        decision_save(
            campaign=campaign, item=entry.item, action=Action.RELABEL, new_gold=adjudicated[entry.item.external_id],
            note="adjudicated label", user=user,
        )


def page_without_label_choices(client, campaign, item) -> str:
    html = client.get(reverse("adjudication:item", args=[campaign.slug, item.id])).content.decode()
    # The relabel select lists every label by design; what must not appear is the judge's label elsewhere.
    return re.sub(r"<select.*?</select>", "", html, flags=re.S)


def queued_item_judged_apart(campaign, judge_labels, folder):
    """A queued disagreement whose judge label is neither annotator's label, so any appearance of it on
    the page can only come from the judge."""
    a = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator1.jsonl")}
    b = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator2.jsonl")}
    for entry in campaign_queue(campaign):
        gid = entry.item.external_id
        if judge_labels[gid] not in (a[gid], b[gid]):
            return entry.item, judge_labels[gid]
    raise AssertionError("the released trail has such items (e.g. g058: annotators CAVEAT/PROCEED, judge HEDGE)")


def test_the_trail_loaded_undecided_queues_its_25_disagreements(undecided_trail):
    queue = campaign_queue(undecided_trail)
    assert len(queue) == 25 and all(e.decision is None for e in queue)


def test_an_undecided_disagreements_page_carries_no_judge_label(client, author, undecided_trail, judge_labels, folder):
    client.force_login(author)
    item, label = queued_item_judged_apart(undecided_trail, judge_labels, folder)
    page = page_without_label_choices(client, undecided_trail, item)
    assert item.external_id in page  # the page itself rendered
    assert label not in page
    assert "seed-oss" not in page and JUDGE_MEMBER not in page
    assert 'class="council"' not in page


def test_the_page_still_carries_no_judge_label_while_the_last_disagreement_is_open(
    client, author, undecided_trail, judge_labels, folder
):
    client.force_login(author)
    decide_all(undecided_trail, folder, author, leave=1)
    [open_entry] = [e for e in campaign_queue(undecided_trail) if e.decision is None]
    page = page_without_label_choices(client, undecided_trail, open_entry.item)
    assert "seed-oss" not in page and 'class="council"' not in page
    # Nor on a decided item's page, nor in the figures: sealing is for the campaign, not per item.
    decided = next(e for e in campaign_queue(undecided_trail) if e.decision is not None)
    assert "seed-oss" not in page_without_label_choices(client, undecided_trail, decided.item)
    report = scorer_validation(undecided_trail)
    assert report["sealed"] is True and report["undecided"] == 1
    assert not {"cascade", "judge", "auto_label", "rows", "cascade_judge"} & report.keys()
    agreement = campaign_agreement(undecided_trail)
    assert agreement["detectors_sealed"] is True and agreement["judge_gold"] is None
    assert agreement["judge_gold_by_judge"] == {}


def test_the_agreement_page_shows_no_detector_figure_while_sealed(client, author, undecided_trail):
    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[undecided_trail.slug])).content.decode()
    assert 'data-testid="scorer-validation-sealed"' in page
    assert "llm-judge-binary-kappa" not in page and "judge-binary-kappa" not in page
    assert "seed-oss" not in page
    # Nor can the queue be narrowed by the judge's band: a filtered count would tell it.
    queue = client.get(reverse("adjudication:queue", args=[undecided_trail.slug]), {"band": "majority_against"})
    html = queue.content.decode()
    assert 'name="band"' not in html and 'data-testid="band"' not in html and "queued items match" not in html


def test_after_the_last_decision_the_validation_shows_binary_and_five_way_figures_with_the_bars(
    client, author, undecided_trail, judge_labels, folder
):
    decide_all(undecided_trail, folder, author)
    report = scorer_validation(undecided_trail)
    assert report["sealed"] is False and report["undecided"] == 0

    a = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator1.jsonl")}
    b = {r["gid"]: r["label"] for r in jsonl(folder / "gold_annotations_annotator2.jsonl")}
    adjudicated = {r["gid"]: r["label"] for r in jsonl(folder / "gold_adjudicated.jsonl")}
    gold = {g: a[g] if a[g] == b[g] else adjudicated[g] for g in a}
    gids = sorted(gold)
    eligible = [g for g in gids if gold[g] in BINARY and judge_labels[g] in BINARY]
    binary = cohen_kappa_score([BINARY[gold[g]] for g in eligible], [BINARY[judge_labels[g]] for g in eligible])
    five = [g for g in gids if judge_labels[g] in LABELS]
    five_way = cohen_kappa_score([gold[g] for g in five], [judge_labels[g] for g in five])

    judge = report["judge"]
    assert judge["binary"]["kappa"] == pytest.approx(binary, abs=1e-12)
    assert (judge["binary"]["agree"], judge["binary"]["n"]) == (219, 230)
    assert judge["five_way"]["kappa"] == pytest.approx(five_way, abs=1e-12)
    assert judge["binary"]["verdict"] == bar_verdict(binary)
    assert judge["five_way"]["verdict"] == bar_verdict(five_way)
    assert report["bars"]["passes"] == 0.75 and report["bars"]["revise"] == 0.65
    # The released trail records which tier each item came from nowhere: said, not invented.
    assert report["tiers"] == [] and report["tier_note"] == NO_TIER and report["untiered"] == 250
    assert judge["by_tier"] == {}

    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[undecided_trail.slug])).content.decode()
    section = page.split('data-testid="scorer-validation"')[1]
    assert f'data-testid="llm-judge-binary-kappa">{binary:.3f}<' in section
    assert f'data-testid="llm-judge-binary-verdict">{bar_verdict(binary)}<' in section
    assert 'data-testid="scorer-validation-no-tier"' in section and "No tier recorded" in section
    assert "≥ 0.75 passes" in section and "below 0.65" in section


def bar_verdict(kappa: float) -> str:
    """The bars written out here, independently of DetectorBars.verdict."""
    return "pass" if kappa >= 0.75 else "revise" if kappa < 0.65 else "between"


def test_after_the_last_decision_the_adjudication_page_shows_the_judge(client, author, undecided_trail, judge_labels, folder):
    item, label = queued_item_judged_apart(undecided_trail, judge_labels, folder)
    decide_all(undecided_trail, folder, author)
    client.force_login(author)
    page = page_without_label_choices(client, undecided_trail, item)
    assert JUDGE_MEMBER in page and label in page
    queue = client.get(reverse("adjudication:queue", args=[undecided_trail.slug])).content.decode()
    assert 'name="band"' in queue and 'data-testid="band"' in queue


def test_the_agreement_command_says_the_judge_is_sealed(undecided_trail, capsys):
    call_command("agreement", undecided_trail.slug)
    out = capsys.readouterr().out
    assert "judge vs gold: sealed until every disagreement is decided (25 undecided)" in out
    assert "seed-oss" not in out



def test_the_council_triage_page_keeps_the_judges_labels_sealed_until_the_key_is_frozen(client, author, undecided_trail):
    client.force_login(author)
    html = client.get(reverse("council:triage", args=[undecided_trail.slug])).content.decode()
    assert 'data-testid="triage-sealed"' in html
    assert JUDGE_MEMBER not in html and "seed-oss" not in html


def test_the_admin_lists_no_judge_vote_of_a_sealed_campaign(admin_client, undecided_trail):
    from council.models import CouncilVote

    assert CouncilVote.objects.filter(campaign=undecided_trail).exists()
    html = admin_client.get(reverse("admin:council_councilvote_changelist")).content.decode()
    assert JUDGE_MEMBER not in html and "0 council votes" in html
