"""The one policy for imported votes, as the council answer file import applies it: re-importing the
same file changes nothing; a file that changes an imported vote is refused whole, naming FILE:LINE
and the item (the Lapse judge import follows the same rule: tests/lapse/test_trail.py)."""

import json

import pytest

from council.models import CouncilVote
from council.services import council_votes_import
from goldkey.lib.jsonio import ImportFailed


@pytest.fixture
def small_campaign(small_twist, annotator_a, annotator_b):
    from annotation.services import campaign_create

    return campaign_create(slug="small", item_set=small_twist, annotators=[annotator_a, annotator_b], seed=1)


def write(path, answers):
    path.write_text(json.dumps({"annotator": "m", "answers": answers}, indent=1))
    return path


def test_reimporting_an_unchanged_council_file_changes_nothing(small_campaign, tmp_path):
    path = write(tmp_path / "c.json", {"conv-x:1": {"q1": "contradicts"}, "conv-x:2": {"q1": "consistent"}})
    assert council_votes_import(campaign=small_campaign, path=path, member_name="m")["created"] == 2
    again = council_votes_import(campaign=small_campaign, path=path, member_name="m")
    assert (again["created"], again["unchanged"]) == (0, 2)
    assert CouncilVote.objects.count() == 2


def test_a_council_file_changing_an_imported_vote_is_refused_naming_file_line_and_item(small_campaign, tmp_path):
    council_votes_import(campaign=small_campaign, path=write(tmp_path / "c.json", {"conv-x:1": {"q1": "contradicts"}}), member_name="m")
    changed = write(tmp_path / "c2.json", {"conv-x:3": {"q1": "consistent"}, "conv-x:1": {"q1": "consistent"}})
    with pytest.raises(ImportFailed) as refused:
        council_votes_import(campaign=small_campaign, path=changed, member_name="m")
    [error] = refused.value.errors
    line = next(n for n, text in enumerate(changed.read_text().splitlines(), 1) if '"conv-x:1"' in text)
    assert error.startswith(f"c2.json:{line}:") and "item 'conv-x:1'" in error and "never rewritten" in error
    # All-or-nothing: the new item in the refused file was not written either, the old vote is as it was.
    assert list(CouncilVote.objects.values_list("item__external_id", "values")) == [("conv-x:1", {"q1": "contradicts"})]


def test_a_member_name_over_its_column_is_refused_and_of_exactly_it_imports(small_campaign, tmp_path):
    from council.models import CouncilMember

    n = CouncilMember._meta.get_field("name").max_length
    path = write(tmp_path / "c.json", {"conv-x:1": {"q1": "contradicts"}})
    with pytest.raises(ImportFailed) as refused:
        council_votes_import(campaign=small_campaign, path=path, member_name="m" * (n + 1))
    assert refused.value.errors == [f"field 'member': a text of {n + 1} characters (at most {n})"]
    assert not CouncilMember.objects.exists() and not CouncilVote.objects.exists()
    assert council_votes_import(campaign=small_campaign, path=path, member_name="m" * n)["member"] == "m" * n
