"""Freezing and publishing are separate steps: a frozen key is sealed but embargoed until an author
publishes it (service, page, command, admin), and the database refuses a publication that is not of a
frozen key, or a change of one."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, InternalError, transaction
from django.urls import reverse

from goldkey.errors import ApplicationError, NotAllowed
from keys.models import KeyPublication
from keys.services import key_build, key_publish
from tests.adjudication.conftest import decide

pytestmark = pytest.mark.django_db


def _urls(version: str) -> list[str]:
    return [reverse("keys:detail", args=[version]), reverse("keys:jsonl", args=[version]),
            reverse("keys:download", args=[version]), reverse("keys:errata-feed", args=[version]),
            reverse("scoring:scores", args=[version]), f"/api/keys/{version}/", f"/api/keys/{version}/errata/"]


def test_an_embargoed_key_is_404_to_anonymous_and_signed_in_readers_and_open_to_authors(client, embargoed_key, outsider, author):
    for url in _urls(embargoed_key.version):
        assert client.get(url).status_code == 404, url
    assert embargoed_key.version not in client.get("/keys/").content.decode()
    assert embargoed_key.version not in client.get("/api/keys/").content.decode()
    client.force_login(outsider)
    for url in _urls(embargoed_key.version):
        assert client.get(url).status_code == 404, url
    client.force_login(author)
    page = client.get(_urls(embargoed_key.version)[0]).content.decode()
    assert 'data-testid="embargoed"' in page
    download = client.get(_urls(embargoed_key.version)[2])
    assert download.status_code == 200 and download["Cache-Control"] == "private, no-store"


def test_an_author_publishes_from_the_key_page_and_the_key_becomes_public(client, embargoed_key, author):
    client.force_login(author)
    url = reverse("keys:publish", args=[embargoed_key.version])
    client.post(url)  # without the confirmation: nothing
    assert not KeyPublication.objects.exists()
    assert client.post(url, {"confirm": "yes"}).status_code == 302
    assert KeyPublication.objects.get(key=embargoed_key).published_by == author
    client.logout()
    for url in _urls(embargoed_key.version):
        assert client.get(url).status_code == 200, url
    assert client.get(_urls(embargoed_key.version)[2])["Cache-Control"].startswith("public")
    with pytest.raises(ApplicationError, match="already published"):
        key_publish(key=embargoed_key, user=author)


def test_only_authors_publish(client, embargoed_key, outsider):
    with pytest.raises(NotAllowed):
        key_publish(key=embargoed_key, user=outsider)
    client.force_login(outsider)
    assert client.post(reverse("keys:publish", args=[embargoed_key.version]), {"confirm": "yes"}).status_code == 403
    assert not KeyPublication.objects.exists()


def test_a_draft_cannot_be_published_and_the_database_refuses_it_too(key_campaign, author):
    decide(key_campaign, "s-0001", "drop", author)
    decide(key_campaign, "s-0004", "keep", author)
    draft = key_build(campaign=key_campaign, version="K-draft", user=author)
    with pytest.raises(ApplicationError, match="is a draft"):
        key_publish(key=draft, user=author)
    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
        KeyPublication.objects.create(key=draft)


def test_the_database_refuses_to_change_a_publication(embargoed_key, author):
    key_publish(key=embargoed_key, user=author)
    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
        KeyPublication.objects.filter(key=embargoed_key).update(published_by=None)


def test_the_publish_command_publishes_with_dry_run_and_json(embargoed_key, author, capsys):
    call_command("key_publish", embargoed_key.version, "--by", author.username, "--dry-run")
    assert not KeyPublication.objects.exists()
    call_command("key_publish", embargoed_key.version, "--by", author.username)
    assert KeyPublication.objects.filter(key=embargoed_key).exists()
    with pytest.raises(CommandError, match="already published"):
        call_command("key_publish", embargoed_key.version, "--by", author.username)


def test_the_admin_action_publishes(client, embargoed_key, admin_user):
    client.force_login(admin_user)
    client.post("/admin/keys/goldkey/", {"action": "publish_keys", "_selected_action": [embargoed_key.pk]})
    assert KeyPublication.objects.filter(key=embargoed_key).exists()
