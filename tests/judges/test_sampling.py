"""The designed sample of judged answers (judges/sampling.py): strata, sizes, seed, weighting back."""

import json
import math
from collections import Counter

import pytest

from goldkey.lib import statistics as st
from judges import sampling as sm
from judges.longmemeval import read_release
from tests.conftest import require_shared_data


def invented(n_questions: int = 60) -> tuple[list[tuple[str, str, bool]], dict[str, str]]:
    """Three runs over n questions of two types; every fifth question judged differently by run c."""
    types = {f"q{i:03d}" + ("_abs" if i % 10 == 0 else ""): ("alpha" if i % 2 else "beta") for i in range(n_questions)}
    answers = []
    for i, q in enumerate(types):
        for run in ("a", "b", "c"):
            answers.append((run, q, (i % 3 == 0) != (run == "c" and i % 5 == 0)))
    return answers, types


@pytest.fixture(scope="module")
def released_units() -> list[sm.Unit]:
    folder = require_shared_data("longmemeval")
    release = read_release(questions=folder / "longmemeval_questions.json", runs=sorted(folder.glob("*.eval-results-*")))
    types = {q: x.question_type for q, x in release.questions.items()}
    return sm.population(((a.run, a.question_id, a.label) for a in release.answers), types)


def test_a_question_is_disputed_when_its_runs_label_it_differently():
    answers, types = invented()
    units = sm.population(answers, types)
    disputed = {u.question_id for u in units if u.disputed}
    assert disputed == {q for i, q in enumerate(types) if i % 5 == 0}
    assert len(units) == 3 * 60
    assert {u.stratum for u in units if u.question_id == "q000_abs"} == {"beta|abstention|disputed"}


def test_the_sample_is_reproduced_from_its_seed_and_changes_with_it():
    answers, types = invented(200)
    units = sm.population(answers, types)
    first = sm.sample_draw(units=units, half_width=0.1, seed=5)
    again = sm.sample_draw(units=list(reversed(units)), half_width=0.1, seed=5)
    other = sm.sample_draw(units=units, half_width=0.1, seed=6)
    assert [u.key for u in first.chosen] == [u.key for u in again.chosen]
    assert first.design == again.design
    assert [u.key for u in first.chosen] != [u.key for u in other.chosen]


def test_disputed_strata_are_oversampled():
    answers, types = invented(400)
    units = sm.population(answers, types)
    plain = sm.sample_draw(units=units, half_width=0.1, seed=1, oversample=1.0)
    over = sm.sample_draw(units=units, half_width=0.1, seed=1, oversample=3.0)

    def disputed_share(sample):
        return sum(u.disputed for u in sample.chosen) / len(sample.chosen)

    assert disputed_share(over) > disputed_share(plain) + 0.1
    assert over.design["design_effect"] > plain.design["design_effect"] == pytest.approx(1.0, abs=0.05)


def test_the_design_is_json_ready_and_its_strata_account_for_every_unit():
    answers, types = invented(120)
    units = sm.population(answers, types)
    sample = sm.sample_draw(units=units, half_width=0.08, seed=9)
    design = json.loads(json.dumps(sample.design))
    assert design["seed"] == 9 and design["half_width"] == 0.08
    assert sum(s["population"] for s in design["strata"]) == len(units) == design["population"]
    assert sum(s["sampled"] for s in design["strata"]) == len(sample.chosen) == design["sampled"]
    drawn = Counter(u.stratum for u in sample.chosen)
    for stratum in design["strata"]:
        assert drawn[stratum["stratum"]] == stratum["sampled"]
        assert stratum["weight"] == pytest.approx(stratum["population"] / stratum["sampled"])
    assert design["size_for_half_width"] == st.wilson_sample_size(0.08, population=len(units))
    assert design["sampled"] >= design["size_for_half_width"]


def test_weighting_back_a_census_gives_the_population_figure_exactly():
    answers, types = invented()
    units = sm.population(answers, types)
    outcomes = {(run, q): label for run, q, label in answers}
    whole = sm.weighted_proportion(units=units, outcomes=outcomes)
    assert whole["estimate"] == pytest.approx(sum(outcomes.values()) / len(outcomes))
    one_run = sm.weighted_proportion(units=units, outcomes=outcomes, where=lambda u: u.run == "c")
    assert one_run["estimate"] == pytest.approx(sum(v for k, v in outcomes.items() if k[0] == "c") / 60)


def test_the_released_runs_sample_is_reproduced_and_weights_back_to_the_judges_accuracy(released_units):
    sample = sm.sample_draw(units=released_units, half_width=0.05, seed=2026)
    again = sm.sample_draw(units=released_units, half_width=0.05, seed=2026)
    assert [u.key for u in sample.chosen] == [u.key for u in again.chosen]
    assert sample.design["population"] == 2830
    abstention_strata = [s for s in sample.design["strata"] if s["abstention"]]
    assert sum(s["population"] for s in abstention_strata) == 4 * 30 + sum(
        1 for u in released_units if u.abstention and "bc_only" in u.run)
    assert all(s["sampled"] >= 2 for s in sample.design["strata"])
    # The judge's own labels over the sample, weighted back, must cover the judge's accuracy over all
    # 2,830 answers (computed here from the same files, not written down).
    folder = require_shared_data("longmemeval")
    release = read_release(questions=folder / "longmemeval_questions.json", runs=sorted(folder.glob("*.eval-results-*")))
    labels = {(a.run, a.question_id): a.label for a in release.answers}
    estimate = sm.weighted_proportion(units=released_units, outcomes={u.key: labels[u.key] for u in sample.chosen})
    truth = sum(labels.values()) / len(labels)
    assert estimate["ci95"][0] <= truth <= estimate["ci95"][1]
    assert (estimate["ci95"][1] - estimate["ci95"][0]) / 2 <= 0.05 + 1e-9
    assert not math.isnan(estimate["se"])
