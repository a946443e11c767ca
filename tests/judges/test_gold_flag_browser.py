"""Flagging the gold answer from the keyboard in real Chromium: g opens the flag's note, Esc leaves it, the
flag's key saves the note and the flag; a flag without a note is refused and the page says why."""

import pytest

from annotation.models import Answer, Assignment
from annotation.services import campaign_create
from items.models import Item
from judges.services import judged_release_import
from tests.conftest import browser_login
from tests.judges.test_gold_flag import FIRST, NOTE
from tests.judges.test_release_import import TINY, two_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_annotator_flags_the_gold_answer_with_a_note_from_the_keyboard(page, tmp_path, annotator_a, annotator_b):
    judged_release_import(questions=TINY, runs=two_runs(tmp_path), item_set_name="tiny")
    item = Item.objects.get(external_id=FIRST)
    campaign = campaign_create(slug="flag-keys", item_set=item.item_set, annotators=[annotator_a, annotator_b], seed=1)
    assignment = Assignment.objects.get(enrollment__campaign=campaign, enrollment__annotator=annotator_a, item=item)
    browser_login(page, annotator_a)
    page.goto(f"/annotate/{campaign.slug}/item/{assignment.position + 1}/")
    flag = page.locator("button.choice[data-key='gold_wrong'][data-value='yes']")

    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press(flag.get_attribute("data-shortcut"))  # no note yet: refused, and said so
    page.wait_for_selector("#save-status.error")
    assert "gold_wrong_note" in page.locator("#save-status").inner_text()
    assert not Answer.objects.filter(assignment=assignment, values__gold_wrong="yes").exists()

    page.keyboard.press("g")
    assert page.evaluate("document.activeElement.dataset.key") == "gold_wrong_note"
    page.keyboard.type(NOTE)
    page.keyboard.press("Escape")
    page.keyboard.press(flag.get_attribute("data-shortcut"))
    page.wait_for_function(
        "() => document.querySelector('#save-status').classList.contains('saved')")
    values = Answer.objects.get(assignment=assignment).values
    assert (values["gold_wrong"], values["gold_wrong_note"]) == ("yes", NOTE)
