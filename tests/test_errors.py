"""The one HTML error path: services raise ApplicationError; the middleware turns it into a page."""

import pytest
from django.urls import path

from goldkey.errors import ApplicationError, NotAllowed, NotFound


def _raises(exc):
    def view(request):
        raise exc

    return view


urlpatterns = [
    path("missing/", _raises(NotFound("no such thing"))),
    path("forbidden/", _raises(NotAllowed("not for you"))),
    path("refused/", _raises(ApplicationError("the note is required for drop"))),
]


@pytest.fixture
def error_urls(settings):
    settings.ROOT_URLCONF = __name__


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "status"), [("/missing/", 404), ("/forbidden/", 403), ("/refused/", 400)])
def test_an_application_error_becomes_the_matching_page(client, error_urls, url, status):
    assert client.get(url).status_code == status


@pytest.mark.django_db
def test_a_refused_write_shows_its_message(client, error_urls):
    assert client.get("/refused/").content.decode() == "the note is required for drop"
