"""The migration that moves scorer labels out of `Item.hidden` into `ScorerLabel` rows (and back)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migrating import migrate_to_latest

BEFORE = [("lapse", "0001_scorer_label")]
AFTER = [("lapse", "0002_scorer_labels_out_of_item_hidden")]

SCORED = {  # what the old scoring code left in a battery item's record after lapse_score --judge
    "arm": "behavioral", "gold": "HEDGE", "tier": "canonical",
    "cascade": "HEDGE", "cascade_rule": "ask-for-fact", "cascade_released": "TEMPLATE",
    "judge": "HEDGE", "judge_member": "judge", "judge_prompt_version": "lapse-judge-v1", "judge_raw": "HEDGE",
    "auto_label": "HEDGE", "flagged": False,
}
IMPORTED = {"arm": "behavioral", "cascade": "PROCEED", "judge": "PROCEED", "model": "demo-model-a"}  # file's own labels


def migrate(targets):
    """The database at `targets` (items' later migrations, which move `hidden` into the item's content,
    depend on this one and are unapplied with it); the models as they were there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    applied = MigrationExecutor(connection).loader.applied_migrations
    return executor.loader.project_state([node for node in applied if node in executor.loader.graph.nodes]).apps


def models(targets):
    apps = migrate(targets)
    return apps.get_model("items", "Item"), apps.get_model("lapse", "ScorerLabel")


@pytest.fixture
def old_items(transactional_db):
    apps = migrate(BEFORE)
    Benchmark, Track, ItemSet, Item = (apps.get_model("items", name) for name in ("Benchmark", "Track", "ItemSet", "Item"))
    track = Track.objects.create(benchmark=Benchmark.objects.create(slug="lapse", name="Lapse"), slug="b", name="B")
    item_set = ItemSet.objects.create(track=track, name="old", kind="lapse")
    scored = Item.objects.create(item_set=item_set, kind="lapse", external_id="b1", hidden=SCORED)
    imported = Item.objects.create(item_set=item_set, kind="lapse", external_id="d1", hidden=IMPORTED)
    yield scored.pk, imported.pk
    migrate_to_latest()


def test_scorer_labels_move_out_of_hidden_and_the_record_is_as_imported(old_items):
    scored, imported = old_items
    Item, ScorerLabel = models(AFTER)
    assert Item.objects.get(pk=scored).hidden == {"arm": "behavioral", "gold": "HEDGE", "tier": "canonical", "cascade": "TEMPLATE"}
    rows = {r.scorer: r for r in ScorerLabel.objects.filter(item_id=scored)}
    assert (rows["cascade"].label, rows["cascade"].detail) == ("HEDGE", {"rule": "ask-for-fact"})
    judge = rows["judge"]
    assert (judge.label, judge.member, judge.prompt_version, judge.detail) == ("HEDGE", "judge", "lapse-judge-v1", {"raw": "HEDGE"})
    # Labels the imported file carried are part of its record: left in place, not scorer rows.
    assert Item.objects.get(pk=imported).hidden == IMPORTED
    assert not ScorerLabel.objects.filter(item_id=imported).exists()


def test_the_migration_reverses_to_the_old_keys(old_items):
    scored, _ = old_items
    migrate(AFTER)
    Item, ScorerLabel = models(BEFORE)
    assert Item.objects.get(pk=scored).hidden == SCORED
    assert not ScorerLabel.objects.exists()
