"""The move of system runs from the keys app to the scoring app: runs stored before it are read after it
as they were (the tables keep their names; nothing is re-imported), and the move reverses."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scoring import selectors as score_selectors
from scoring.models import RunPrediction, SystemRun
from tests.migrating import migrate, migrate_to_latest

BEFORE = ("keys", "0013_keyentry_references_checked_per_statement")


def _keys_app_models():
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    apps = executor.loader.project_state(BEFORE).apps
    return apps.get_model("keys", "SystemRun"), apps.get_model("keys", "RunPrediction")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("frozen_rows_teardown")
def test_a_run_stored_by_the_keys_app_is_scored_by_the_scoring_app_after_the_move(frozen_key):
    content_type = ContentType.objects.get_for_model(SystemRun).pk
    migrate([BEFORE, ("scoring", None)])
    try:
        assert ContentType.objects.get(pk=content_type).app_label == "keys"
        OldRun, OldPrediction = _keys_app_models()
        run = OldRun.objects.create(key_id=frozen_key.pk, system="flatrag", configuration="openai",
                                    source_name="run.jsonl", source_sha256="0" * 64)
        OldPrediction.objects.bulk_create(
            OldPrediction(run_id=run.pk, item_external_id=e.item_id, aligned=False, evidence=[])
            for e in score_selectors.key_items(frozen_key)
        )
    finally:
        migrate_to_latest()
    try:
        ContentType.objects.clear_cache()
        assert ContentType.objects.get(pk=content_type).app_label == "scoring"
        stored = SystemRun.objects.get(pk=run.pk)
        assert stored.name == "flatrag:openai" and stored.predictions.count() == frozen_key.entries.count()
        report = score_selectors.score_report(frozen_key, bootstrap=False)
        assert report["runs"]["flatrag:openai"]["CR"]["n"] > 0
    finally:
        RunPrediction.objects.all().delete()
        SystemRun.objects.all().delete()
