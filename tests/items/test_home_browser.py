import pytest

from tests.conftest import browser_login

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_annotator_can_log_in_through_the_real_login_form(page, annotator_a):
    browser_login(page, annotator_a)
    assert page.locator(".who").inner_text() == annotator_a.username
    assert "Goldkey" in page.locator("h1").inner_text()
