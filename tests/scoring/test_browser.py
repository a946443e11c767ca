"""The leaderboard in real Chromium: the key version and hash at the top, CR beside HNS, the forest plot."""

import json

import pytest

from scoring import selectors as score_selectors
from scoring import services as score_services
from scoring.models import RunPrediction, SystemRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scored_key(frozen_rows_teardown, frozen_key, tmp_path):
    """Two runs on the small frozen key: one that flags everything, one that flags nothing. Runs are
    removed before the key teardown, which may only delete keys nothing points at."""
    entries = score_selectors.key_items(frozen_key)
    for name, aligned in (("flags-all", False), ("flags-none", True)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"item_id": e.item_id, "aligned": aligned, "evidence": list(e.evidence)}) + "\n"
                                for e in entries))
        score_services.score_import(version=frozen_key.version, path=path, system=name)
    yield frozen_key
    RunPrediction.objects.all().delete()
    SystemRun.objects.all().delete()


def test_the_leaderboard_shows_the_key_version_and_hash_cr_with_hns_and_the_forest_plot(page, scored_key):
    page.goto(f"/keys/{scored_key.version}/")
    page.click(f"text=Scores against {scored_key.version}")
    assert page.inner_text("[data-testid=key-version]") == scored_key.version
    assert page.inner_text("[data-testid=key-sha256]") == scored_key.sha256
    row = page.locator("tr[data-run=flags-all]")
    assert row.locator("[data-metric=CR]").inner_text().startswith("1.000")
    assert row.locator("[data-metric=HNS]").inner_text().startswith("0.000")  # the price of its perfect recall
    assert row.locator("[data-metric=AS]").is_visible()
    forest = page.locator("[data-testid=forest] svg.forest")
    assert forest.is_visible()
    assert forest.locator("circle.point").count() == 2 * 3  # two runs, CR, AS and HNS each
    box = forest.bounding_box()
    assert box["width"] > 300 and box["height"] > 50
    assert "Family:" in page.inner_text("[data-testid=family]")
