"""Agreement with more than two annotators: Fleiss' kappa and Krippendorff's alpha for the campaign,
Cohen's kappa per pair of annotators, and each annotator against the adjudicated gold — computed here
again from the stored answers and decisions with statsmodels, krippendorff and scikit-learn."""

import random
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from adjudication import selectors
from adjudication.agreement import campaign_agreement
from adjudication.models import Decision
from annotation.models import Answer, Assignment
from annotation.services import campaign_create
from goldkey import roles
from items.models import Item
from items.services import item_set_get_or_create
from tests.adjudication.conftest import AGREE, DISAGREE, SKILL, VERDICT, make_twist_campaign, rated_campaign
from tests.conftest import _user, close_campaign

pytestmark = pytest.mark.django_db


def expected_figures(campaign):
    """The figures from first principles: the stored answers and decisions, the reference libraries."""
    items = list(Item.objects.filter(item_set=campaign.item_set).order_by("external_id"))
    labels: dict[str, dict[int, str]] = {}
    for pseudonym, item_id, values in Answer.objects.filter(assignment__enrollment__campaign=campaign).values_list(
        "assignment__enrollment__pseudonym", "assignment__item_id", "values"
    ):
        labels.setdefault(pseudonym, {})[item_id] = values["q1"]
    pseudonyms = sorted(labels)
    per_item = [[labels[p][i.id] for p in pseudonyms if i.id in labels[p]] for i in items]
    table, _ = aggregate_raters(np.array(per_item, dtype=object))
    cats = sorted({x for row in per_item for x in row})
    data = np.array([[cats.index(labels[p][i.id]) if i.id in labels[p] else np.nan for i in items] for p in pseudonyms])
    pairs = {}
    for a, b in combinations(pseudonyms, 2):
        shared = [i.id for i in items if i.id in labels[a] and i.id in labels[b]]
        kappa = cohen_kappa_score([labels[a][i] for i in shared], [labels[b][i] for i in shared]) if shared else None
        pairs[(a, b)] = (kappa, len(shared))
    dropped = set(Decision.objects.filter(campaign=campaign, action="drop").values_list("item_id", flat=True))
    gold = {i.id: VERDICT[i.gold_label] for i in items if i.id not in dropped}
    vs_gold = {}
    for p in pseudonyms:
        ids = [i for i in gold if i in labels[p]]
        mine, theirs = [labels[p][i] for i in ids], [gold[i] for i in ids]
        vs_gold[p] = (cohen_kappa_score(mine, theirs), sum(x == y for x, y in zip(mine, theirs, strict=True)), len(ids))
    kept_table, _ = aggregate_raters(np.array([row for row, i in zip(per_item, items, strict=True) if i.id in gold], dtype=object))
    return {
        "fleiss": sm_fleiss(table, method="fleiss"),
        "alpha": krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"),
        "pairs": pairs,
        "vs_gold": vs_gold,
        "kept_fleiss": sm_fleiss(kept_table, method="fleiss"),
        "n": len(items),
    }


@pytest.mark.parametrize("per_item", [2, 3])
def test_three_annotator_campaign_reports_fleiss_alpha_pairs_and_each_annotator_against_gold(
    annotator_a, annotator_b, annotator_c, per_item
):
    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=per_item)
    result = campaign_agreement(campaign)
    expected = expected_figures(campaign)
    raters = result["raters"]
    assert raters["annotators"] == 3 and raters["statistic"] == "fleiss"
    assert raters["fleiss"]["kappa"] == pytest.approx(expected["fleiss"], abs=1e-12)
    assert raters["fleiss"]["n"] == expected["n"] and raters["fleiss"]["raters_per_item"] == per_item
    low, high = raters["fleiss"]["ci95_bootstrap"]
    assert low < raters["fleiss"]["kappa"] < high
    assert raters["krippendorff_alpha"]["alpha"] == pytest.approx(expected["alpha"], abs=1e-12)
    assert raters["krippendorff_alpha"]["values"] == expected["n"] * per_item
    assert {tuple(p["raters"]): (p["kappa"], p["n"]) for p in raters["pairs"]} == {
        pair: (pytest.approx(kappa, abs=1e-12), n) for pair, (kappa, n) in expected["pairs"].items()
    }
    assert raters["gold"]["complete"] is True
    assert {g["rater"]: (g["kappa"], g["agree"], g["n"]) for g in raters["gold"]["by_annotator"]} == {
        p: (pytest.approx(kappa, abs=1e-12), agree, n) for p, (kappa, agree, n) in expected["vs_gold"].items()
    }
    for g in raters["gold"]["by_annotator"]:
        assert g["observed"] == pytest.approx(g["agree"] / g["n"])
    # The campaign's headline kappa is Fleiss' (no pair of people rated every item); the retained set's too.
    assert result["q1"]["statistic"] == "fleiss" and result["q1"]["kappa"] == raters["fleiss"]["kappa"]
    assert result["q1"]["ci95"] == [None, None] and result["q1"]["ci95_bootstrap"] == raters["fleiss"]["ci95_bootstrap"]
    assert result["retained"]["statistic"] == "fleiss"
    assert result["retained"]["kappa"] == pytest.approx(expected["kept_fleiss"], abs=1e-12)
    assert all(s["kappa"] is None for s in result["q1"]["by_gold_type"].values())


def test_four_annotators_two_per_item_pair_only_the_items_each_pair_shares(annotator_a, annotator_b, annotator_c):
    fourth = _user("ann_d", roles.ANNOTATOR)
    campaign = rated_campaign([annotator_a, annotator_b, annotator_c, fourth], per_item=2, n=48, slug="four")
    raters = campaign_agreement(campaign)["raters"]
    expected = expected_figures(campaign)
    assert len(raters["pairs"]) == 6
    assert sum(p["n"] for p in raters["pairs"]) == 48  # each item is shared by exactly one pair
    for p in raters["pairs"]:
        kappa, n = expected["pairs"][tuple(p["raters"])]
        assert p["n"] == n
        assert p["kappa"] is None if kappa is None else p["kappa"] == pytest.approx(kappa, abs=1e-12)


def test_each_annotator_against_gold_waits_for_every_queued_decision(annotator_a, annotator_b, annotator_c):
    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=2, slug="open")
    decided = [e for e in selectors.campaign_queue(campaign) if e.decision is not None]
    decided[-1].decision.delete()
    gold = campaign_agreement(campaign)["raters"]["gold"]
    assert gold == {"complete": False, "n": 0, "by_annotator": gold["by_annotator"]}
    assert all(g["n"] == 0 and g["kappa"] is None for g in gold["by_annotator"])


def test_two_annotator_figures_are_unchanged(small_campaign):
    # The released two-annotator trails are sealed into release bundles byte for byte
    # (tests/keys/test_released_key.py): their figures gain no field.
    result = campaign_agreement(small_campaign)
    assert "raters" not in result
    assert "statistic" not in result["q1"] and "statistic" not in result["retained"]
    assert result["q1"]["ci95"][0] is not None


def test_api_and_csv_carry_the_same_rater_figures_as_the_page(client, author, annotator_a, annotator_b, annotator_c):
    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=2)
    figures = campaign_agreement(campaign)["raters"]
    client.force_login(author)
    api = client.get(f"/api/adjudication/{campaign.slug}/agreement/").json()
    assert api["raters"]["fleiss"]["kappa"] == pytest.approx(figures["fleiss"]["kappa"])
    assert [p["kappa"] for p in api["raters"]["pairs"]] == pytest.approx([p["kappa"] for p in figures["pairs"]])
    assert api["raters"]["gold"]["by_annotator"][2]["rater"] == "C"
    assert api["q1"]["statistic"] == "fleiss"
    csv = client.get(reverse("adjudication:agreement-csv", args=[campaign.slug])).content.decode()
    assert f"three,raters.fleiss.kappa,{figures['fleiss']['kappa']}" in csv
    assert f"three,raters.pairs.0.kappa,{figures['pairs'][0]['kappa']}" in csv
    assert "three,raters.gold.by_annotator.1.rater,B" in csv
    page = client.get(reverse("adjudication:agreement", args=[campaign.slug])).content.decode()
    assert f'data-testid="fleiss-kappa">{figures["fleiss"]["kappa"]:.3f}<' in page
    pair = figures["pairs"][0]
    assert f'data-testid="pair-kappa-A-B">{pair["kappa"]:.3f}<' in page
    assert 'aria-label="Each annotator against the adjudicated gold"' in page
    assert 'aria-label="Cohen&#x27;s kappa per annotator pair"' in page or "Cohen's kappa per annotator pair" in page


def test_annotators_of_a_three_annotator_campaign_reach_none_of_its_figures(client, annotator_a, annotator_b, annotator_c):
    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=2)
    for annotator in (annotator_a, annotator_c):
        client.force_login(annotator)
        for url in (reverse("adjudication:agreement", args=[campaign.slug]),
                    reverse("adjudication:agreement-csv", args=[campaign.slug]),
                    f"/api/adjudication/{campaign.slug}/agreement/"):
            response = client.get(url)
            assert response.status_code == 403, url
            assert b"fleiss" not in response.content.lower() and b"kappa" not in response.content.lower(), url


def test_an_author_annotating_a_three_annotator_campaign_is_refused_its_figures_until_they_hand_in(
    client, author, annotator_a, annotator_b
):
    campaign = rated_campaign([author, annotator_a, annotator_b], per_item=2, close=False)
    client.force_login(author)
    # Blind to items they still label: 404, as if the figures did not exist (a 403 would say they do).
    assert client.get(f"/api/adjudication/{campaign.slug}/agreement/").status_code == 404
    assert client.get(reverse("adjudication:agreement-csv", args=[campaign.slug])).status_code == 404
    assert client.get(reverse("adjudication:agreement", args=[campaign.slug])).status_code == 404


def test_pair_heat_table_and_gold_bars_escape_names():
    from adjudication import charts

    table = charts.pair_matrix(["<A>", "B"], [{"raters": ["<A>", "B"], "kappa": 0.5, "n": 3}])
    assert "<A>" not in table and "&lt;A&gt;" in table and "0.500" in table
    bars = charts.gold_bars([{"rater": "<C>", "observed": 0.5, "kappa": None, "n": 2}])
    assert "<C>" not in bars and "50.0% · κ n/a (n=2)" in bars


def test_the_page_of_a_two_annotator_campaign_keeps_cohens_kappa(client, author, annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-1:v1b1": AGREE, "conv-1:v1b2": DISAGREE}, slug="two")
    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[campaign.slug])).content.decode()
    assert "Cohen's kappa <strong" in page and 'data-testid="raters"' not in page


def test_three_annotator_lapse_campaign_reports_fleiss_for_both_figures_and_each_annotator_against_gold(
    client, author, annotator_a, annotator_b, annotator_c
):
    labels = ["PROCEED", "HEDGE", "TEMPLATE", "PROCEED-WITH-CAVEAT"]
    item_set = item_set_get_or_create(name="lapse raters", kind="lapse")
    items = Item.objects.bulk_create(
        Item(item_set=item_set, kind="lapse", external_id=f"b{i:02d}") for i in range(30)
    )
    truth = {item.id: labels[i % 4 if i % 5 else 0] for i, item in enumerate(items)}
    campaign = campaign_create(slug="lapse3", item_set=item_set, annotators=[annotator_a, annotator_b, annotator_c],
                               per_item=2, seed=5)
    given: dict[str, dict[int, str]] = {}
    answers = []
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("enrollment"):
        p = assignment.enrollment.pseudonym
        draw = random.Random(f"{p}:{assignment.item_id}")
        label = truth[assignment.item_id] if draw.random() < SKILL[p] else draw.choice(labels)
        given.setdefault(p, {})[assignment.item_id] = label
        answers.append(Answer(assignment=assignment, values={"label": label}, revision=1))
    Answer.objects.bulk_create(answers)
    close_campaign(campaign)
    for entry in selectors.campaign_queue(campaign):
        if entry.needs_decision:
            Decision.objects.create(campaign=campaign, item=entry.item, action="relabel",
                                    new_gold=truth[entry.item.id], note="adjudicated")
    result = campaign_agreement(campaign)
    raters = result["raters"]

    ids = [item.id for item in items]
    per_item = [[given[p][i] for p in "ABC" if i in given[p]] for i in ids]
    table, _ = aggregate_raters(np.array(per_item, dtype=object))
    assert raters["fleiss"]["kappa"] == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    assert result["five_way"]["statistic"] == "fleiss" and result["five_way"]["kappa"] == raters["fleiss"]["kappa"]
    binary = [[{"PROCEED": "P", "HEDGE": "W", "TEMPLATE": "W"}.get(x) for x in r] for r in per_item]
    binary = [r for r in binary if None not in r]
    binary_table, _ = aggregate_raters(np.array(binary, dtype=object))
    assert result["binary"]["kappa"] == pytest.approx(sm_fleiss(binary_table, method="fleiss"), abs=1e-12)
    assert result["binary"]["kappa_n"] == len(binary)
    cats = sorted({x for r in per_item for x in r})
    data = np.array([[cats.index(given[p][i]) if i in given[p] else np.nan for i in ids] for p in "ABC"])
    assert raters["krippendorff_alpha"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12
    )
    # Gold: the label both annotators gave, else the adjudicated one (here: the truth).
    gold = {i: (r[0] if len(set(r)) == 1 else truth[i]) for i, r in zip(ids, per_item, strict=True)}
    assert raters["gold"]["complete"] and raters["gold"]["n"] == len(gold)
    for row in raters["gold"]["by_annotator"]:
        mine = [given[row["rater"]][i] for i in ids if i in given[row["rater"]]]
        theirs = [gold[i] for i in ids if i in given[row["rater"]]]
        assert row["n"] == len(mine) and row["agree"] == sum(x == y for x, y in zip(mine, theirs, strict=True))
        assert row["kappa"] == pytest.approx(cohen_kappa_score(mine, theirs), abs=1e-12)
    client.force_login(author)
    page = client.get(reverse("adjudication:agreement", args=[campaign.slug])).content.decode()
    assert "Fleiss&#x27; kappa, 3 annotators" in page or "Fleiss' kappa, 3 annotators" in page
    assert f'data-testid="five-way-kappa">{raters["fleiss"]["kappa"]:.3f}<' in page
    assert f'data-testid="gold-kappa-C">{raters["gold"]["by_annotator"][2]["kappa"]:.3f}<' in page


def test_a_derived_keys_kept_set_kappa_is_fleiss_over_its_items_with_three_annotators(annotator_a, annotator_b, annotator_c):
    from adjudication.agreement import kept_set_kappa

    campaign = rated_campaign([annotator_a, annotator_b, annotator_c], per_item=3)
    data = selectors.campaign_data(campaign)
    kept = {item.id for item in data.items[::2]}
    result = kept_set_kappa(data, kept)
    per_item = [[a.values["q1"] for a in Answer.objects.filter(assignment__item_id=i)] for i in sorted(kept)]
    table, _ = aggregate_raters(np.array(per_item, dtype=object))
    assert result["statistic"] == "fleiss" and result["n"] == len(kept)
    assert result["kappa"] == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_a_derived_keys_kept_set_kappa_is_cohens_with_two_annotators(small_campaign):
    from adjudication.agreement import kept_set_kappa

    data = selectors.campaign_data(small_campaign)
    first_three = data.items[:3]  # v1b1, v1b2 agreed; v1b3 A contradicts, B consistent
    result = kept_set_kappa(data, {item.id for item in first_three})
    a = [data.answers[item.id]["A"]["q1"] for item in first_three]
    b = [data.answers[item.id]["B"]["q1"] for item in first_three]
    assert "statistic" not in result and result["n"] == 3 and result["agree"] == 2
    assert result["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
