"""Password change and reset: Django's own views with Goldkey's pages."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_signed_in_user_changes_their_password(client, annotator_a):
    client.force_login(annotator_a)
    page = client.get(reverse("password-change"))
    assert page.status_code == 200 and "Change your password" in page.content.decode()
    done = client.post(reverse("password-change"), {
        "old_password": f"{annotator_a.username}-pass", "new_password1": "a-Long-new-secret-42",
        "new_password2": "a-Long-new-secret-42",
    })
    assert done.status_code == 302 and done["Location"] == reverse("password-change-done")
    annotator_a.refresh_from_db()
    assert annotator_a.check_password("a-Long-new-secret-42")


def test_a_wrong_old_password_is_refused_with_a_message(client, annotator_a):
    client.force_login(annotator_a)
    page = client.post(reverse("password-change"), {
        "old_password": "wrong", "new_password1": "a-Long-new-secret-42", "new_password2": "a-Long-new-secret-42",
    })
    assert page.status_code == 200 and 'class="error"' in page.content.decode()
    annotator_a.refresh_from_db()
    assert annotator_a.check_password(f"{annotator_a.username}-pass")


def test_the_change_page_needs_a_login(client):
    assert client.get(reverse("password-change")).status_code == 302


def test_a_forgotten_password_is_reset_through_the_mailed_link(client, annotator_a):
    get_user_model().objects.filter(pk=annotator_a.pk).update(email="ann@example.org")
    login = client.get(reverse("login")).content.decode()
    assert reverse("password-reset") in login
    sent = client.post(reverse("password-reset"), {"email": "ann@example.org"})
    assert sent.status_code == 302 and len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/accounts/password/reset/[^\s]+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "Another-long-secret-7", "new_password2": "Another-long-secret-7"})
    assert done.status_code == 302 and done["Location"] == reverse("password-reset-complete")
    annotator_a.refresh_from_db()
    assert annotator_a.check_password("Another-long-secret-7")
    assert "no longer works" in client.get(link, follow=True).content.decode()  # used once
