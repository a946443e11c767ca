"""The typed agreement, queue and decision shapes render the service's figures whole: nothing dropped,
nothing renamed (the API body is what `manage.py agreement --json` prints)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from adjudication.agreement import campaign_agreement
from adjudication.serializers import agreement_data
from annotation.models import Campaign
from tests.adjudication.test_commands import lapse_folder

pytestmark = pytest.mark.django_db


def test_the_twist_agreement_renders_through_its_serializer_unchanged(small_campaign):
    figures = campaign_agreement(small_campaign)
    assert agreement_data(figures) == figures


def test_the_twist_agreement_with_the_queue_decided_renders_unchanged(small_campaign, author):
    from adjudication.selectors import campaign_queue
    from adjudication.services import decision_save

    for entry in campaign_queue(small_campaign):
        decision_save(campaign=small_campaign, item=entry.item, user=author, action="drop", note="n", source="test")
    figures = campaign_agreement(small_campaign)
    assert figures["retained"]["complete"] and "confusion" in figures["retained"]
    assert agreement_data(figures) == figures


def test_the_lapse_agreement_renders_through_its_serializer_unchanged(tmp_path):
    call_command("lapse_gold_import", str(lapse_folder(tmp_path)), "--campaign", "lg", stdout=StringIO())
    figures = campaign_agreement(Campaign.objects.get(slug="lg"))
    assert figures["judge_gold"] is not None
    assert agreement_data(figures) == figures


def test_the_agreement_api_answers_what_the_command_prints(client, small_campaign, author):
    out = StringIO()
    call_command("agreement", small_campaign.slug, "--json", stdout=out)
    client.force_login(author)
    assert client.get(f"/api/adjudication/{small_campaign.slug}/agreement/").json() == json.loads(out.getvalue())
