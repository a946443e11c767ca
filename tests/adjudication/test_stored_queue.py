"""The stored queue: the same entries as the queue computed from the whole campaign (on the released
TWIST trail too), kept current as answers and council votes change, and pages that read it in the same
number of queries whatever the campaign size."""

import json
import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from adjudication import stored_queue
from adjudication.models import Decision, QueueItem, QueueState
from adjudication.pages import next_undecided
from adjudication.selectors import campaign_data, queue_from_data
from adjudication.services import decision_save, queue_sync
from annotation.models import Assignment
from annotation.services import answer_save
from council.models import CouncilMember, CouncilVote
from items.models import Item
from tests.adjudication.conftest import (
    AGREE,
    DISAGREE,
    NOT_SELF_CONTAINED,
    _council_import,
    make_twist_campaign,
)
from tests.conftest import close_campaign

pytestmark = pytest.mark.django_db


def stored(campaign) -> list[tuple]:
    rows = QueueItem.objects.filter(campaign=campaign, queued=True).order_by("sort_key")
    return [(r.item_id, r.reasons, r.suggestion, r.suggestion_why, r.blocking, r.band) for r in rows]


def recomputed(campaign) -> list[tuple]:
    return [
        (e.item.id, e.reasons, e.suggestion, e.suggestion_why, e.blocking, e.band)
        for e in queue_from_data(campaign_data(campaign))
    ]


def counts(campaign) -> stored_queue.QueueCounts:
    return stored_queue.counts(campaign, n_queued=QueueState.objects.get(campaign=campaign).n_queued)


def many_items(n: int) -> dict:
    kinds = [AGREE, DISAGREE, NOT_SELF_CONTAINED]
    return {f"conv-1:v1b{i:04d}": kinds[i % 3] for i in range(n)}


def item_id(external_id: str) -> int:
    return Item.objects.get(external_id=external_id).id


def test_stored_queue_is_the_recomputed_queue_on_the_released_twist_trail(twist_trail, shared_data, author):
    queue_sync(campaign=twist_trail)
    released = json.loads(shared_data("twist-v1", "annotation", "adjudication_decisions.json").read_text())["decisions"]
    assert stored(twist_trail) == recomputed(twist_trail)
    assert {Item.objects.get(pk=row[0]).external_id for row in stored(twist_trail)} == set(released)
    # The council's votes arrive after the queue was built: each new member changes every item's band.
    _council_import(twist_trail, shared_data("twist-v1", "annotation") / "council")
    queue_sync(campaign=twist_trail)
    with_council = stored(twist_trail)
    assert with_council == recomputed(twist_trail)
    assert len(with_council) > 39 and any("council_majority_against" in reasons for _, reasons, *_ in with_council)
    state = QueueState.objects.get(campaign=twist_trail)
    assert (state.n_items, state.n_queued) == (200, len(with_council))


def test_the_queue_page_shows_the_published_retained_set_of_the_released_trail(client, twist_decided, author):
    client.force_login(author)
    page = client.get(reverse("adjudication:queue", args=[twist_decided.slug])).content.decode()
    assert stored(twist_decided) == recomputed(twist_decided)
    assert 'data-testid="retained-n">161<' in page and 'data-testid="retained-kappa">0.851<' in page


def test_a_vote_of_a_counted_member_refreshes_only_its_item(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(9), slug="votes")
    member = CouncilMember.objects.create(name="judge")
    agreed = item_id("conv-1:v1b0000")
    CouncilVote.objects.create(campaign=campaign, member=member, item_id=item_id("conv-1:v1b0003"), prompt_version="v1",
                               values={"q1": "contradicts"})
    queue_sync(campaign=campaign)
    pks = dict(QueueItem.objects.filter(campaign=campaign).values_list("item_id", "pk"))
    assert agreed not in [row[0] for row in stored(campaign)]
    CouncilVote.objects.create(campaign=campaign, member=member, item_id=agreed, prompt_version="v1", values={"q1": "consistent"})
    queue_sync(campaign=campaign)
    assert stored(campaign) == recomputed(campaign)
    assert agreed in [row[0] for row in stored(campaign)]
    # Refreshed in place, not rebuilt: every row is the one the build wrote.
    assert dict(QueueItem.objects.filter(campaign=campaign).values_list("item_id", "pk")) == pks


def test_another_campaigns_votes_move_the_mark_without_touching_this_queue(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(6), slug="mine")
    other = make_twist_campaign([annotator_a, annotator_b], {"conv-2:v1b1": AGREE}, slug="theirs")
    state = queue_sync(campaign=campaign)
    member = CouncilMember.objects.create(name="judge")
    vote = CouncilVote.objects.create(campaign=other, member=member, item_id=item_id("conv-2:v1b1"), prompt_version="v1",
                                      values={"q1": "consistent"})
    after = queue_sync(campaign=campaign)
    assert after.council_members == [] and after.version == state.version  # nothing of this campaign changed
    if connection.vendor == "sqlite":  # one writer at a time: the mark moves past the row at once
        assert vote.id <= after.votes_mark
    # On PostgreSQL a row younger than the commit grace stays above the mark and is read again by the next
    # sync, which still changes nothing here.
    assert queue_sync(campaign=campaign).version == state.version
    assert stored(campaign) == recomputed(campaign)


def test_answers_saved_while_annotating_refresh_the_stored_queue_until_it_closes(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], {"conv-1:v1b1": ({}, {}), "conv-1:v1b2": AGREE},
                                   slug="open", close=False)
    queue_sync(campaign=campaign)
    assert [row[1] for row in stored(campaign)] == [["missing_answers"]]
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign, item__external_id="conv-1:v1b1").select_related(
        "item", "enrollment__campaign"
    ):
        q1 = "contradicts" if assignment.enrollment.pseudonym == "A" else "consistent"
        answer_save(assignment=assignment, values={"q1": q1}, source="import")
    queue_sync(campaign=campaign)
    assert stored(campaign) == recomputed(campaign)
    assert [row[1] for row in stored(campaign)] == [["q1_disagreement"]]
    close_campaign(campaign)
    assert queue_sync(campaign=campaign).answers_final


def test_next_undecided_follows_the_queue_order_and_wraps_round(small_campaign, author):
    queue_sync(campaign=small_campaign)
    order = [row[0] for row in stored(small_campaign)]
    assert len(order) == 3
    assert next_undecided(small_campaign, after=order[0]).item_id == order[1]
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=order[1]), action="keep", user=author)
    assert next_undecided(small_campaign, after=order[0]).item_id == order[2]
    assert next_undecided(small_campaign, after=order[2]).item_id == order[0]
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=order[0]), action="keep", user=author)
    assert next_undecided(small_campaign, after=order[2]) is None


def test_a_decision_written_by_any_path_marks_its_item_decided(small_campaign, author):
    queue_sync(campaign=small_campaign)
    first, second, _ = [row[0] for row in stored(small_campaign)]
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=first), action="keep", user=author)
    assert QueueItem.objects.get(campaign=small_campaign, item_id=first).decided  # at commit, by the service
    Decision.objects.create(campaign=small_campaign, item_id=second, action="keep")  # not through the service
    assert counts(small_campaign) == stored_queue.QueueCounts(decided=1, undecided=2)
    queue_sync(campaign=small_campaign)
    assert counts(small_campaign) == stored_queue.QueueCounts(decided=2, undecided=1)


def test_thousands_of_decisions_written_at_once_are_all_marked_decided(annotator_a, annotator_b, monkeypatch):
    from adjudication import services

    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(30), slug="bulk")
    queue_sync(campaign=campaign)
    monkeypatch.setattr(services, "REFRESH_LIMIT", 3)  # several chunks of item ids
    Decision.objects.bulk_create(Decision(campaign=campaign, item_id=row[0], action="keep") for row in stored(campaign))
    queue_sync(campaign=campaign)
    assert counts(campaign) == stored_queue.QueueCounts(decided=20, undecided=0)


def test_the_queue_page_shows_the_queue_a_page_at_a_time(client, author, annotator_a, annotator_b):
    size = stored_queue.PAGE_SIZE
    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(3 * size + 30), slug="paged")
    client.force_login(author)
    url = reverse("adjudication:queue", args=[campaign.slug])
    first, last = client.get(url).content.decode(), client.get(url + "?page=3").content.decode()
    order = [Item.objects.get(pk=row[0]).external_id for row in stored(campaign)]
    assert len(order) == 2 * size + 20 and "page 1 of 3" in first and "page 3 of 3" in last
    assert order[size - 1] in first and order[size] not in first
    assert order[2 * size] in last and order[2 * size - 1] not in last and f"<td>{2 * size + 1}</td>" in last
    assert f"0 of {2 * size + 20} queued items decided" in first


def test_the_queue_page_figures_are_cached_until_a_decision_changes(client, small_campaign, author, monkeypatch):
    from adjudication import agreement

    client.force_login(author)
    queue_sync(campaign=small_campaign)
    for row in stored(small_campaign):
        decision_save(campaign=small_campaign, item=Item.objects.get(pk=row[0]), action="keep", user=author)
    url = reverse("adjudication:queue", args=[small_campaign.slug])
    assert 'data-testid="retained-n">5<' in client.get(url).content.decode()
    calls = []
    monkeypatch.setattr(agreement, "queue_retained", lambda *a, **k: calls.append(1) or {})
    assert 'data-testid="retained-n">5<' in client.get(url).content.decode() and not calls  # the cached figures
    dropped = Decision.objects.filter(campaign=small_campaign).first().item
    decision_save(campaign=small_campaign, item=dropped, action="drop", note="not stated", user=author)
    client.get(url)
    assert calls == [1]  # a decision changed the state: computed again


def _counts(client, small: str, large: str, method: str = "get", data=None) -> list[int]:
    counts = []
    for url in (small, large):
        with CaptureQueriesContext(connection) as queries:
            response = getattr(client, method)(url, data or {})
        assert response.status_code in (200, 302), response.status_code
        counts.append(len(queries))
    return counts


@pytest.fixture
def small_and_large(client, author, annotator_a, annotator_b):
    """Two closed campaigns of 20 and 200 items (two in three queued), their queues built."""
    client.force_login(author)
    campaigns = []
    for slug, n in (("c-20", 20), ("c-200", 200)):
        campaign = make_twist_campaign([annotator_a, annotator_b], {f"{k}-{slug}": v for k, v in many_items(n).items()}, slug=slug)
        queue_sync(campaign=campaign)
        campaigns.append(campaign)
    return campaigns


def test_the_queue_page_runs_the_same_queries_for_20_and_200_items(client, small_and_large):
    small, large = (reverse("adjudication:queue", args=[c.slug]) for c in small_and_large)
    _counts(client, small, large)  # the figures cached for this state
    counts = _counts(client, small, large)
    assert counts[0] == counts[1], counts


def test_the_item_page_runs_the_same_queries_for_20_and_200_items(client, small_and_large):
    urls = [reverse("adjudication:item", args=[c.slug, stored(c)[1][0]]) for c in small_and_large]
    counts = _counts(client, *urls)
    assert counts[0] == counts[1], counts


def test_a_decision_and_the_next_undecided_run_the_same_queries_for_20_and_200_items(client, small_and_large):
    urls = [reverse("adjudication:item", args=[c.slug, stored(c)[1][0]]) for c in small_and_large]
    counts = []
    for campaign, url in zip(small_and_large, urls, strict=True):
        # As an adjudicator works: after a decision in the same campaign (a decision in another campaign
        # since moves the decision mark by one read more).
        client.post(reverse("adjudication:item", args=[campaign.slug, stored(campaign)[0][0]]), {"action": "keep"})
        counts.append(_one(client, "post", url, {"action": "keep"}))
    assert counts[0] == counts[1], counts
    assert Decision.objects.count() == 4
    nexts = [stored_queue.next_undecided(c, after=stored(c)[1][0]).item_id for c in small_and_large]
    assert nexts == [stored(c)[2][0] for c in small_and_large]


def places(campaign) -> list[int]:
    return list(QueueItem.objects.filter(campaign=campaign, queued=True).order_by("sort_key").values_list("place", flat=True))


def test_each_queued_entry_keeps_its_place_in_the_queue_order_when_a_vote_queues_another(annotator_a, annotator_b):
    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(9), slug="places")
    member = CouncilMember.objects.create(name="judge")
    CouncilVote.objects.create(campaign=campaign, member=member, item_id=item_id("conv-1:v1b0003"), prompt_version="v1",
                               values={"q1": "contradicts"})
    queue_sync(campaign=campaign)
    before = stored(campaign)
    assert places(campaign) == list(range(len(before)))
    CouncilVote.objects.create(campaign=campaign, member=member, item_id=item_id("conv-1:v1b0000"), prompt_version="v1",
                               values={"q1": "consistent"})
    queue_sync(campaign=campaign)  # a refresh of one item, which joins the queue ahead of others
    after = stored(campaign)
    assert len(after) == len(before) + 1 and item_id("conv-1:v1b0000") in [row[0] for row in after[:-1]]
    assert places(campaign) == list(range(len(after)))


def test_the_decision_counts_kept_through_decisions_equal_a_recount(client, small_campaign, author):
    client.force_login(author)
    client.get(reverse("adjudication:queue", args=[small_campaign.slug]))  # counts and caches the counts
    first, second, _ = [row[0] for row in stored(small_campaign)]
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=first), action="keep", user=author)
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=first), action="drop", note="changed", user=author)
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=second), action="keep", user=author)
    state = QueueState.objects.get(campaign=small_campaign)
    assert state.counts_version == state.version  # kept current by the decisions: no recount due
    assert stored_queue.QueueCounts(state.n_decided, state.n_undecided) == counts(small_campaign)
    assert counts(small_campaign) == stored_queue.QueueCounts(decided=2, undecided=1)


def test_after_a_decision_the_next_read_of_the_queue_writes_nothing(small_campaign, author):
    state = queue_sync(campaign=small_campaign)
    decision_save(campaign=small_campaign, item=Item.objects.get(pk=stored(small_campaign)[0][0]), action="keep", user=author)
    with CaptureQueriesContext(connection) as queries:
        after = queue_sync(campaign=small_campaign)
    # One query on SQLite; PostgreSQL keeps the rows of the last seconds above the mark (COMMIT_GRACE), so
    # it reads the new decision again and finds it applied.
    assert len(queries) == (1 if connection.vendor == "sqlite" else 2), [q["sql"] for q in queries.captured_queries]
    assert after.version == state.version + 1  # the decision's own change, not a second one by the sync


def test_the_sync_right_after_a_decision_takes_the_state_the_decision_left_without_a_query(small_campaign, author):
    queue_sync(campaign=small_campaign)
    result = decision_save(campaign=small_campaign, item=Item.objects.get(pk=stored(small_campaign)[0][0]),
                           action="keep", user=author)
    with CaptureQueriesContext(connection) as queries:
        state = queue_sync(campaign=small_campaign, recorded=result.queue)
    assert len(queries) == 0 and state is result.queue
    plain = queue_sync(campaign=small_campaign)  # what reading it again gives: the same state
    fields = ("version", "counts_version", "n_decided", "n_undecided", "decisions_mark", "decisions_seen", "votes_mark")
    assert [getattr(state, f) for f in fields] == [getattr(plain, f) for f in fields]


def test_a_row_a_decision_did_not_apply_is_still_synced_after_it(small_campaign, author):
    """A council vote written before the decision is above the vote mark and not applied by it: the sync
    reads and applies it (a new member: the queue rebuilt), as without the decision's state."""
    queue_sync(campaign=small_campaign)
    member = CouncilMember.objects.create(name="judge")
    CouncilVote.objects.create(campaign=small_campaign, member=member, item_id=item_id("conv-1:v1b1"),
                               prompt_version="v1", values={"q1": "contradicts"})
    result = decision_save(campaign=small_campaign, item=Item.objects.get(pk=stored(small_campaign)[0][0]),
                           action="keep", user=author)
    assert result.queue is None  # the decision left a vote to apply: no state for the sync to take
    state = queue_sync(campaign=small_campaign, recorded=result.queue)
    assert state.council_members == ["judge"] and stored(small_campaign) == recomputed(small_campaign)


def _one(client, method: str, url: str, data=None, **kwargs) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(url, data or {}, **kwargs)
    assert response.status_code in (200, 302), response.status_code
    return len(queries)


def test_the_adjudication_pages_run_no_more_queries_than_these(client, small_and_large):
    # Each was more (queue page 11, item page 18, decision POST 26) before the stored place, the one-query
    # sync and a decision that applies its own row.
    campaign = small_and_large[1]
    queue = reverse("adjudication:queue", args=[campaign.slug])
    item = reverse("adjudication:item", args=[campaign.slug, stored(campaign)[1][0]])
    _one(client, "get", queue)  # the counts and figures cached for this state
    assert _one(client, "get", queue) <= 6
    assert _one(client, "get", item) <= 9  # undecided, no council: no decision, history or ballots to read
    # 13 queries and the transaction's two statements (a savepoint and its release inside the test's); the
    # sync after it takes the queue state the decision left (before: 16 and 18). On PostgreSQL the decision
    # reads the rows the commit grace holds above the mark (COMMIT_GRACE), which the sync no longer reads again.
    assert _one(client, "post", item, {"action": "keep"}) <= (15 if connection.vendor == "sqlite" else 16)


def test_a_decision_answered_with_the_next_page_runs_fewer_queries_than_the_post_and_the_get(client, small_and_large):
    counts = []
    for campaign in small_and_large:
        first, second, third = (row[0] for row in stored(campaign)[:3])
        item = reverse("adjudication:item", args=[campaign.slug, first])
        _one(client, "get", item)
        post = _one(client, "post", item, {"action": "keep"})
        get = _one(client, "get", reverse("adjudication:item", args=[campaign.slug, second]))
        with CaptureQueriesContext(connection) as queries:
            response = client.post(reverse("adjudication:item", args=[campaign.slug, second]), {"action": "keep"},
                                   headers={"X-Goldkey-Next": "page"})
        assert response.status_code == 200 and response["X-Goldkey-Url"].endswith(f"/items/{third}/")
        counts.append(len(queries))
        # The session, user, campaign, role and queue-state reads once, not twice (on PostgreSQL also the
        # second read of the decision held above the mark by COMMIT_GRACE), and the next item's stored entry
        # read with the search for it.
        assert len(queries) <= post + get - 6, (post, get, [q["sql"] for q in queries.captured_queries])
        # And no more than it is now: 16 queries and the decision's savepoint and its release (PostgreSQL: one
        # more, the decisions the commit grace holds above the mark).
        assert len(queries) <= (18 if connection.vendor == "sqlite" else 19), [q["sql"] for q in queries.captured_queries]
    assert counts[0] == counts[1], counts


def test_a_decision_whose_next_page_is_held_runs_only_the_decisions_queries_for_20_and_200_items(client, small_and_large):
    counts = []
    for campaign in small_and_large:
        first, second = (row[0] for row in stored(campaign)[:2])
        _one(client, "get", reverse("adjudication:item", args=[campaign.slug, first]))
        inline = _one(client, "post", reverse("adjudication:item", args=[campaign.slug, first]), {"action": "keep"},
                      headers={"X-Goldkey-Next": "page"})
        item = reverse("adjudication:item", args=[campaign.slug, second])
        ahead = client.get(reverse("adjudication:next", args=[campaign.slug, second]))
        key = unescape(re.search(r'data-key="([^"]+)"', ahead.content.decode()).group(1))
        with CaptureQueriesContext(connection) as queries:
            response = client.post(item, {"action": "keep"}, headers={"X-Goldkey-Next": "page", "X-Goldkey-Held": key})
        assert response.status_code == 204 and response["X-Goldkey-Held"] == "current"
        counts.append(len(queries))
        # The next page's reads (its excerpts, answers, neighbours; ballots, decision and history where it
        # has them) are left out: the page was read ahead.
        assert len(queries) <= inline - 3, (inline, [q["sql"] for q in queries.captured_queries])
    assert counts[0] == counts[1], counts


def test_the_item_page_under_a_filter_runs_the_same_queries_for_20_and_200_items(client, small_and_large):
    urls = [reverse("adjudication:item", args=[c.slug, stored(c)[1][0]]) + "?reason=q1_disagreement" for c in small_and_large]
    counts = _counts(client, *urls)
    assert counts[0] == counts[1], counts


def test_decisions_held_above_the_mark_stop_being_recorded_at_the_limit_and_the_sync_applies_the_rest(
        small_campaign, author, monkeypatch):
    from datetime import timedelta

    from django.db import transaction

    from adjudication import services

    # Every row younger than the grace stays above the mark, as on PostgreSQL (an imported file's decisions
    # in one transaction): each decision records itself only while few ids are held there.
    monkeypatch.setitem(services.COMMIT_GRACE, connection.vendor, timedelta(seconds=10))
    monkeypatch.setattr(services, "SEEN_LIMIT", 2)
    queue_sync(campaign=small_campaign)
    with transaction.atomic():
        for item_id_ in [row[0] for row in stored(small_campaign)]:
            decision_save(campaign=small_campaign, item=Item.objects.get(pk=item_id_), action="keep", user=author)
    state = QueueState.objects.get(campaign=small_campaign)
    assert len(state.decisions_seen) == 2  # the third decision was left to the sync
    after = queue_sync(campaign=small_campaign)
    assert sorted(after.decisions_seen) == sorted(Decision.objects.filter(campaign=small_campaign).values_list("id", flat=True))
    assert after.version == state.version + 1  # the sync applied the one it had not seen
    assert counts(small_campaign) == stored_queue.QueueCounts(decided=3, undecided=0)


# Inside the commit grace (forced on here, as PostgreSQL has it): rows written in the last seconds stay
# above the marks, and every read of the queue asks whether they hold anything new.

@pytest.fixture
def held(monkeypatch, annotator_a, annotator_b):
    """A campaign of 30 items whose 12 council votes (one member) and 3 decisions are applied but held
    above their marks by the grace; returns (campaign, votes)."""
    from datetime import timedelta

    from adjudication import services

    monkeypatch.setitem(services.COMMIT_GRACE, connection.vendor, timedelta(seconds=10))
    campaign = make_twist_campaign([annotator_a, annotator_b], many_items(30), slug="held")
    member = CouncilMember.objects.create(name="judge")
    queue_sync(campaign=campaign)
    items = list(Item.objects.filter(item_set=campaign.item_set).order_by("external_id").values_list("id", flat=True))
    votes = [CouncilVote.objects.create(campaign=campaign, member=member, item_id=i, prompt_version="v1",
                                        values={"q1": "contradicts"}) for i in items[:12]]
    for i in items[12:15]:
        Decision.objects.create(campaign=campaign, item_id=i, action="keep", decided_by=annotator_a)
    queue_sync(campaign=campaign)  # applies them; the grace keeps them above the marks
    state = QueueState.objects.get(campaign=campaign)
    assert len(state.votes_seen) == 12 and len(state.decisions_seen) == 3 and state.votes_mark < votes[0].id
    return campaign, votes


def test_rows_held_above_the_marks_are_looked_at_by_id_in_a_query_a_table_and_nothing_is_written(held):
    campaign, _ = held
    state = QueueState.objects.get(campaign=campaign)
    with CaptureQueriesContext(connection) as queries:
        after = queue_sync(campaign=campaign)
    # The state (with each table's newest id), then one query for the votes and one for the decisions,
    # each reading ids, campaigns and a flag: not the rows a sync applies (the member's name is a join).
    assert len(queries) == 3, [q["sql"] for q in queries.captured_queries]
    assert all(q["sql"].startswith("SELECT") for q in queries.captured_queries)
    assert not any("council_councilmember" in q["sql"] for q in queries.captured_queries)
    assert after.version == state.version


def test_a_held_row_not_yet_applied_is_found_and_applied(held):
    campaign, votes = held
    state = QueueState.objects.get(campaign=campaign)
    # A transaction that took a lower id committed after the sync that saw the rows around it.
    QueueState.objects.filter(pk=state.pk).update(votes_seen=[v.id for v in votes if v != votes[5]])
    QueueItem.objects.filter(campaign=campaign, item_id=votes[5].item_id).update(band="stale")
    after = queue_sync(campaign=campaign)
    assert after.version == state.version + 1
    assert sorted(after.votes_seen) == sorted(v.id for v in votes)
    assert stored(campaign) == recomputed(campaign)  # the refresh rewrote the stale entry


def test_another_campaigns_held_row_is_not_this_campaigns_change(held, annotator_a, annotator_b):
    campaign, votes = held
    other = make_twist_campaign([annotator_a, annotator_b], {"conv-2:v1b1": AGREE}, slug="theirs")
    CouncilVote.objects.create(campaign=other, member=votes[0].member, item_id=item_id("conv-2:v1b1"),
                               prompt_version="v1", values={"q1": "consistent"})
    state = QueueState.objects.get(campaign=campaign)
    assert queue_sync(campaign=campaign).version == state.version
    assert QueueState.objects.get(campaign=campaign).votes_seen == state.votes_seen  # nothing written


def test_held_rows_older_than_the_grace_move_the_mark_past_them(held):
    from datetime import timedelta

    campaign, votes = held
    CouncilVote.objects.filter(pk__in=[v.pk for v in votes[:4]]).update(created_at=votes[0].created_at - timedelta(minutes=1))
    after = queue_sync(campaign=campaign)
    assert after.votes_mark == votes[3].id  # the four old rows are past the mark, the younger still held
    assert sorted(after.votes_seen) == sorted(v.id for v in votes[4:])
