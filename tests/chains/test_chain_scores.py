"""A TWIST Track C run scored against a frozen key: free-text answers graded by an admissible judge (through the
local OpenAI-compatible server), every metric with an interval, the judge's calibration beside them, and a judge
that is not admissible refused naming the failing class."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from chains.models import ChainRun
from chains.scores import chain_run_import, chain_run_report, key_chains
from chains.selectors import chain_run_reports
from council.services import council_member_add
from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from items.models import Item
from judges.services import judge_calibration_run
from keys.models import KeyEntry
from keys.selectors import key_canonical_bytes
from keys.services import erratum_decide, erratum_file, key_derive, key_verify
from protocols import judged
from tests.chains.conftest import answers_file as _run

pytestmark = pytest.mark.django_db
GOLD_FRAME = judged.TEMPLATES[judged.GOLD]


def test_a_frozen_track_c_key_entry_carries_the_chain_the_relation_and_the_gold_answer(chain_key):
    entry = KeyEntry.objects.get(key=chain_key, external_id="tc-c2-career")
    item = Item.objects.get(pk=entry.item_id)
    assert entry.gold == "supersession" and entry.family == "C2" and entry.quote == item.answer
    assert entry.evidence == list(item.evidence.filter(role="step").order_by("position").values_list("turn__dia_id", flat=True))


def test_a_run_giving_every_gold_answer_scores_full_retention_with_intervals_and_shows_its_judge(chain_key, strict_judge, tmp_path):
    items = {i.external_id: i for i in Item.objects.filter(item_set=chain_key.campaign.item_set)}
    path = _run(tmp_path, {i: GOLD_FRAME.format(answer=item.answer.rstrip(".")) for i, item in items.items()})
    report = chain_run_report(version=chain_key.version, path=path, member=strict_judge)
    m = report["metrics"]
    assert (m["current_answer_rate"]["k"], m["current_answer_rate"]["n"]) == (3, 3)
    assert m["stale_answer_rate"]["k"] == 0 and m["history_retention"]["k"] == m["history_retention"]["n"] == 2
    assert m["coexistence_retention"]["k"] == m["coexistence_retention"]["n"] == 1
    assert m["current_answer_rate"]["wilson"] == list(st.wilson_interval(3, 3))
    assert m["resolution_responsiveness"]["rate"] == 0.0 and m["resolution_responsiveness"]["newcombe"] is not None
    judge = report["judge"]
    assert (judge["model"], judge["judge_prompt_version"]) == ("fake-judge-strict", "twist-c-judge/1")
    assert judge["calibration"]["decoys"] == "judged-decoys/2" and all(
        c["rejected"] == c["n"] for c in judge["calibration"]["classes"].values())


def test_a_run_asserting_the_replaced_belief_counts_as_stale(chain_key, strict_judge, tmp_path):
    stale = {i.external_id: GOLD_FRAME.format(answer=i.superseded[-1]) for i in Item.objects.filter(family="C1")}
    report = chain_run_report(version=chain_key.version, path=_run(tmp_path, stale), member=strict_judge)
    assert report["metrics"]["stale_answer_rate"]["k"] == 2 and report["metrics"]["current_answer_rate"]["k"] == 0
    assert report["verdicts"]["tc-c2-career"] == "other"  # not answered


def test_a_judge_that_is_not_admissible_is_refused_naming_the_failing_class(chain_key, fake_llm, author, tmp_path):
    member, _ = council_member_add(name="lenient", base_url=fake_llm.base_url, model="fake-judge-lenient-stale", timeout_seconds=5)
    judge_calibration_run(item_set=chain_key.campaign.item_set, member=member, seed=1, user=author)
    with pytest.raises(ApplicationError, match="not admissible for Track C scoring: stale_as_current"):
        chain_run_report(version=chain_key.version, path=_run(tmp_path, {"tc-c1-lease": "x"}), member=member)


def test_a_judge_without_a_track_c_calibration_is_refused(chain_key, fake_llm, tmp_path):
    member, _ = council_member_add(name="uncal", base_url=fake_llm.base_url, model="fake-judge-strict", timeout_seconds=5)
    with pytest.raises(ApplicationError, match="no Track C decoy calibration"):
        chain_run_report(version=chain_key.version, path=_run(tmp_path, {"tc-c1-lease": "x"}), member=member)


def test_an_answer_to_an_item_outside_the_key_is_refused_naming_file_line_and_field(chain_key, strict_judge, tmp_path):
    from goldkey.lib.jsonio import ImportFailed

    with pytest.raises(ImportFailed, match="run.jsonl:2: field 'item_id': 'nope' is not an item of this key"):
        chain_run_report(version=chain_key.version, path=_run(tmp_path, {"tc-c1-lease": "x", "nope": "y"}), member=strict_judge)


def test_the_chain_score_command_prints_each_metric_beside_the_judge_and_a_dry_run_stores_nothing(chain_key, strict_judge, tmp_path):
    out = StringIO()
    call_command("chain_score", chain_key.version, str(_run(tmp_path, {"tc-c1-lease": "x"})), "--judge", "strict", "--dry-run",
                 stdout=out)
    text = out.getvalue()
    assert "fake-judge-strict" in text and "twist-c-judge/1" in text and "stale-answer rate" in text
    assert "not stored (dry run)" in text and not ChainRun.objects.exists()


def test_the_chain_score_command_stores_the_run_with_its_judge_pinned(chain_key, strict_judge, author, tmp_path):
    out = StringIO()
    call_command("chain_score", chain_key.version, str(_run(tmp_path, {"tc-c1-lease": "x"})), "--judge", "strict",
                 "--system", "memsys", "--by", author.username, "--json", stdout=out)
    printed = json.loads(out.getvalue())
    run = ChainRun.objects.get(key=chain_key, system="memsys")
    assert printed["stored"] and printed["id"] == run.pk and run.imported_by == author
    assert (run.judge, run.judge_model, run.judge_prompt_version) == ("strict", "fake-judge-strict", "twist-c-judge/1")
    assert run.calibration.admissible and set(run.grades) == {"tc-c1-lease"}


def test_a_stored_run_reports_the_figures_of_the_run_graded_on_demand(chain_key, strict_judge, tmp_path):
    items = Item.objects.filter(item_set=chain_key.campaign.item_set).order_by("external_id")
    answers = {i.external_id: GOLD_FRAME.format(answer=(i.superseded or [i.answer])[-1].rstrip(".")) for i in items}
    path = _run(tmp_path, answers)
    on_demand = chain_run_report(version=chain_key.version, path=path, member=strict_judge)
    run = chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="memsys")
    (stored,) = chain_run_reports(chain_key)
    assert stored["id"] == run.pk and stored["system"] == "memsys"
    assert {k: stored[k] for k in on_demand} == on_demand


def test_a_system_scored_twice_against_a_key_is_refused_and_nothing_more_is_stored(chain_key, strict_judge, tmp_path):
    path = _run(tmp_path, {"tc-c1-lease": "x"})
    chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="memsys")
    with pytest.raises(ApplicationError, match="system 'memsys' already has a run scored against 'tc-v1'"):
        chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="memsys")
    assert ChainRun.objects.count() == 1


def test_a_judge_that_is_not_admissible_stores_no_run(chain_key, fake_llm, author, tmp_path):
    member, _ = council_member_add(name="lenient", base_url=fake_llm.base_url, model="fake-judge-lenient-stale", timeout_seconds=5)
    judge_calibration_run(item_set=chain_key.campaign.item_set, member=member, seed=1, user=author)
    with pytest.raises(ApplicationError, match="not admissible for Track C scoring: stale_as_current"):
        chain_run_import(version=chain_key.version, path=_run(tmp_path, {"tc-c1-lease": "x"}), member=member, system="memsys")
    assert not ChainRun.objects.exists()


def test_newcombe_interval_matches_statsmodels():
    from statsmodels.stats.proportion import confint_proportions_2indep

    for k1, n1, k2, n2 in ((7, 10, 2, 10), (0, 5, 3, 9), (12, 40, 12, 40)):
        low, high = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
        assert st.newcombe_difference_interval(k1, n1, k2, n2) == pytest.approx((low, high), abs=1e-6)  # z rounded alike to 1e-8


def test_a_frozen_track_c_key_carries_the_step_values_and_the_superseded_values_under_its_hash(chain_key):
    item = Item.objects.get(item_set=chain_key.campaign.item_set, external_id="tc-c2-career")
    records = {r["id"]: r for r in map(json.loads, key_canonical_bytes(chain_key).decode().splitlines())}
    record = records["tc-c2-career"]
    assert record["superseded"] == item.superseded and len(record["superseded"]) == 2
    assert record["chain_values"] == item.step_values and record["chain_values"][:-1] == record["superseded"]
    assert [r["superseded"] for r in records.values() if r["family"] == "HN-C1"] == [[]]
    assert key_verify(version=chain_key.version)["ok"]


def test_editing_an_item_after_the_freeze_leaves_its_sealed_key_entry_as_frozen(chain_key):
    item = Item.objects.get(item_set=chain_key.campaign.item_set, external_id="tc-c2-career")
    frozen = key_canonical_bytes(chain_key)
    superseded = list(item.superseded)
    Item.objects.filter(pk=item.pk).update(content={**item.content, "superseded": ["edited"]})
    assert key_canonical_bytes(chain_key) == frozen
    assert json.loads(next(line for line in frozen.decode().splitlines() if "tc-c2-career" in line))["superseded"] == superseded
    # The key's hash still holds; the edit shows as drift of the live rows against the sealed candidates.
    verified = key_verify(version=chain_key.version)
    assert verified["computed"] == verified["recorded"] and not verified["ok"]
    assert verified["drift"] and not any(d.startswith("entries") for d in verified["drift"])


def test_a_derived_track_c_key_keeps_its_parents_frozen_values(chain_key, author):
    parent_records = {r["id"]: r for r in map(json.loads, key_canonical_bytes(chain_key).decode().splitlines())}
    erratum = erratum_file(key=chain_key, item_external_id="tc-c1-lease", kind="drop", description="a test drop", user=author)
    erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
    child = key_derive(parent=chain_key, version="tc-v1.1", user=author)
    child_records = {r["id"]: r for r in map(json.loads, key_canonical_bytes(child).decode().splitlines())}
    assert "tc-c1-lease" not in child_records
    for external_id, record in child_records.items():
        assert {**record, "key_version": None} == {**parent_records[external_id], "key_version": None}


def test_the_sealed_releases_key_file_shows_each_chains_values_and_superseded_values_in_order(chain_key):
    from keys.releases import release_files

    files = release_files(chain_key)
    key_file = next(data for name, data in files.items() if name.endswith(".jsonl") and "key" in name)
    records = {r["id"]: r for r in map(json.loads, key_file.decode().splitlines())}
    items = Item.objects.filter(item_set=chain_key.campaign.item_set)
    assert set(records) == {i.external_id for i in items}
    for item in items:
        record = records[item.external_id]
        assert record["superseded"] == item.superseded and record["chain_values"] == item.step_values
        assert record["gold"] == item.answer and len(record["chain"]) == len(item.step_values)
    assert key_file == key_canonical_bytes(chain_key)  # the release ships the bytes the key's hash is of


def test_a_keys_chains_are_the_values_it_froze_and_no_run_is_scored_once_its_items_drifted(chain_key, strict_judge, tmp_path):
    c1 = Item.objects.filter(item_set=chain_key.campaign.item_set, family="C1")
    stale = {i.external_id: GOLD_FRAME.format(answer=i.superseded[-1]) for i in c1}
    for item in c1:  # after the freeze: the items' gold and replaced belief edited in place
        Item.objects.filter(pk=item.pk).update(content={**item.content, "answer": "edited", "superseded": ["edited"],
                                                        "step_values": ["edited", "edited"]})
    # What the score page reads a stored run's report with: the sealed values, not the edited ones.
    chains = key_chains(chain_key)
    assert all(chains[i.external_id].superseded == i.superseded and chains[i.external_id].gold == i.answer for i in c1)
    with pytest.raises(ApplicationError, match="does not verify"):
        chain_run_report(version=chain_key.version, path=_run(tmp_path, stale), member=strict_judge)


def test_a_system_named_over_its_column_is_refused_before_the_judge_is_called(chain_key, strict_judge, tmp_path):
    n = ChainRun._meta.get_field("system").max_length
    path = _run(tmp_path, {"tc-c1-lease": "x"})
    with pytest.raises(ApplicationError, match=rf"system: a text of {n + 1} characters \(at most {n}\)"):
        chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="s" * (n + 1))
    assert not ChainRun.objects.exists()
    assert chain_run_import(version=chain_key.version, path=path, member=strict_judge, system="s" * n).system == "s" * n
