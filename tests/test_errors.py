"""The one HTML error path: services raise ApplicationError; the middleware turns it into a page."""

import pytest
from django.urls import path

from goldkey import urls as project_urls
from goldkey.errors import ApplicationError, NotAllowed, NotFound


def _raises(exc):
    def view(request):
        raise exc

    return view


urlpatterns = [
    path("missing/", _raises(NotFound("no such thing"))),
    path("forbidden/", _raises(NotAllowed("not for you"))),
    path("refused/", _raises(ApplicationError("the note is required for drop"))),
    *project_urls.urlpatterns,  # the error pages link into the site
]


@pytest.fixture
def error_urls(settings):
    settings.ROOT_URLCONF = __name__


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "status"), [("/missing/", 404), ("/forbidden/", 403), ("/refused/", 400)])
def test_an_application_error_becomes_the_matching_page(client, error_urls, url, status):
    assert client.get(url).status_code == status


@pytest.mark.django_db
def test_a_refused_write_shows_its_message_inside_the_site(client, error_urls):
    html = client.get("/refused/").content.decode()
    assert '<p class="error-message" role="alert">the note is required for drop</p>' in html
    assert '<a class="brand" href="/">Goldkey</a>' in html and 'href="/keys/"' in html


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "heading", "message"), [
    ("/missing/", "Not found", "no such thing"),
    ("/forbidden/", "You may not open this page", "not for you"),
])
def test_403_and_404_pages_carry_the_navigation_and_the_message(client, error_urls, annotator_a, url, heading, message):
    client.force_login(annotator_a)
    html = client.get(url).content.decode()
    assert f"<h1>{heading}</h1>" in html and f'<p class="error-message">{message}</p>' in html
    assert '<a class="brand" href="/">Goldkey</a>' in html and 'href="/annotate/">My work</a>' in html
    assert "ann_a" in html  # the signed-in header, as on every page


@pytest.mark.django_db
def test_an_unknown_address_is_the_404_page_without_the_resolvers_internals(client):
    response = client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404 and "There is no page at this address." in html
    assert "Resolver404" not in html and "tried" not in html and '<a class="brand" href="/">Goldkey</a>' in html


@pytest.mark.django_db
def test_an_author_only_page_refuses_an_annotator_with_the_403_page(client, annotator_a):
    client.force_login(annotator_a)
    response = client.get("/adjudicate/")
    html = response.content.decode()
    assert response.status_code == 403 and 'data-testid="error-403"' in html and "Only authors may open this page." in html


def test_the_500_page_renders_without_a_request(rf):
    from django.views.defaults import server_error

    response = server_error(rf.get("/"))
    html = response.content.decode()
    assert response.status_code == 500 and "Something went wrong on our side" in html and 'href="/"' in html
