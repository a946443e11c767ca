"""The queue of a 10,000-item campaign in real Chromium: a page at a time, filtered, and the keyboard
flow (rows, pages, items and back) carried across page boundaries."""

import os
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from adjudication import stored_queue
from adjudication.models import QueueItem, QueueState
from adjudication.services import RANK_SHIFT
from annotation.models import Campaign
from goldkey.lib.bulk import bulk_insert, insert_columns
from items.models import Item
from items.services import item_set_get_or_create
from tests.conftest import browser_login

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "adjudicate-queue.png"
N = 10_000
TYPES = ["contradicting", "aligned", "hard_negative"]


def _defaults(model) -> dict:
    return {f.attname: f.get_default() for f in insert_columns(model)}


def ten_thousand_queued(author) -> Campaign:
    """A closed campaign whose stored queue holds 10,000 queued items, written in bulk (the queue's own
    build is tested against the recomputed queue elsewhere; this is the pages' scale)."""
    item_set = item_set_get_or_create(name="ten thousand", kind="twist")
    now = timezone.now()
    base = _defaults(Item) | {"item_set_id": item_set.pk, "kind": "twist", "created_at": now}
    bulk_insert(Item, ({**base, "external_id": f"big-{i:05d}", "content": {"recipient": "Ana", "draft": f"Draft {i}"}, "gold_label": TYPES[i % 3]}
                       for i in range(N)))
    campaign = Campaign.objects.create(slug="ten-thousand", name="ten thousand", item_set=item_set, protocol="twist_b",
                                       seed=1, status=Campaign.Status.CLOSED, closed_at=now)
    ids = list(Item.objects.filter(item_set=item_set).order_by("external_id").values_list("id", flat=True))
    rank = 1 * RANK_SHIFT  # every suggestion "discuss": the queue order is the id order
    queue = _defaults(QueueItem) | {"campaign_id": campaign.pk, "queued": True, "suggestion": "discuss",
                                    "suggestion_why": "the annotators differ", "blocking": True, "decided": False}
    bulk_insert(QueueItem, ({**queue, "item_id": item_id, "ordinal": n, "sort_key": rank + n, "place": n,
                             "reasons": ["q1_disagreement"] if n % 2 == 0 else ["q2_not_self_contained"]}
                            for n, item_id in enumerate(ids)))
    QueueState.objects.create(campaign=campaign, n_items=N, n_queued=N, answers_final=True, version=1)
    return campaign


@pytest.mark.django_db(transaction=True)
def test_the_queue_of_10000_items_pages_filters_and_keeps_the_keyboard_flow_across_pages(page, author):
    campaign = ten_thousand_queued(author)
    size = stored_queue.PAGE_SIZE
    browser_login(page, author)
    page.goto(f"/adjudicate/{campaign.slug}/")
    rows = page.locator("#queue tbody tr")
    expect(page.locator("[data-testid=queue-pages]")).to_contain_text(f"page 1 of {N // size}")
    assert rows.count() == size
    assert page.locator("[data-testid=queue-counts]").inner_text() == f"0 of {N} queued items decided"

    # j walks the rows; past the last row of the page it goes on to the next page.
    for _ in range(size - 1):
        page.keyboard.press("j")
    expect(page.locator("#queue tr[aria-current=true] td a")).to_have_text(f"big-{size - 1:05d}")
    page.keyboard.press("j")
    expect(page.locator("[data-testid=queue-pages]")).to_contain_text(f"page 2 of {N // size}")
    expect(page.locator("#queue tr[aria-current=true] td a")).to_have_text(f"big-{size:05d}")
    # p before the first row goes back to the previous page, on its last row.
    page.keyboard.press("p")
    expect(page.locator("[data-testid=queue-pages]")).to_contain_text("page 1 of")
    expect(page.locator("#queue tr[aria-current=true] td a")).to_have_text(f"big-{size - 1:05d}")

    # The item page's next crosses the page boundary, and q returns to the page that lists the item.
    # The heading shows before the page's deferred script listens for keys: a key pressed in between is lost.
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text(f"big-{size - 1:05d}")
    page.wait_for_load_state()
    page.keyboard.press("j")
    expect(page.locator("h1")).to_have_text(f"big-{size:05d}")
    page.wait_for_load_state()
    page.keyboard.press("q")
    expect(page.locator("[data-testid=queue-pages]")).to_contain_text("page 2 of")
    expect(page.locator("#queue tr[aria-current=true] td a")).to_have_text(f"big-{size:05d}")

    # The last page holds the last item; a filter narrows the queue and its pages keep the filter.
    page.click("#last-page")
    expect(page.locator("#queue tbody tr").last.locator("td").first).to_have_text(str(N))
    page.goto(f"/adjudicate/{campaign.slug}/")
    page.select_option("#queue-filters select[name=reason]", "q2_not_self_contained")
    page.select_option("#queue-filters select[name=type]", "aligned")
    page.click("#queue-filters button[type=submit]")
    matching = sum(1 for n in range(N) if n % 2 == 1 and n % 3 == 1)
    expect(page.locator("[data-testid=queue-shown]")).to_have_text(f"{matching} of {N} queued items match")
    expect(page.locator("#queue tbody tr").first.locator("td a")).to_have_text("big-00001")
    page.click("#next-page")
    expect(page.locator("[data-testid=queue-pages]")).to_contain_text(f"page 2 of {-(-matching // size)}")
    assert "reason=q2_not_self_contained" in page.url and "type=aligned" in page.url
    expect(page.locator("#queue tbody tr").first.locator("td a")).to_have_text(f"big-{1 + 6 * size:05d}")
    if os.environ.get("GOLDKEY_SCREENSHOTS"):
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))
