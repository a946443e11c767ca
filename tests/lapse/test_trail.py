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


def test_a_judge_model_over_the_member_name_column_is_refused_naming_line_and_field(lapse_campaign, tmp_path):
    n = CouncilMember._meta.get_field("name").max_length
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"gid": "g001", "judge": "PROCEED", "judge_model": "a"}) + "\n"
                    + json.dumps({"gid": "g002", "judge": "HEDGE", "judge_model": "m" * (n + 1)}) + "\n")
    with pytest.raises(ImportFailed) as refused:
        judge_import(campaign=lapse_campaign, path=path)
    assert refused.value.errors == [f"j.jsonl:2: field 'judge_model': a text of {n + 1} characters (at most {n})"]
    assert not CouncilMember.objects.exists() and not CouncilVote.objects.exists()
    assert judge_import(campaign=lapse_campaign, path=judged(tmp_path / "k.jsonl", [("g001", "HEDGE")], model="m" * n))["created"] == 1


def gold_folder(folder, annotator: str = "ann", gid: str = "g001"):
    """A labels-only gold folder of two annotators over two items (the released trail's shape)."""
    folder.mkdir()
    for n, name in ((1, annotator), (2, "other")):
        (folder / f"gold_annotations_annotator{n}.jsonl").write_text("".join(
            json.dumps({"gid": g, "label": "PROCEED", "notes": "", "annotator": name, "ts": "2026-08-13T18:51:31.832Z"}) + "\n"
            for g in ("g000", gid)))
    (folder / "gold_adjudicated.jsonl").write_text("")
    return folder


@pytest.mark.parametrize("field,model,column", [("annotator", "Enrollment", "pseudonym"), ("gid", "Item", "external_id")])
def test_a_gold_trail_value_over_its_column_is_refused_naming_line_and_field_and_of_exactly_it_loads(db, tmp_path, field, model, column):
    from annotation.models import Campaign, Enrollment
    from items.models import Item
    from lapse.trail import lapse_gold_import
    from tests.items.conftest import table_counts

    n = {"Enrollment": Enrollment, "Item": Item}[model]._meta.get_field(column).max_length
    before = table_counts()
    with pytest.raises(ImportFailed) as refused:
        lapse_gold_import(directory=gold_folder(tmp_path / "over", **{field: "x" * (n + 1)}), slug="gold")
    assert f"gold_annotations_annotator1.jsonl:2: field '{field}': a text of {n + 1} characters (at most {n})" in refused.value.errors
    assert table_counts() == before and not Campaign.objects.exists()
    lapse_gold_import(directory=gold_folder(tmp_path / "exact", **{field: "x" * n}), slug="gold")
    assert Campaign.objects.get().enrollments.count() == 2
