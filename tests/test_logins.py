"""Logins: twenty wrong passwords lock the account for a while; passwords are checked by Django's validators."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client

LOGIN = "/accounts/login/"


def _attempt(user, password, address="127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": user.username, "password": password})


def _fail(user, times, address="127.0.0.1") -> list[int]:
    return [_attempt(user, "wrong-password", address).status_code for _ in range(times)]


def test_nineteen_wrong_passwords_still_let_the_right_one_in(annotator_a, settings):
    assert set(_fail(annotator_a, settings.AXES_FAILURE_LIMIT - 1)) == {200}
    assert _attempt(annotator_a, "ann_a-pass").status_code == 302


def test_twenty_wrong_passwords_lock_the_account_even_with_the_right_one(annotator_a, settings):
    assert settings.AXES_FAILURE_LIMIT == 20
    assert _fail(annotator_a, 20) == [200] * 19 + [429]  # the form again with its error; then the lock
    response = _attempt(annotator_a, "ann_a-pass")
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in response.client.session


def test_a_locked_account_stays_locked_from_another_address(annotator_a):
    _fail(annotator_a, 20, address="10.0.0.1")
    assert _attempt(annotator_a, "ann_a-pass", address="10.0.0.2").status_code == 429


def test_an_address_that_failed_twenty_times_is_locked_for_every_account(annotator_a, annotator_b):
    _fail(annotator_a, 10, address="10.0.0.9")
    _fail(annotator_b, 10, address="10.0.0.9")
    assert _attempt(annotator_b, "ann_b-pass", address="10.0.0.9").status_code == 429
    assert _attempt(annotator_b, "ann_b-pass", address="10.0.0.10").status_code == 302


def test_the_lock_lifts_after_the_cool_off(annotator_a, settings):
    _fail(annotator_a, 20)
    assert _attempt(annotator_a, "ann_a-pass").status_code == 429
    long_ago = AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=long_ago)
    assert _attempt(annotator_a, "ann_a-pass").status_code == 302


def test_the_admin_login_is_locked_too(admin_user):
    for _ in range(20):
        Client().post("/admin/login/", {"username": "root", "password": "wrong-password"})
    response = Client().post("/admin/login/", {"username": "root", "password": "root-pass"})
    assert response.status_code == 429


@pytest.mark.parametrize(
    ("password", "reason"),
    [("short1!", "too short"), ("password123", "too common"), ("48151623429", "entirely numeric")],
)
def test_weak_passwords_are_refused(password, reason):
    with pytest.raises(ValidationError, match=reason):
        validate_password(password)


def test_a_password_like_the_username_is_refused(annotator_a):
    with pytest.raises(ValidationError, match="too similar"):
        validate_password("ann_a_01", user=annotator_a)


def test_a_long_unrelated_password_is_accepted(annotator_a):
    validate_password("correct horse battery staple", user=annotator_a)


CHANGE = "/accounts/password/change/"


def _change(client, old_password):
    return client.post(CHANGE, {"old_password": old_password, "new_password1": "a-Long-new-secret-42",
                                "new_password2": "a-Long-new-secret-42"})


def test_wrong_old_passwords_on_the_change_form_lock_the_account_as_wrong_logins_do(annotator_a, settings):
    """A stolen session could otherwise try passwords there without limit."""
    client = Client()
    client.force_login(annotator_a)
    codes = [_change(client, "wrong-password").status_code for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert codes == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert _change(client, "ann_a-pass").status_code == 429  # the right one is refused while locked
    annotator_a.refresh_from_db()
    assert annotator_a.check_password("ann_a-pass")
    assert _attempt(annotator_a, "ann_a-pass").status_code == 429  # and the login with it


def test_wrong_old_passwords_count_towards_the_login_lock(annotator_a, settings):
    client = Client()
    client.force_login(annotator_a)
    for _ in range(settings.AXES_FAILURE_LIMIT // 2):
        _change(client, "wrong-password")
    _fail(annotator_a, settings.AXES_FAILURE_LIMIT - settings.AXES_FAILURE_LIMIT // 2)
    assert _attempt(annotator_a, "ann_a-pass").status_code == 429


def test_the_right_old_password_still_changes_it(annotator_a):
    client = Client()
    client.force_login(annotator_a)
    _change(client, "wrong-password")
    assert _change(client, "ann_a-pass").status_code == 302
    annotator_a.refresh_from_db()
    assert annotator_a.check_password("a-Long-new-secret-42")
