"""Goldkey deployed under a path prefix (a proxy passing SCRIPT_NAME=/goldkey): every link the pages
render carries the prefix, and the item page's save URL saves an answer."""

import re

import pytest
from django.core.handlers.wsgi import get_script_name
from django.test import Client
from django.test.client import ClientHandler
from django.urls import get_script_prefix, set_script_prefix

from annotation.models import Answer
from tests.annotation.conftest import enrollment_of

pytestmark = pytest.mark.django_db
PREFIX = "/goldkey"
URL_ATTRIBUTE = re.compile(r'(?:href|action|src|data-[a-z-]+)="(/[^"]*)"')


class PrefixedHandler(ClientHandler):
    def __call__(self, environ):
        # What Django's WSGIHandler does for every request, and the test client's handler leaves out.
        set_script_prefix(get_script_name(environ))
        return super().__call__(environ)


@pytest.fixture(autouse=True)
def restore_script_prefix(settings):
    saved = get_script_prefix()
    # The static files storage reads STATIC_URL (and with it the script prefix) once, when first used: in a
    # deployment that is its first, prefixed request; in this test process earlier tests made it unprefixed.
    # Setting STATIC_URL (to what it is) makes Django start a fresh storage now and again afterwards.
    settings.STATIC_URL = "static/"
    yield
    set_script_prefix(saved)


def prefixed_client(user=None, **kwargs) -> Client:
    """A client whose requests arrive as a proxy under /goldkey sends them: SCRIPT_NAME set, the rest in PATH_INFO."""
    client = Client(SCRIPT_NAME=PREFIX, **kwargs)
    client.handler = PrefixedHandler(kwargs.get("enforce_csrf_checks", False))
    if user is not None:
        client.force_login(user)
    return client


def local(url: str) -> str:
    """The PATH_INFO a prefixed URL arrives with."""
    assert url.startswith(PREFIX + "/"), url
    return url[len(PREFIX):]


def absolute_urls(html: str) -> list[str]:
    return URL_ATTRIBUTE.findall(html)


def test_every_link_on_the_annotators_pages_carries_the_prefix(twist_campaign, annotator_a):
    client = prefixed_client(annotator_a)
    for path in ("/", "/annotate/", "/annotate/tw/item/1/", "/keys/"):
        response = client.get(path)
        assert response.status_code == 200, path
        urls = absolute_urls(response.content.decode())
        assert urls, path
        assert [u for u in urls if not u.startswith(PREFIX + "/")] == [], path


def test_every_link_on_the_authors_pages_carries_the_prefix(twist_campaign, author):
    client = prefixed_client(author)
    for path in ("/adjudicate/", "/council/", "/annotate/overview/tw/"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert [u for u in absolute_urls(response.content.decode()) if not u.startswith(PREFIX + "/")] == [], path


def test_an_anonymous_visitor_is_sent_to_the_prefixed_login(twist_campaign):
    response = prefixed_client().get("/annotate/")
    assert response.status_code == 302 and response["Location"].startswith(f"{PREFIX}/accounts/login/")


def test_the_item_page_saves_an_answer_through_its_prefixed_save_url(twist_campaign, annotator_a):
    client = prefixed_client(annotator_a, enforce_csrf_checks=True)
    page = client.get("/annotate/tw/item/1/").content.decode()
    save_url = re.search(r'data-save-url="([^"]+)"', page).group(1)
    assert save_url.startswith(f"{PREFIX}/api/annotation/assignments/")
    response = client.post(local(save_url), {"values": {"q1": "consistent"}}, content_type="application/json",
                           HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert response.status_code == 200, response.content
    first = enrollment_of(twist_campaign, annotator_a).assignments.get(position=0)
    assert Answer.objects.get(assignment=first).values == {"q1": "consistent"}
