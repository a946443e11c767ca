"""The key page in real Chromium: public without login, errata filed by a signed-in user."""

import pytest

from keys.models import Erratum
from tests.conftest import browser_login, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_visitor_reads_a_frozen_key_and_a_signed_in_user_files_an_erratum(page, frozen_rows_teardown, frozen_key, outsider):
    page.goto("/keys/")
    page.click("text=TWIST-test-v1.0")
    assert frozen_key.sha256 in page.inner_text("code.hash")
    save_screenshot(page, "key-page")
    with page.expect_download() as download:
        page.click("text=Download the release bundle (zip)")
    assert download.value.suggested_filename == "TWIST-test-v1.0.zip"

    browser_login(page, outsider)
    page.goto("/keys/TWIST-test-v1.0/")
    page.fill(".erratum-form input[name=item]", "s-0002")
    page.select_option(".erratum-form select[name=kind]", "relabel")
    page.fill(".erratum-form input[name=value]", "aligned")
    page.fill(".erratum-form textarea[name=description]", "asks, does not claim")
    page.click(".erratum-form button[type=submit]")
    page.wait_for_selector("text=filed against TWIST-test-v1.0")
    assert Erratum.objects.get().item_external_id == "s-0002"


@pytest.mark.worker
def test_an_author_goes_from_the_last_decision_to_a_frozen_key_and_a_derived_version_in_the_browser(
    page, frozen_rows_teardown, celery_worker_process, key_campaign, author
):
    """The build, the freeze and the derive each run as a job in the worker; the job's page follows them."""
    from keys.models import GoldKey
    from tests.adjudication.conftest import decide

    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    browser_login(page, author)
    page.goto(f"/adjudicate/{key_campaign.slug}/")
    page.click("[data-testid=next-step] a")
    page.fill("[data-testid=build-form] input[name=version]", "TWIST-ui-v1.0")
    page.click("[data-testid=build-form] button[type=submit]")
    page.wait_for_selector("[data-testid=freeze-review]")
    assert "below the bar." in page.inner_text("[data-testid=bar-check]")  # 0.771 against 0.8
    page.check("input[name=confirm]")
    page.check("input[name=below_bar]")
    page.click("[data-testid=freeze-review] button[type=submit]")
    page.wait_for_selector("text=is frozen and its release sealed")
    assert GoldKey.objects.get(version="TWIST-ui-v1.0").is_frozen

    # An erratum filed and accepted on the page, then the next version previewed and derived.
    page.fill(".erratum-form input[name=item]", "s-0002")
    page.select_option(".erratum-form select[name=kind]", "drop")
    page.fill(".erratum-form textarea[name=description]", "a duplicate of s-0005")
    page.click(".erratum-form button[type=submit]")
    page.wait_for_selector("text=filed against TWIST-ui-v1.0")
    page.fill("form.decide input[name=note]", "agreed")
    page.click("form.decide button[value=accept]")
    page.click("[data-testid=derive-link] a")
    page.wait_for_selector("[data-testid=derive-preview]")
    assert "s-0002" in page.inner_text("[data-testid=derive-preview]")
    page.click("[data-testid=derive-preview] form button[type=submit]")
    page.wait_for_selector("text=derived from TWIST-ui-v1.0")
    derived = GoldKey.objects.get(version="TWIST-ui-v1.1")
    assert derived.is_frozen and not derived.entries.filter(external_id="s-0002").exists()
