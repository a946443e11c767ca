"""A Track C item page in real Chromium: an annotator reads the dated chain turns in record order, the question
and the proposed answer, and answers the three questions; the page source holds no family, no superseded or
step-value label or value, and no item id."""

import re

import pytest

from annotation.models import Answer, Assignment
from annotation.services import campaign_create
from items.models import Item
from protocols.twist_c import chain as tc
from tests.conftest import browser_login, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def mentions(source: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", source) is not None


def test_an_annotators_track_c_item_page_shows_the_turns_and_never_the_family_the_superseded_values_or_the_id(
    page, demo_chains, annotator_a, annotator_b
):
    campaign = campaign_create(slug="chains", item_set=demo_chains,
                               annotators=[annotator_a, annotator_b], seed=3)
    browser_login(page, annotator_a)
    assignments = Assignment.objects.filter(enrollment__campaign=campaign, enrollment__annotator=annotator_a)
    for assignment in assignments.select_related("item").order_by("position"):
        item = Item.objects.get(pk=assignment.item_id)
        page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
        source = page.content()
        assert page.locator("[data-testid=question]").inner_text() == item.question
        assert page.locator("[data-testid=proposed-answer]").inner_text() == item.answer
        # The superseded values themselves are in the turns (each step states its belief): their label is not.
        for hidden in (item.external_id, *tc.FAMILIES, *tc.FAMILIES.values()):
            assert not mentions(source, hidden), f"{hidden!r} reached the annotator"
        for label in ("superseded", "Superseded", "step_values", "family", "Family", "query_kind"):
            assert label not in source, f"the label {label!r} is on the annotator's page"
        # The turns come in the record's order, whatever the chain's.
        shown = page.locator(".excerpts li small").all_inner_texts()
        order = {ev.turn.dia_id: ev.turn.order for ev in item.evidence.select_related("turn")}
        assert sorted(shown, key=order.__getitem__) == shown and set(shown) == set(order)
        for key, value in (("q1", "supersession"), ("q2", "yes"), ("q3", "yes")):
            page.click(f"button.choice[data-key='{key}'][data-value='{value}']")
        page.wait_for_selector("#save-status.saved")
    save_screenshot(page, "twist-c-item")
    answers = Answer.objects.filter(assignment__in=assignments)
    assert answers.count() == assignments.count()
    assert all({"q1", "q2", "q3"} <= set(a.values) for a in answers)
