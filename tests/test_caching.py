"""Every answer that carries blind or gold material is marked not to be stored by a browser or a proxy:
walked over every URL pattern as an annotator in the middle of their work, pages and API alike."""

import pytest
from django.test import Client

from tests.annotation.test_blindness import _pools, candidate_urls, world  # noqa: F401 (the fixture)


def test_every_answer_an_annotator_gets_is_not_to_be_stored(world, annotator_a):  # noqa: F811
    client = Client(raise_request_exception=False)
    client.force_login(annotator_a)
    stored, visited = [], 0
    for path in candidate_urls(_pools()):
        for accept in ("text/html", "application/json"):
            response = client.get(path, HTTP_ACCEPT=accept)
            visited += 1
            if "no-store" not in response.get("Cache-Control", ""):
                stored.append(f"{path} ({response.status_code}, {accept}): {response.get('Cache-Control')}")
    assert visited > 100
    assert stored == []


@pytest.mark.parametrize("path", ["/annotate/tw/item/1/", "/api/annotation/assignments/?campaign=tw", "/annotate/tw/items/"])
def test_the_annotators_work_pages_are_marked_no_store_and_private(world, annotator_a, path):  # noqa: F811
    client = Client()
    client.force_login(annotator_a)
    response = client.get(path)
    assert response.status_code == 200
    assert {"no-store", "private"} <= {part.strip() for part in response["Cache-Control"].split(",")}
