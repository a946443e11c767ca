"""Blindness is a security property. These tests walk EVERY URL pattern of the project (so new pages
of any app are covered as soon as they are merged), fill the path arguments with the real ids and
slugs of the fixture objects, GET each URL as an annotator — following nothing, error pages included
(DEBUG is off) — and assert that no hidden value appears in any response body. A second walk sends
every write method (POST, PUT, PATCH, DELETE) to every pattern with a valid, an invalid and a stale
body, so that refusals, validation errors and conflicts are searched too.

Every hidden value in the fixtures carries the marker "SECRET-": each item's rationale and family, a
Track C chain's step values and superseded values,
the contradicted quote, the other annotator's notes, Lapse condition metadata, a judged answer's judge
model, run, question date and superseded value, council vote notes, adjudication notes and generation
rejects. (A judged answer's question_id is searched for by the id walks, like every item id.)"""

import itertools
import re
from collections.abc import Iterator
from urllib.parse import quote, unquote

import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404
from django.utils.regex_helper import normalize

import protocols
from annotation.models import Answer, Assignment, Campaign, Enrollment
from annotation.services import answer_save, campaign_create, campaign_guidelines_set, enrollment_submit
from items.models import GenerationReject, Item, ItemSet
from tests.annotation.conftest import (
    answer_all_phase1,
    answer_all_phase2,
    enrollment_of,
    make_chain_items,
    make_judged_items,
    make_lapse_items,
    make_twist_items,
)

MAX_URLS_PER_PATTERN = 200
# The admin has ~70 patterns that all answer an annotator with the same login redirect; a few
# objects each suffice there (the author walk leaves the admin to the apps that own its pages).
MAX_URLS_PER_ADMIN_PATTERN = 6


def _strip(regex: str) -> str:
    regex = regex[1:] if regex.startswith("^") else regex
    for end in ("\\Z", "$"):
        if regex.endswith(end):
            regex = regex[: -len(end)]
    return regex


def url_templates(patterns=None, prefix: str = ""):
    """(format string, parameter names) for every endpoint of the URL configuration."""
    patterns = get_resolver().url_patterns if patterns is None else patterns
    for pattern in patterns:
        regex = prefix + _strip(pattern.pattern.regex.pattern)
        if isinstance(pattern, URLResolver):
            yield from url_templates(pattern.url_patterns, regex)
        else:
            for fmt, params in normalize(regex):
                yield "/" + fmt, params


def _pool_for(name: str, pools: dict) -> list:
    """Candidate values for a path parameter, the most relevant first (campaign slugs, then the rest)."""
    if name in {"pk", "id", "position", "number", "revision", "object_id", "n"} or name.endswith("_pk"):
        return pools["ints"]
    if name.endswith("_id"):
        return pools["ints"] + pools["external_ids"]
    return pools["slugs"] + pools["strings"] + pools["ints"]


def _every_first_value_in_turn(pools: list) -> Iterator[tuple]:
    """The product of the pools, taking each value of the first pool in turn (campaign A's position 1,
    campaign B's position 1, …, then each one's position 2): a per-pattern cap then cuts every campaign's
    tail, never a whole campaign — whose turn would otherwise depend on how many ids the database holds."""
    first, rest = pools[0], pools[1:]
    runs = [itertools.product([value], *rest) for value in first]
    while runs:
        alive = []
        for run in runs:
            combo = next(run, None)
            if combo is not None:
                yield combo
                alive.append(run)
        runs = alive


def candidate_urls(pools: dict, limit=None):
    """Concrete URLs for every pattern; `limit(fmt)` caps how many per pattern (default: the walk's caps)."""
    seen = set()
    for fmt, params in url_templates():
        cap = limit(fmt) if limit else (MAX_URLS_PER_ADMIN_PATTERN if fmt.startswith("/admin/") else MAX_URLS_PER_PATTERN)
        if not cap:
            continue
        combos = (
            (dict(zip(params, values, strict=True)) for values in _every_first_value_in_turn([_pool_for(p, pools) for p in params]))
            if params
            else [{}]
        )
        made = 0
        for values in combos:
            path = fmt % {k: quote(str(v), safe="") for k, v in values.items()}
            if path in seen:
                continue
            try:
                resolve(path)
            except Resolver404:
                continue
            seen.add(path)
            made += 1
            yield path
            if made >= cap:
                break


@pytest.fixture
def world(db, annotator_a, annotator_b, author):
    """Two campaigns where annotator B (and the council, and an adjudicator) have done everything and
    annotator A has just begun."""
    from council.models import CouncilMember, CouncilVote

    twist = campaign_create(slug="tw", item_set=make_twist_items(6), annotators=[annotator_a, annotator_b, author],
                            per_item=2, seed=11)
    lapse = campaign_create(slug="lp", item_set=make_lapse_items(4), annotators=[annotator_a, annotator_b, author],
                            per_item=2, seed=3)
    judged = campaign_create(slug="jd", item_set=make_judged_items(6), annotators=[annotator_a, annotator_b, author],
                             per_item=2, seed=5)
    chains = campaign_create(slug="tc", item_set=make_chain_items(6), annotators=[annotator_a, annotator_b, author],
                             per_item=2, seed=7)
    for campaign in (twist, lapse, judged, chains):
        other = enrollment_of(campaign, annotator_b)
        answer_all_phase1(other)
        if campaign.protocol == "twist_b":
            answer_all_phase2(other)
        for assignment in other.assignments.select_related("item", "enrollment__campaign"):
            spec = protocols.get(campaign.protocol)
            note_key = spec.note_key(spec.phases[-1])  # the last phase's note: p2note, notes, q1note
            answer_save(assignment=assignment, values={note_key: f"SECRET-OTHER-NOTE-{assignment.pk}"})
        enrollment_submit(enrollment=other)
        mine = enrollment_of(campaign, annotator_a).assignments.select_related("item", "enrollment__campaign")
        first = {"twist_b": {"q1": "cannot-tell"}, "lapse": {"label": "HEDGE"}, "judged": {"verdict": "incorrect"},
                 "twist_c": {"q1": "cannot-tell"}}
        answer_save(assignment=mine.first(), values=first[campaign.protocol])
    member = CouncilMember.objects.create(name="council-gpt")
    for item in Item.objects.filter(item_set=twist.item_set):
        CouncilVote.objects.create(campaign=twist, member=member, item=item, prompt_version="v1",
                                   values={"q1": "contradicts", "q1note": f"SECRET-COUNCIL-NOTE-{item.pk}"})
    try:
        from adjudication.models import Decision

        item = Item.objects.filter(item_set=twist.item_set).first()
        Decision.objects.create(campaign=twist, item=item, action="drop", note="SECRET-DECISION-NOTE")
    except ImportError:  # pragma: no cover - the adjudication app always exists here
        pass
    # Guidelines are for the annotators (so no secret in them); read already, so the item pages are walked.
    campaign_guidelines_set(campaign=twist, guidelines="# Guidelines\n\nRead the *whole* draft.", user=author)
    Enrollment.objects.filter(campaign=twist).update(guidelines_seen_at=twist.guidelines_updated_at)
    GenerationReject.objects.create(
        item_set=twist.item_set, external_id="conv-x:rej1", conversation_external_id="conv-x",
        record={"rationale": "SECRET-REJECT-RATIONALE"}, evidence_text=["SECRET-REJECT-EXCERPT"],
        verdict="SECRET-REJECT-VERDICT", dropped_by="verify",
    )
    return {"twist": twist, "lapse": lapse, "judged": judged, "chains": chains}


def _pools() -> dict:
    from django.contrib.auth import get_user_model

    from council.models import CouncilMember, CouncilVote

    ints = set(range(1, 8))  # positions
    for model in (Item, Assignment, Enrollment, Campaign, Answer, ItemSet, GenerationReject, CouncilVote, get_user_model()):
        ints.update(model.objects.values_list("pk", flat=True))
    slugs = sorted(Campaign.objects.values_list("slug", flat=True))
    external_ids = sorted(Item.objects.values_list("external_id", flat=True))
    strings = set(external_ids)
    strings.update(ItemSet.objects.values_list("name", flat=True))
    strings.update(Enrollment.objects.values_list("pseudonym", flat=True))
    strings.update(CouncilMember.objects.values_list("name", flat=True))
    strings.update(get_user_model().objects.values_list("username", flat=True))
    strings.update(["conv-x", "twist", "lapse", "v1", "TWIST-v1.0"])
    return {"ints": sorted(ints), "slugs": slugs, "external_ids": external_ids, "strings": sorted(strings - set(slugs))}


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def _walk(user, forbidden: re.Pattern, skip_prefixes=(), only_prefixes=("/",)) -> tuple[int, list[str]]:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    leaks, visited = [], 0
    for path in candidate_urls(_pools()):
        if path.startswith(skip_prefixes) or not path.startswith(only_prefixes):
            continue
        response = client.get(path, HTTP_ACCEPT="text/html,application/json")
        visited += 1
        match = forbidden.search(_body(response))
        if match and match.group(0) not in unquote(path):  # an error echoing the asked-for URL reveals nothing
            leaks.append(f"{path} ({response.status_code}): {match.group(0)} in …{_body(response)[max(0, match.start() - 80):match.end() + 40]}…")
    return visited, leaks


def item_ids_pattern() -> str:
    """Every item's external id as a whole token: a short id ("g004") must not match inside a random
    CSRF token or CSP nonce, which would fail the walk by chance; an id shown on a page is delimited."""
    ids = "|".join(re.escape(i) for i in Item.objects.values_list("external_id", flat=True))
    return rf"(?<![A-Za-z0-9])(?:{ids})(?![A-Za-z0-9])"


ANY_SECRET = re.compile(r"SECRET-[A-Z-]+[\w-]*")
ANY_SECRET_BUT_QUOTE = re.compile(r"SECRET-(?!QUOTE)[A-Z-]+[\w-]*")


def test_walk_finds_the_annotation_pages():
    paths = {fmt for fmt, _ in url_templates()}
    assert "/annotate/%(slug)s/item/%(position)s/" in paths
    assert "/api/annotation/assignments/%(pk)s/" in paths
    # the workbench: item list, skip, undo, guidelines, keyboard preferences
    assert {"/annotate/%(slug)s/items/", "/annotate/%(slug)s/item/%(position)s/skip/", "/annotate/%(slug)s/undo/",
            "/annotate/%(slug)s/guidelines/", "/annotate/preferences/"} <= paths


def test_the_workbench_pages_are_walked_with_real_campaigns_and_positions(world):
    walked = set(candidate_urls(_pools()))
    assert {"/annotate/tw/items/", "/annotate/lp/items/", "/annotate/tw/item/1/skip/", "/annotate/tw/undo/",
            "/annotate/tw/guidelines/"} <= walked


def test_annotator_in_phase1_reaches_no_hidden_value_at_any_url(world, annotator_a):
    visited, leaks = _walk(annotator_a, ANY_SECRET)
    assert visited > 50
    assert leaks == []


def test_annotator_in_phase1_never_sees_an_item_id(world, annotator_a):
    # TWIST ids name the generation batch (the contradicting-only top-ups were v1c/v1d) and Lapse
    # battery ids name the constructed label: an id is gold by another name until Phase 1 is locked.
    ids = item_ids_pattern()
    visited, leaks = _walk(annotator_a, re.compile(ids), only_prefixes=("/annotate/", "/api/annotation/", "/"))
    assert visited > 50
    assert leaks == []


def test_annotator_in_phase2_sees_the_quote_but_no_other_hidden_value(world, annotator_a):
    answer_all_phase1(enrollment_of(world["twist"], annotator_a))
    visited, leaks = _walk(annotator_a, ANY_SECRET_BUT_QUOTE)
    assert leaks == []
    body = Client()
    body.force_login(annotator_a)
    # sanity: the walk can see a quote when it is allowed to be shown (the test is able to fail)
    enrollment = enrollment_of(world["twist"], annotator_a)
    contradicting = enrollment.assignments.filter(item__gold_label="contradicting").first()
    assert "SECRET-QUOTE" in body.get(f"/annotate/tw/item/{contradicting.position + 1}/").content.decode()


def test_author_who_annotates_and_has_not_submitted_reaches_no_hidden_value(world, author):
    # An author who annotates in a campaign is blind to it whatever other role they hold. The admin
    # is left out here: authors are staff, and the admin of other apps is theirs to guard.
    visited, leaks = _walk(author, ANY_SECRET, skip_prefixes=("/admin/",))
    assert visited > 50
    assert leaks == []


def test_the_walk_reaches_every_protocols_item_pages_and_they_show_their_blind_text(world, annotator_a):
    # The judged-answer campaign's item pages are among the walked URLs, and they render for the annotator
    # (so a judge label, model, run or date placed on them would be found above).
    paths = set(candidate_urls(_pools()))
    client = Client()
    client.force_login(annotator_a)
    for slug, visible in (("tw", "Visible draft"), ("lp", "Visible response"), ("jd", "Visible hypothesis")):
        assert f"/annotate/{slug}/item/1/" in paths
        assert visible in client.get(f"/annotate/{slug}/item/1/").content.decode()


def test_annotators_have_no_admin_access(world, annotator_a, client):
    client.force_login(annotator_a)
    response = client.get("/admin/annotation/campaign/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_walk_catches_a_leaking_page(world, annotator_a, settings):
    # A page that shows the rationale, added to the URL configuration: the walk must report it.
    settings.ROOT_URLCONF = "tests.annotation.leaky_urls"
    from django.urls import clear_url_caches

    clear_url_caches()
    try:
        visited, leaks = _walk(annotator_a, ANY_SECRET, only_prefixes=("/leaky/",))
    finally:
        clear_url_caches()
    assert visited > 0 and leaks and all(leak.startswith("/leaky/") for leak in leaks)


# ----- every method, valid, invalid and stale bodies ----------------------------------------------------

WRITE_URLS_PER_PATTERN = {"/annotate/": 6, "/api/annotation/": 8}
OTHER_WRITE_URLS_PER_PATTERN = 2
# Bodies an annotator could send: valid answers of each protocol (with the confirmations and choices
# the HTML forms take), values outside the choices and keys of no or of the other phase, and a write
# based on revision 0 of a field the valid body has just changed (what a stale tab sends).
VALID_TWIST = {"values": {"q1": "consistent"}, "confirm": "yes", "choice": "accept", "action": "keep",
               "note": "a valid note"}
VALID_LAPSE = {"values": {"label": "HEDGE"}, "confirm": "yes"}
VALID_JUDGED = {"values": {"verdict": "correct"}, "confirm": "yes"}
INVALID = {"values": {"q1": "perhaps", "q9": "x", "q3": "clean", "label": "MAYBE"}, "time_on_item_ms": -5,
           "revision": "abc", "action": "explode", "new_gold": "nope"}
STALE = {"values": {"q1": "cannot-tell"}, "revision": 0, "writer": "stale-tab", "seq": 1}
VALID_PHASE2 = {"values": {"p2note": "a valid phase 2 note"}}
STALE_PHASE2 = {"values": {"p2note": "a stale phase 2 note"}, "revision": 0, "writer": "stale-tab", "seq": 2}


def _write_cap(fmt: str) -> int:
    if fmt.startswith(("/admin/", "/accounts/")):
        # The admin answers a non-staff user with the login redirect whatever the method (tested
        # above); logging in or out would change who walks.
        return 0
    for prefix, cap in WRITE_URLS_PER_PATTERN.items():
        if fmt.startswith(prefix):
            return cap
    return OTHER_WRITE_URLS_PER_PATTERN


def _requests(client, path):
    import json

    for body in (VALID_TWIST, VALID_LAPSE, VALID_JUDGED, VALID_PHASE2, INVALID, STALE, STALE_PHASE2):
        yield "POST", body, client.post(path, json.dumps(body), content_type="application/json",
                                        HTTP_ACCEPT="application/json")
    yield "POST", VALID_TWIST, client.post(path, {k: v for k, v in VALID_TWIST.items() if k != "values"})
    yield "POST", "{", client.post(path, "{", content_type="application/json")
    for method in ("put", "patch"):
        for body in (VALID_TWIST, INVALID, STALE):
            yield method.upper(), body, getattr(client, method)(path, json.dumps(body), content_type="application/json")
    yield "DELETE", STALE, client.delete(path, json.dumps(STALE), content_type="application/json")


def _write_walk(user, forbidden: re.Pattern) -> tuple[int, list[str], set[int], list[str]]:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    leaks, statuses, errors, sent = [], set(), [], 0
    pools = _pools()
    # The walker's own assignments first: the capped walk must reach the answers it may write.
    own = sorted(Assignment.objects.filter(enrollment__annotator=user).values_list("pk", flat=True))
    pools["ints"] = own + [i for i in pools["ints"] if i not in own]
    for path in candidate_urls(pools, limit=_write_cap):
        for method, body, response in _requests(client, path):
            sent += 1
            statuses.add(response.status_code)
            if response.status_code >= 500 and path.startswith(("/annotate/", "/api/annotation/")):
                errors.append(f"{method} {path}: {response.status_code}")
            match = forbidden.search(_body(response))
            if match and match.group(0) not in unquote(path) and match.group(0) not in str(body):
                leaks.append(f"{method} {path} ({response.status_code}): {match.group(0)}")
    return sent, leaks, statuses, errors


def _ids_or(secrets: re.Pattern) -> re.Pattern:
    ids = item_ids_pattern()
    return re.compile(f"{secrets.pattern}|{ids}")


def _assert_clean_write_walk(user, secrets: re.Pattern):
    sent, leaks, statuses, errors = _write_walk(user, _ids_or(secrets))
    assert sent > 500
    assert leaks == []
    assert errors == []
    # the walk reached the paths it is meant to search: writes accepted, refused, invalid, stale, absent
    assert {200, 400, 403, 404, 405, 409} <= statuses


def test_annotator_in_phase1_writing_with_every_method_and_body_meets_no_id_and_no_hidden_value(world, annotator_a):
    _assert_clean_write_walk(annotator_a, ANY_SECRET)


def test_annotator_in_phase2_writing_with_every_method_and_body_meets_no_id_and_no_hidden_value(world, annotator_a):
    answer_all_phase1(enrollment_of(world["twist"], annotator_a))
    _assert_clean_write_walk(annotator_a, ANY_SECRET_BUT_QUOTE)


def test_blind_author_writing_with_every_method_and_body_meets_no_id_and_no_hidden_value(world, author):
    _assert_clean_write_walk(author, ANY_SECRET)


def test_annotator_in_phase2_never_sees_an_item_id(world, annotator_a):
    answer_all_phase1(enrollment_of(world["twist"], annotator_a))
    ids = item_ids_pattern()
    visited, leaks = _walk(annotator_a, re.compile(ids), only_prefixes=("/annotate/", "/api/annotation/"))
    assert visited > 20
    assert leaks == []


def test_the_write_walk_catches_an_error_that_names_the_item(world, annotator_a, monkeypatch):
    # An answer refusal written the old way, naming the item id, must be reported by the walk.
    from annotation import api
    from goldkey.errors import AnnotatorError

    def leaky_save(*, assignment, **_):
        raise AnnotatorError(f"{assignment.item.external_id}: field 'q1': refused")

    monkeypatch.setattr(api, "answer_save", leaky_save)
    client = Client(raise_request_exception=False)
    client.force_login(annotator_a)
    mine = enrollment_of(world["twist"], annotator_a).assignments.first()
    responses = list(_requests(client, f"/api/annotation/assignments/{mine.pk}/answer/"))
    pattern = _ids_or(ANY_SECRET)
    assert any(pattern.search(_body(r)) for _, _, r in responses)
