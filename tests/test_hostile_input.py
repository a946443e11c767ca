"""No server error on any input: a 20-digit id, a NUL byte or a lone surrogate in any URL argument, and NUL
bytes or lone surrogates in the bodies of every write, each get a 4xx with a plain message — walked over
every URL pattern, on whichever database the suite runs on (SQLite, and PostgreSQL with DATABASE_URL)."""

import json
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import resolve
from django.urls.exceptions import Resolver404

from keys.models import Erratum
from tests.adjudication.conftest import *  # noqa: F403 (the key fixtures)
from tests.annotation.test_blindness import _body, _pools, candidate_urls, url_templates

HUGE_ID = "9" * 20  # past any 64-bit integer: SQLite raised OverflowError, PostgreSQL "out of range"
# As a URL carries them: NUL percent-encoded, and the UTF-8 encoding of the lone surrogate U+D800
# (which is no valid UTF-8: Django keeps it percent-encoded), both in a text argument and alone.
HOSTILE_ARGUMENTS = [HUGE_ID, "TWIST%00v1", "%00", "%ED%A0%80", "a%ED%A0%80b"]
# Text no database stores (PostgreSQL refuses NUL in text; neither encodes a lone surrogate as UTF-8).
HOSTILE_TEXTS = ["before\x00after", "before\ud800after", "\udfff"]
FIELDS = ["description", "note", "notes", "value", "kind", "item", "item_external_id", "version", "key_version",
          "slug", "text", "action", "new_gold", "guidelines", "gold", "reason", "name", "q", "annotators"]
MAX_ADMIN_PATTERNS = 12


def _hostile_urls(pools):
    """Each pattern with one argument at a time hostile, the others filled with real values."""
    seen, admin = set(), 0
    for fmt, params in url_templates():
        if not params:
            continue
        if fmt.startswith("/admin/"):
            admin += 1
            if admin > MAX_ADMIN_PATTERNS:
                continue
        real = {}
        for name in params:
            pool = pools["ints"] if name in {"pk", "id", "position", "object_id"} or name.endswith("_pk") else (
                pools["slugs"] + pools["strings"] + pools["ints"])
            real[name] = quote(str(pool[0]), safe="")
        for name in params:
            for bad in HOSTILE_ARGUMENTS:
                path = fmt % {**real, name: bad}
                try:
                    resolve(path)
                except Resolver404:
                    continue
                if path not in seen:
                    seen.add(path)
                    yield path


def _plain(response) -> bool:
    text = _body(response)
    return "Traceback (most recent call last)" not in text and "Exception Value" not in text


@pytest.fixture
def hostile_world(frozen_key, outsider, author, annotator_a):
    from keys.services import erratum_file

    erratum_file(key=frozen_key, item_external_id="s-0002", kind="drop", description="filed", user=outsider)
    return frozen_key


@pytest.mark.parametrize("who", ["admin_user", "author", "annotator_a", "outsider"])
def test_a_hostile_url_argument_gets_a_plain_4xx_never_a_server_error(hostile_world, who, request):
    user = request.getfixturevalue(who)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    failures, sent = [], 0
    pools = _pools()
    pools["strings"] = [hostile_world.version, *pools["strings"]]
    for path in _hostile_urls(pools):
        for response in (client.get(path, HTTP_ACCEPT="text/html"),
                         client.post(path, {"description": "x", "kind": "drop", "item": "s-0001"}),
                         client.post(path, json.dumps({"values": {"q1": "consistent"}}), content_type="application/json",
                                     HTTP_ACCEPT="application/json")):
            sent += 1
            if response.status_code >= 500 or not _plain(response):
                failures.append(f"{response.request['REQUEST_METHOD']} {path}: {response.status_code}")
    assert sent > 200
    assert failures == [], "\n".join(failures)


def _writes(client, path):
    for text in HOSTILE_TEXTS:
        body = {field: text for field in FIELDS} | {"values": {"q1": text, "label": text, "verdict": text, "p2note": text}}
        yield client.post(path, json.dumps(body), content_type="application/json", HTTP_ACCEPT="application/json")
        yield client.put(path, json.dumps(body), content_type="application/json", HTTP_ACCEPT="application/json")
        yield client.patch(path, json.dumps(body), content_type="application/json", HTTP_ACCEPT="application/json")
        if "\x00" in text:  # a form cannot carry a lone surrogate (Django decodes forms with replacement)
            yield client.post(path, {field: text for field in FIELDS})


@pytest.mark.parametrize("who", ["admin_user", "author", "annotator_a", "outsider"])
def test_nul_and_lone_surrogates_in_any_write_get_a_plain_4xx_never_a_server_error(hostile_world, who, request):
    user = request.getfixturevalue(who)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    failures, sent = [], 0
    pools = _pools()
    pools["strings"] = [hostile_world.version, *pools["strings"]]
    pools["ints"] = sorted(Erratum.objects.values_list("pk", flat=True)) + pools["ints"]

    def cap(fmt):
        return 0 if fmt.startswith(("/admin/", "/accounts/login", "/accounts/logout")) else 2

    for path in candidate_urls(pools, limit=cap):
        for response in _writes(client, path):
            sent += 1
            if response.status_code >= 500 or not _plain(response):
                failures.append(f"{response.request['REQUEST_METHOD']} {path}: {response.status_code}")
    assert sent > 200
    assert failures == [], "\n".join(failures)


def _api(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _post_json(client, path, body):
    # json.dumps writes a lone surrogate as its escape, as any client sending one does.
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_an_erratum_body_that_no_database_stores_is_a_400_naming_the_field(hostile_world, outsider, text):
    before = Erratum.objects.count()
    response = _post_json(_api(outsider), f"/api/keys/{hostile_world.version}/errata/",
                          {"item_external_id": "s-0001", "kind": "drop", "description": text})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("description: the text holds a")
    assert Erratum.objects.count() == before


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_an_erratum_decision_note_that_no_database_stores_is_a_400_and_decides_nothing(hostile_world, author, text):
    erratum = Erratum.objects.get()
    response = _post_json(_api(author), f"/api/errata/{erratum.pk}/decision/", {"decision": "accept", "note": text})
    assert response.status_code == 400 and response.json()["detail"].startswith("note: the text holds a")
    erratum.refresh_from_db()
    assert erratum.status == "filed"


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_an_adjudication_decision_note_that_no_database_stores_is_a_400(key_campaign, author, text):
    from adjudication.models import Decision
    from items.models import Item

    item = Item.objects.filter(item_set=key_campaign.item_set).order_by("pk").first()
    before = Decision.objects.count()
    response = _api(author).put(f"/api/adjudication/{key_campaign.slug}/decisions/{item.pk}/",
                                json.dumps({"action": "keep", "note": text}), content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"].startswith("note: the text holds a")
    assert Decision.objects.count() == before


def test_an_erratum_form_with_a_nul_is_a_400_naming_the_field(hostile_world, outsider):
    before = Erratum.objects.count()
    response = _api(outsider).post(f"/keys/{hostile_world.version}/errata/",
                                   {"item": "s-0001", "kind": "drop", "description": "a\x00b"})
    assert response.status_code == 400
    assert "field &#x27;description&#x27;: a NUL character" in response.content.decode()
    assert Erratum.objects.count() == before


@pytest.mark.parametrize("path", ["/api/errata/{huge}/decision/", "/api/annotation/assignments/{huge}/",
                                  "/adjudicate/small/items/{huge}/", "/keys/jobs/{huge}/"])
def test_a_twenty_digit_id_is_the_404_of_a_missing_id(key_campaign, author, path):
    response = _api(author).get(path.format(huge=HUGE_ID))
    assert response.status_code in (404, 405)
