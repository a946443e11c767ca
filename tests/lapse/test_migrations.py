"""The migration that moves scorer labels out of `Item.hidden` into `ScorerLabel` rows (and back)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from items.models import Item, ItemKind
from items.services import item_set_get_or_create
from lapse.models import ScorerLabel
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
    """Only the lapse app moves; the items tables stay at their latest schema, so the live Item model
    reads and writes them (the scorer label table is the same before and after the data migration)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture
def old_items(transactional_db):
    migrate(BEFORE)
    item_set = item_set_get_or_create(name="old", kind=ItemKind.LAPSE)
    scored = Item.objects.create(item_set=item_set, kind=ItemKind.LAPSE, external_id="b1", hidden=SCORED)
    imported = Item.objects.create(item_set=item_set, kind=ItemKind.LAPSE, external_id="d1", hidden=IMPORTED)
    yield scored.pk, imported.pk
    migrate_to_latest()


def test_scorer_labels_move_out_of_hidden_and_the_record_is_as_imported(old_items):
    scored, imported = old_items
    migrate(AFTER)
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
    migrate(BEFORE)
    assert Item.objects.get(pk=scored).hidden == SCORED
    assert not ScorerLabel.objects.exists()
