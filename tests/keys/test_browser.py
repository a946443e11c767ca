"""The key page in real Chromium: public without login, errata filed by a signed-in user."""

import pytest

from keys.models import Erratum
from tests.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_visitor_reads_a_frozen_key_and_a_signed_in_user_files_an_erratum(page, frozen_rows_teardown, frozen_key, outsider):
    page.goto("/keys/")
    page.click("text=TWIST-test-v1.0")
    assert frozen_key.sha256 in page.inner_text("code.hash")
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
