"""The demo loads a judged-answer campaign from the files we wrote in LongMemEval's shapes; again, nothing
changes. The upload page's one-file format goes through the importer the spec names."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Assignment, Campaign
from goldkey.lib.jsonio import ImportFailed
from items.models import Item
from items.upload_services import Upload, upload_import

pytestmark = pytest.mark.django_db


def load_demo() -> dict:
    out = StringIO()
    call_command("load_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_demo_loads_a_judged_answer_campaign_for_both_annotators_and_again_changes_nothing():
    first = load_demo()
    assert first["judged_items"]["created"] == 14 and "demo-judged" in first["campaigns_created"]
    campaign = Campaign.objects.get(slug="demo-judged")
    assert campaign.protocol == "judged"
    annotators = Assignment.objects.filter(enrollment__campaign=campaign).values_list("enrollment__annotator__username", flat=True)
    assert sorted(set(annotators)) == ["ann1", "ann2"]
    assert Assignment.objects.filter(enrollment__campaign=campaign).count() == 28
    second = load_demo()
    assert (second["judged_items"]["created"], second["judged_items"]["unchanged"]) == (0, 14)
    assert second["campaigns_created"] == [] and Item.objects.filter(kind="judged").count() == 14


def test_the_upload_imports_a_judged_answer_file_and_refuses_a_bad_one_naming_line_and_field():
    good = b'{"question_id": "u1", "question_type": "multi-session", "question": "Q?", "answer": "A", "hypothesis": "A"}\n'
    report = upload_import(kind="judged", upload=Upload("judged.jsonl", [good]), item_set_name="uploaded")
    assert report.created == 1 and Item.objects.get(external_id="u1").kind == "judged"
    bad = b'{"question_id": "u2", "question_type": "multi-session", "question": "Q?", "answer": "A"}\n'
    with pytest.raises(ImportFailed) as failed:
        upload_import(kind="judged", upload=Upload("judged.jsonl", [bad]), item_set_name="uploaded")
    assert failed.value.errors == ["judged.jsonl:1: missing field 'hypothesis'"]
