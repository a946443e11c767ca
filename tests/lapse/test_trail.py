"""Loading the released Lapse trail: judge labels as imported council votes, under the one policy for
imported votes (re-importing the same file changes nothing; changing an imported label is refused)."""

import json

import pytest

from annotation.services import campaign_create
from council.models import CouncilMember, CouncilVote
from goldkey.lib.jsonio import ImportFailed
from items.parsing import ParsedLapseItem
from items.services import item_set_get_or_create, lapse_items_create
from lapse.trail import judge_import


@pytest.fixture
def lapse_campaign(db, annotator_a, annotator_b):
    lapse_items_create(item_set_name="lapse tiny", source="test", text_released=False, items=[
        ParsedLapseItem(line=n, external_id=f"g00{n}", request="", response="", key_fact="", hidden={}) for n in (1, 2, 3)])
    item_set = item_set_get_or_create(name="lapse tiny", kind="lapse")
    return campaign_create(slug="lapse-tiny", item_set=item_set, annotators=[annotator_a, annotator_b], seed=1)


def judged(path, labels, model="local/j"):
    path.write_text("".join(json.dumps({"gid": gid, "judge": label, "judge_model": model}) + "\n" for gid, label in labels))
    return path


def test_reimporting_an_unchanged_judge_file_changes_nothing(lapse_campaign, tmp_path):
    path = judged(tmp_path / "j.jsonl", [("g001", "PROCEED"), ("g002", "HEDGE")])
    assert judge_import(campaign=lapse_campaign, path=path)["created"] == 2
    again = judge_import(campaign=lapse_campaign, path=path)
    assert (again["created"], again["unchanged"], again["changed"]) == (0, 2, 0)
    assert sorted(CouncilVote.objects.values_list("item__external_id", "values", "prompt_version")) == [
        ("g001", {"label": "PROCEED"}, "imported"), ("g002", {"label": "HEDGE"}, "imported")]


def test_a_judge_file_changing_an_imported_label_is_refused_naming_file_line_and_item(lapse_campaign, tmp_path):
    judge_import(campaign=lapse_campaign, path=judged(tmp_path / "j.jsonl", [("g001", "PROCEED"), ("g002", "HEDGE")]))
    changed = judged(tmp_path / "j2.jsonl", [("g003", "TEMPLATE"), ("g001", "PROCEED"), ("g002", "TEMPLATE")])
    with pytest.raises(ImportFailed) as refused:
        judge_import(campaign=lapse_campaign, path=changed)
    [error] = refused.value.errors
    assert error.startswith("j2.jsonl:3: item 'g002':") and "never rewritten" in error
    # All-or-nothing: g003 was not added and g002 keeps the label it was imported with.
    assert sorted(CouncilVote.objects.values_list("item__external_id", "values")) == [
        ("g001", {"label": "PROCEED"}), ("g002", {"label": "HEDGE"})]


def test_a_second_judge_model_in_the_same_file_is_a_second_member(lapse_campaign, tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps({"gid": "g001", "judge": "PROCEED", "judge_model": "a"}) + "\n"
        + json.dumps({"gid": "g001", "judge": "HEDGE", "judge_model": "b"}) + "\n"
    )
    result = judge_import(campaign=lapse_campaign, path=path)
    assert result["judges"] == ["a", "b"] and result["created"] == 2
    assert set(CouncilMember.objects.values_list("name", flat=True)) == {"a", "b"}


def test_a_dry_run_validates_and_writes_nothing(lapse_campaign, tmp_path):
    result = judge_import(campaign=lapse_campaign, path=judged(tmp_path / "j.jsonl", [("g001", "PROCEED")]), dry_run=True)
    assert (result["labels"], result["dry_run"]) == (1, True)
    assert not CouncilVote.objects.exists() and not CouncilMember.objects.exists()
