"""Track B metrics (PROTOCOL.md §10) on hand-built keys, and the batch path against the plain one."""

import json
import random

import numpy as np
import pytest

from goldkey.lib import statistics as st
from scoring.metrics import (
    LONG,
    SHORT,
    KeyColumns,
    KeyItem,
    Prediction,
    ScoringError,
    figures,
    history_strata,
    is_attributed,
    is_fact_only,
    mcnemar_family,
    multi_ingest,
    run_score,
    score_report,
)

C, A, H = "contradicting", "aligned", "hard_negative"


def item(item_id, gold, conversation="conv-1", evidence=("D1:1",), history=400):
    return KeyItem(item_id=item_id, gold=gold, conversation=conversation, evidence=tuple(evidence), history_turns=history)


def flag(*evidence):
    return Prediction(aligned=False, evidence=tuple(evidence))


def keep(*evidence):
    return Prediction(aligned=True, evidence=tuple(evidence))


# Five contradicting items, three aligned, two hard negatives, in two conversations.
KEY = [
    item("c1", C, evidence=("D1:1", "D2:3")),
    item("c2", C, evidence=("D4:1",)),
    item("c3", C, "conv-2", evidence=("D5:5",), history=700),
    item("c4", C, "conv-2", evidence=("D6:1",), history=700),
    item("c5", C, "conv-2", evidence=("D7:2",), history=620),
    item("a1", A),
    item("a2", A, "conv-2", history=700),
    item("a3", A, "conv-2", history=700),
    item("h1", H),
    item("h2", H, "conv-2", history=700),
]
RUN = {
    "c1": flag("D9:9", "D2:3"),  # caught, gold evidence second: attributed
    "c2": flag("D9:1", "D9:2", "D9:3", "D4:1"),  # caught, gold evidence fourth: outside the top-3 budget
    "c3": flag("fact:41", "fact:42"),  # caught on extracted facts only: never credited
    "c4": keep("D6:1"),  # missed (citing the right turn does not matter when not flagged)
    "c5": flag(),  # caught, nothing cited
    "a1": keep(),
    "a2": flag("D1:1"),  # false alarm
    "a3": keep(),
    "h1": keep("D1:1"),
    "h2": flag("D2:2"),  # false alarm on a hard negative
}


def test_hand_built_run_gives_each_metric_as_k_of_n():
    result = figures(KEY, RUN)
    assert {m: (result[m]["k"], result[m]["n"]) for m in ("CR", "AS", "HNS", "Attr", "GCR", "fact_only")} == {
        "CR": (4, 5), "AS": (2, 3), "HNS": (1, 2), "Attr": (1, 4), "GCR": (1, 5), "fact_only": (1, 4),
    }
    assert result["CR"]["value"] == 0.8
    assert result["CR"]["wilson"] == list(st.wilson_interval(4, 5))
    assert result["balanced_accuracy"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert result["n_items"] == 10


def test_only_the_first_three_cited_ids_count_for_attribution():
    assert not is_attributed(KEY[1], RUN["c2"])
    assert is_attributed(KEY[1], flag("D9:1", "D4:1", "D9:3", "D9:4"))


def test_attribution_needs_an_exact_string_match_and_a_correct_flag():
    assert not is_attributed(KEY[0], flag("D1:01"))
    assert not is_attributed(KEY[0], flag(" D1:1"))
    assert not is_attributed(KEY[3], RUN["c4"])  # right turn, no flag
    assert not is_attributed(KEY[5], flag("D1:1"))  # an aligned item is never attributed


def test_fact_only_citations_are_counted_and_never_credited():
    assert is_fact_only(KEY[2], RUN["c3"])
    assert not is_fact_only(KEY[4], RUN["c5"])  # citing nothing is not citing facts
    assert not is_fact_only(KEY[0], flag("fact:1", "D2:3"))
    # The released format carries the outcome; a fact-only item is not attributed even if flagged so.
    released = Prediction(aligned=False, attributed=True, cited_fact_only=True)
    assert is_fact_only(KEY[0], released) and not is_attributed(KEY[0], released)


def test_released_format_uses_the_per_item_attribution_flag():
    result = figures(KEY[:2], {"c1": Prediction(False, attributed=True), "c2": Prediction(False, attributed=False)})
    assert (result["Attr"]["k"], result["Attr"]["n"], result["GCR"]["n"]) == (1, 2, 2)


def test_a_key_item_without_a_prediction_is_refused_and_names_the_item():
    partial = {k: v for k, v in RUN.items() if k != "h2"}
    with pytest.raises(ScoringError, match="h2.*no abstention|no abstention.*h2"):
        run_score(entries=KEY, predictions=partial, replicates=10)


def test_an_unknown_gold_type_is_refused():
    with pytest.raises(ScoringError, match="unknown gold type.*abstain"):
        figures([*KEY, item("x", "abstain")], {**RUN, "x": keep()})


def test_predictions_for_items_outside_the_key_are_counted_and_ignored():
    result = run_score(entries=KEY[1:], predictions=RUN, replicates=50)
    assert result["ignored_predictions"] == 1
    assert result["CR"]["n"] == 4


def test_history_strata_split_at_620_turns_inclusive():
    strata = history_strata([*KEY, item("u", A, history=None)])
    assert [i.item_id for i in strata[SHORT]] == ["c1", "c2", "c5", "a1", "h1"]
    assert [i.item_id for i in strata[LONG]] == ["c3", "c4", "a2", "a3", "h2"]
    result = run_score(entries=KEY, predictions=RUN, replicates=50)["strata"]
    assert (result[SHORT]["CR"]["k"], result[SHORT]["CR"]["n"]) == (3, 3)
    assert (result[LONG]["CR"]["k"], result[LONG]["CR"]["n"]) == (1, 2)
    assert (result[LONG]["AS"]["k"], result[LONG]["AS"]["n"]) == (1, 2)


def test_run_score_bootstraps_cr_as_hns_by_conversation_with_the_recorded_seed():
    result = run_score(entries=KEY, predictions=RUN, replicates=500, seed=3)
    contradicting = {"conv-1": [1, 1], "conv-2": [1, 0, 1]}
    assert result["CR"]["bootstrap"] == list(st.cluster_bootstrap(contradicting, replicates=500, seed=3))
    assert result["bootstrap"] == {"replicates": 500, "seed": 3, "cluster": "conversation", "metrics": ["CR", "AS", "HNS"]}
    assert "bootstrap" not in result["Attr"] and "bootstrap" not in result["GCR"]
    assert run_score(entries=KEY, predictions=RUN)["bootstrap"]["seed"] == 7


def test_mcnemar_counts_a_right_b_wrong_as_b_and_holm_covers_the_whole_family():
    always_keep = {k: keep() for k in RUN}
    runs = {"first": RUN, "second": always_keep, "third": {k: flag() for k in RUN}}
    result = mcnemar_family(entries=KEY, runs=runs)
    assert result["family"]["size"] == 6 and result["family"]["pairs"] == 3
    assert result["family"]["classes"] == [C, H] and result["family"]["runs"] == ["first", "second", "third"]
    first_second = {t["class"]: t for t in result["tests"] if (t["a"], t["b"]) == ("first", "second")}
    # contradicting: first catches 4 that always-keep misses, never the reverse.
    assert (first_second[C]["b_count"], first_second[C]["c_count"]) == (4, 0)
    assert first_second[C]["p"] == st.mcnemar_exact(4, 0) == 0.125
    # hard negatives: always-keep is right on h2 where first is wrong.
    assert (first_second[H]["b_count"], first_second[H]["c_count"]) == (0, 1)
    assert [t["p_holm"] for t in result["tests"]] == st.holm_adjust([t["p"] for t in result["tests"]])


def random_key(rng, n, conversations):
    types = [C, A, H]
    return [
        KeyItem(
            item_id=f"conv-{rng.randrange(conversations)}:x{i}", gold=rng.choice(types),
            conversation=f"conv-{rng.randrange(conversations)}",
            evidence=tuple(f"D{rng.randint(1, 5)}:{rng.randint(1, 5)}" for _ in range(rng.randint(1, 3))),
            history_turns=rng.choice([400, 620, 621, 689, None]),
        )
        for i in range(n)
    ]


def random_run(rng, entries, skill):
    run = {}
    for entry in entries:
        right = rng.random() < skill
        aligned = (entry.gold != C) == right
        cited = [f"D{rng.randint(1, 5)}:{rng.randint(1, 5)}" if rng.random() < 0.8 else f"fact:{rng.randint(1, 9)}"
                 for _ in range(rng.randint(0, 5))]
        run[entry.item_id] = Prediction(aligned=aligned, evidence=tuple(cited))
    return run


def test_score_report_equals_the_plain_path_exactly():
    rng = random.Random(41)
    entries = random_key(rng, 400, 9)
    runs = {f"run-{r}": random_run(rng, entries, skill) for r, skill in enumerate([0.5, 0.7, 0.8, 0.9, 0.95])}
    report = score_report(key_version="K-v1.0", key_sha256="ab" * 32, entries=entries, runs=runs, replicates=1000)
    assert report["key"] == {"version": "K-v1.0", "sha256": "ab" * 32}
    for name, predictions in runs.items():
        assert report["runs"][name] == run_score(entries=entries, predictions=predictions, replicates=1000)
    plain = mcnemar_family(entries=entries, runs=runs)
    assert report["mcnemar"] == plain["tests"] and report["family"] == plain["family"]
    assert report["family_size"] == 20


def test_score_report_equals_the_plain_path_with_the_default_10000_replicates():
    rng = random.Random(43)
    entries = random_key(rng, 120, 5)
    runs = {"a": random_run(rng, entries, 0.6), "b": random_run(rng, entries, 0.9)}
    report = score_report(key_version="K", key_sha256="0" * 64, entries=entries, runs=runs)
    assert report["runs"]["b"] == run_score(entries=entries, predictions=runs["b"])


def test_score_report_family_names_its_runs_and_refuses_unknown_ones():
    rng = random.Random(47)
    entries = random_key(rng, 60, 4)
    runs = {n: random_run(rng, entries, 0.8) for n in ("a", "b", "floor", "c")}
    report = score_report(key_version="K", key_sha256="0" * 64, entries=entries, runs=runs, family=["a", "b", "c"], replicates=20)
    assert report["family"]["runs"] == ["a", "b", "c"] and report["family_size"] == 6
    assert {t["a"] for t in report["mcnemar"]} | {t["b"] for t in report["mcnemar"]} == {"a", "b", "c"}
    assert set(report["runs"]) == {"a", "b", "floor", "c"}
    with pytest.raises(ScoringError, match="nope"):
        score_report(key_version="K", key_sha256="0" * 64, entries=entries, runs=runs, family=["a", "nope"], replicates=20)


def test_score_report_refuses_a_run_with_a_missing_item():
    runs = {"full": RUN, "partial": {k: v for k, v in RUN.items() if k != "a1"}}
    with pytest.raises(ScoringError, match="a1"):
        score_report(key_version="K", key_sha256="0" * 64, entries=KEY, runs=runs, replicates=10)


def test_a_report_with_no_run_still_cites_the_key_and_has_an_empty_family():
    report = score_report(key_version="K", key_sha256="f" * 64, entries=KEY, runs={}, replicates=10)
    assert report["key"] == {"version": "K", "sha256": "f" * 64}
    assert (report["runs"], report["mcnemar"], report["family_size"]) == ({}, [], 0)


def test_a_key_without_one_class_reports_zero_of_zero_and_no_interval():
    only_contradicting = [e for e in KEY if e.gold == C]
    report = score_report(key_version="K", key_sha256="0" * 64, entries=only_contradicting, runs={"r": RUN}, replicates=50)
    figures_ = report["runs"]["r"]
    assert figures_["AS"] == {"k": 0, "n": 0, "value": 0.0, "wilson": [0.0, 0.0], "bootstrap": [0.0, 0.0]}
    assert figures_ == run_score(entries=only_contradicting, predictions=RUN, replicates=50)


def test_multi_ingest_reports_points_mean_range_and_the_hierarchical_interval():
    second = {**RUN, "c1": keep(), "c2": keep()}  # the second ingest misses two more
    result = multi_ingest(entries=KEY, ingests=[RUN, second], score_level=[{"CR": 0.2, "AS": 1.0, "Attr": 0.5}], replicates=300)
    assert result["ingests"] == {"per_item": 2, "score_level": 1}
    assert result["CR"]["points"] == [0.8, 0.4, 0.2]
    assert result["CR"]["mean"] == pytest.approx(1.4 / 3)
    assert result["CR"]["range"] == [0.2, 0.8]
    expected = st.hierarchical_bootstrap(
        [{"conv-1": [1, 1], "conv-2": [1, 0, 1]}, {"conv-1": [0, 0], "conv-2": [1, 0, 1]}], replicates=300, seed=11
    )
    assert result["CR"]["hierarchical"] == list(expected)
    assert result["HNS"]["points"] == [0.5, 0.5]  # the score-level ingest reported no HNS
    assert result["Attr"]["points"] == [0.25, 0.0, 0.5] and "hierarchical" not in result["Attr"]
    assert result["bootstrap"]["seed"] == 11


def test_the_report_is_plain_json_with_no_numpy_values_or_nan():
    rng = random.Random(53)
    entries = random_key(rng, 90, 4)
    runs = {"a": random_run(rng, entries, 0.7), "b": random_run(rng, entries, 0.8)}
    report = score_report(key_version="K", key_sha256="0" * 64, entries=entries, runs=runs, replicates=100)
    assert json.loads(json.dumps(report, allow_nan=False)) == report


def test_runs_given_as_columns_in_any_row_order_score_exactly_as_the_same_runs_given_as_records():
    rng = random.Random(59)
    entries = random_key(rng, 300, 6)
    runs = {f"run-{r}": random_run(rng, entries, skill) for r, skill in enumerate([0.6, 0.8, 0.9])}
    runs["released"] = {e.item_id: Prediction(aligned=rng.random() < 0.5, attributed=rng.choice((True, False, None)),
                                              cited_fact_only=rng.random() < 0.3) for e in entries}
    columns = KeyColumns(entries)

    def as_rows(predictions):
        rows = list(predictions.items()) + [("outside:1", Prediction(aligned=True, evidence=()))]
        rng.shuffle(rows)
        ids = [i for i, _ in rows]
        # Evidence as stored (JSON text, decoded only when the rules ask), the verdicts as a numpy array.
        return columns.place(
            item_ids=ids, aligned=np.array([p.aligned for _, p in rows]),
            evidence=["" if p.evidence is None else json.dumps(list(p.evidence)) for _, p in rows],
            attributed=[p.attributed for _, p in rows], cited_fact_only=[p.cited_fact_only for _, p in rows],
            decode=lambda texts: [json.loads(t) if t else None for t in texts],
        )

    placed = {name: as_rows(predictions) for name, predictions in runs.items()}
    by_columns = score_report(key_version="K", key_sha256="0" * 64, entries=entries, columns=columns, runs=placed, replicates=500)
    by_records = score_report(key_version="K", key_sha256="0" * 64, entries=entries, runs=runs, replicates=500)
    for figures_ in by_records["runs"].values():
        figures_["ignored_predictions"] += 1  # the one row outside the key each placed run carried
    assert by_columns == by_records
    assert multi_ingest(entries=entries, columns=columns, ingests=list(placed.values()), replicates=200) == multi_ingest(
        entries=entries, ingests=list(runs.values()), replicates=200)


def test_placing_a_run_refuses_a_missing_or_twice_predicted_key_item():
    columns = KeyColumns(KEY)
    ids = [e.item_id for e in KEY]

    def place(item_ids):
        return columns.place(item_ids=item_ids, aligned=[True] * len(item_ids), evidence=[()] * len(item_ids),
                             attributed=[None] * len(item_ids), cited_fact_only=[None] * len(item_ids))

    with pytest.raises(ScoringError, match=r"1 key item\(s\) have no prediction .*: c3"):
        place([i for i in ids if i != "c3"])
    with pytest.raises(ScoringError, match=r"more than one prediction: a1"):
        place(ids + ["a1"])
    assert place(list(reversed(ids))).aligned.all()
