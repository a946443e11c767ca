"""Real Chromium: "save and next" is one round trip (the page a decision leads to is fetched ahead and
shown when the decision's answer says it is current, else the answer is that page; its URL is put in the
address bar); a reload never posts the decision again, back and forward show the item they
name, the keys keep working on the page swapped in, and without JavaScript the form posts and redirects."""

import pytest
from playwright.sync_api import expect

from adjudication.models import Decision, DecisionRevision
from adjudication.services import decision_save
from items.models import Item
from tests.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def item_path(campaign, external_id: str) -> str:
    return f"/adjudicate/{campaign.slug}/items/{Item.objects.get(external_id=external_id).id}/"


def _record_requests(page) -> list[tuple[str, str]]:
    seen = []
    page.on("request", lambda r: seen.append((r.method, r.url)) if "/static/" not in r.url else None)
    return seen


def open_item(page, campaign, external_id: str) -> None:
    """The item's page, with the page a decision on it leads to fetched ahead and held."""
    page.goto(item_path(campaign, external_id))
    page.wait_for_selector("#decision-form[data-held]", state="attached")


def test_keep_by_key_shows_the_page_held_ahead_after_one_request_and_the_address_bar_names_it(page, small_campaign, author):
    browser_login(page, author)
    open_item(page, small_campaign, "conv-1:v1c4")
    seen = _record_requests(page)
    answers = []
    page.on("response", lambda r: answers.append(r.status) if r.request.method == "POST" else None)
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    assert page.url.endswith(item_path(small_campaign, "conv-1:v1b3"))
    expect(page.locator(".messages")).to_contain_text("conv-1:v1c4: keep recorded.")
    assert page.title() == "conv-1:v1b3 · adjudicate · Goldkey"
    page.wait_for_selector("#decision-form[data-held]", state="attached")  # and the one after it, ahead
    # The decision is one POST, answered 204: the page shown is the one held; the only GET is the next
    # page ahead, fetched after it was shown.
    assert [method for method, _ in seen] == ["POST", "GET"], seen
    assert seen[1][1].endswith(item_path(small_campaign, "conv-1:v1b3") + "next/") and answers == [204]
    assert Decision.objects.get().item.external_id == "conv-1:v1c4"


def test_without_a_page_held_the_decisions_answer_is_the_next_page(page, small_campaign, author):
    browser_login(page, author)
    page.route("**/next/", lambda route: route.abort())  # the page ahead never arrives
    page.goto(item_path(small_campaign, "conv-1:v1c4"))
    answers = []
    page.on("response", lambda r: answers.append(r.status) if r.request.method == "POST" else None)
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    expect(page.locator(".messages")).to_contain_text("conv-1:v1c4: keep recorded.")
    assert page.url.endswith(item_path(small_campaign, "conv-1:v1b3")) and answers == [200]


def test_a_page_held_that_went_stale_is_not_shown_the_answer_brings_the_current_one(page, small_campaign, author):
    browser_login(page, author)
    open_item(page, small_campaign, "conv-1:v1c4")  # holds conv-1:v1b3's page
    b3 = Item.objects.get(external_id="conv-1:v1b3")
    decision_save(campaign=small_campaign, item=b3, action="keep", user=author)  # another adjudicator, meanwhile
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b5")
    assert page.url.endswith(item_path(small_campaign, "conv-1:v1b5"))
    assert DecisionRevision.objects.count() == 2


def test_a_reload_after_save_and_next_shows_the_next_item_and_posts_nothing(page, small_campaign, author):
    browser_login(page, author)
    page.goto(item_path(small_campaign, "conv-1:v1c4"))
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    seen = _record_requests(page)
    page.reload()
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    page.wait_for_selector("#decision-form[data-held]", state="attached")
    # The page by GET, then the page after it fetched ahead (also a GET): nothing is posted again.
    assert [method for method, _ in seen] == ["GET", "GET"] and seen[1][1].endswith("/next/"), seen
    assert DecisionRevision.objects.count() == 1


def test_back_and_forward_after_save_and_next_show_the_item_each_entry_names(page, small_campaign, author):
    browser_login(page, author)
    open_item(page, small_campaign, "conv-1:v1c4")
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    page.wait_for_selector("#decision-form[data-held]", state="attached")
    page.keyboard.press("k")  # the keys work on the page swapped in
    expect(page.locator("h1")).to_have_text("conv-1:v1b5")
    page.go_back()
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    assert page.url.endswith(item_path(small_campaign, "conv-1:v1b3"))
    expect(page.locator("[data-testid=current-decision]")).to_contain_text("keep")  # read again, by GET
    page.go_back()
    expect(page.locator("h1")).to_have_text("conv-1:v1c4")
    page.go_forward()
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    assert DecisionRevision.objects.count() == 2  # going through history posted nothing


def test_a_refused_decision_stays_on_its_item_with_the_reason_and_the_next_save_goes_on(page, small_campaign, author):
    browser_login(page, author)
    page.goto(item_path(small_campaign, "conv-1:v1c4"))
    page.keyboard.press("d")
    page.keyboard.press("Control+Enter")  # a drop without a note
    expect(page.locator(".error")).to_contain_text("needs a note")
    assert page.url.endswith(item_path(small_campaign, "conv-1:v1c4")) and not Decision.objects.exists()
    page.fill("#note", "not stated in the excerpts")
    page.keyboard.press("Control+Enter")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    assert Decision.objects.get().action == "drop"


def test_the_last_save_and_next_opens_the_queue_page_with_its_message(page, small_campaign, author):
    browser_login(page, author)
    page.goto(item_path(small_campaign, "conv-1:v1b5"))
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1c4")
    page.keyboard.press("k")
    expect(page.locator("h1")).to_have_text("conv-1:v1b3")
    page.keyboard.press("k")
    page.wait_for_url(f"**/adjudicate/{small_campaign.slug}/")
    expect(page.locator(".messages")).to_contain_text("conv-1:v1b3: keep recorded.")
    assert page.locator("[data-testid=queue-counts]").inner_text() == "3 of 3 queued items decided"


def test_without_javascript_the_form_posts_and_is_redirected_to_the_next_item(live_requests, browser, live_server, small_campaign, author):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        browser_login(page, author)
        page.goto(item_path(small_campaign, "conv-1:v1c4"))
        page.check("input[name=action][value=keep]")
        with page.expect_navigation():
            page.click("#save")
        assert page.url.endswith(item_path(small_campaign, "conv-1:v1b3"))
        assert page.locator("h1").inner_text() == "conv-1:v1b3"
        page.reload()  # the redirect's GET: the decision is not posted again
        assert DecisionRevision.objects.count() == 1
    finally:
        context.close()
        assert live_requests.wait_until_quiet()
