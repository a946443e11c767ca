"""The migration that moves every item's protocol values into its content (items 0007), both ways: keys of
every protocol frozen before it still verify after it, and every file of their releases is the same bytes.

The keys are frozen by today's code; the migration is then reversed, which puts each value back in the
column the old code read and wrote (checked below against what the old importers wrote), and applied
again, as on a database that held those keys before the move."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

import protocols
from annotation.models import Assignment
from annotation.services import answer_save, campaign_create
from annotation.transfer import answers_load
from items.models import Item
from items.services import item_set_get_or_create
from judges.services import judged_import
from keys.services import key_freeze
from tests.adjudication import conftest as adjudication_fixtures
from tests.adjudication.conftest import decide, make_campaign
from tests.conftest import close_campaign
from tests.migrating import migrate, migrate_to_latest

BEFORE = [("items", "0006_item_gate_rejected")]
frozen_rows_teardown = adjudication_fixtures.frozen_rows_teardown


def _judged_key(author, annotator_a, annotator_b):
    from tests.judges.conftest import HYPOTHESES, LABELS, QUESTIONS, TRUTH

    judged_import(questions=QUESTIONS, hypotheses=HYPOTHESES, labels=LABELS, item_set_name="judged", run="run-1")
    item_set = item_set_get_or_create(name="judged", kind="judged")
    campaign = campaign_create(slug="jd", item_set=item_set, annotators=[annotator_a, annotator_b], seed=5)
    for pseudonym in ("A", "B"):
        answers_load(campaign=campaign, annotator=pseudonym, answers={q: {"verdict": v} for q, v in TRUTH.items()})
    close_campaign(campaign, author)
    return key_freeze(campaign=campaign, version="JUDGED-v1.0", user=author)


def _lapse_key(author, annotator_b):
    item_set = item_set_get_or_create(name="lapse synthetic", kind="lapse")
    Item.objects.bulk_create(
        Item(item_set=item_set, kind="lapse", external_id=f"g{i:03d}", request="Write the invite", response=f"r{i} ü",
             key_fact="the Marbury Residences", text_released=i != 2, hidden={"gap": i, "nested": [i, None]})
        for i in range(4)
    )
    campaign = campaign_create(slug="lapse", item_set=item_set, annotators=[author, annotator_b], seed=3)
    labels = {"g000": "PROCEED", "g001": "HEDGE", "g002": "TEMPLATE", "g003": "CONFAB-COMMIT"}
    for assignment in Assignment.objects.filter(enrollment__campaign=campaign).select_related("item"):
        answer_save(assignment=assignment, values={"label": labels[assignment.item.external_id]})
    close_campaign(campaign)
    return key_freeze(campaign=campaign, version="LAPSE-v1.0", user=author)


def _twist_key(author, annotator_b):
    campaign = make_campaign(slug="small", n=9, annotators=[author, annotator_b], disagree=(1, 4))
    decide(campaign, "s-0001", "drop", author)
    decide(campaign, "s-0004", "keep", author)
    return key_freeze(campaign=campaign, version="TWIST-test-v1.0", user=author)


def _content_fields(item) -> dict:
    spec = protocols.of_item(item)
    return {k: v for k, v in spec.content_of(item).items() if k in spec.content_fields}


def _export(version, out) -> dict[str, bytes]:
    call_command("key_export", version, "--out", str(out), stdout=StringIO())
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _old_columns(external_id: str, *columns: str) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)} FROM items_item WHERE external_id = %s", [external_id])  # noqa: S608 (test's own names)
        return cursor.fetchone()


@pytest.fixture
def frozen_keys(transactional_db, frozen_rows_teardown, author, annotator_a, annotator_b):
    keys = [_twist_key(author, annotator_b), _lapse_key(author, annotator_b), _judged_key(author, annotator_a, annotator_b)]
    yield keys
    migrate_to_latest()


def test_keys_of_every_protocol_verify_and_export_the_same_bytes_across_the_move(frozen_keys, tmp_path):
    before = {key.version: _export(key.version, tmp_path / "before" / key.version) for key in frozen_keys}
    contents = {item.external_id: protocols.of_item(item).content_of(item) for item in Item.objects.all()}

    migrate(BEFORE)
    # Each value is back in the column the old code wrote it to (a judged answer's in the overloaded ones).
    assert _old_columns("s-0003", "recipient", "draft", "contradicted_quote", "history_turns") == (
        "Ana", "Draft ünïcode 3", "she said so", 403)
    request, response, hidden = _old_columns("g002", "request", "response", "hidden")
    assert (request, response) == ("Write the invite", "r2 ü") and '"nested"' in hidden
    question, answer, hypothesis = _old_columns("demo-ku-02", "request", "draft", "response")
    assert (question, answer) == ("What is my current personal best for the 5k?", "24 minutes") and hypothesis

    migrate_to_latest()
    # Every field, stored (a judged answer's question and gold answer in its shared context: items 0010).
    assert {item.external_id: _content_fields(item) for item in Item.objects.all()} == {
        external_id: {k: v for k, v in content.items() if k in protocols.of_item(Item.objects.get(external_id=external_id)).content_fields}
        for external_id, content in contents.items()
    }
    for key in frozen_keys:
        out = StringIO()
        call_command("key_verify", key.version, stdout=out, stderr=StringIO())
        assert _export(key.version, tmp_path / "after" / key.version) == before[key.version], key.version


# --- items 0010: a judged answer's question moves into a shared context ------------------------------

BEFORE_CONTEXTS = [("items", "0009_citation_roles_and_conversation_versions")]


def _triggers() -> set[tuple[str, str]]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute("SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE NOT tgisinternal")
        return set(cursor.fetchall())


def test_judged_answers_stored_before_contexts_cite_one_after_it_and_no_trigger_is_lost(transactional_db):
    migrate(BEFORE_CONTEXTS)
    try:
        triggers = _triggers()
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO items_benchmark (slug, name) VALUES ('lme', 'LongMemEval')")
            cursor.execute("INSERT INTO items_track (benchmark_id, slug, name) SELECT id, 'audit', 'Audit' FROM items_benchmark")
            cursor.execute("INSERT INTO items_itemset (track_id, name, kind, schema, license, description, created_at) "
                           "SELECT id, 'old judged', 'judged', '', 'mit', '', CURRENT_TIMESTAMP FROM items_track")
            cursor.execute(
                "INSERT INTO items_item (item_set_id, kind, external_id, gold_label, family, batch, content, gate_rejected, created_at) "
                "SELECT id, 'judged', 'q1_abs', '', 'temporal-reasoning_abs', '', %s, FALSE, CURRENT_TIMESTAMP FROM items_itemset",
                [json.dumps({"question": "When?", "answer": "Never said", "hypothesis": "Tuesday",
                             "hidden": {"question_date": "2023/05/30 (Tue) 10:00", "run": "r"}})],
            )
        migrate_to_latest()
        item = Item.objects.select_related("context").get(external_id="q1_abs")
        assert item.context.external_id == "q1_abs" and item.context.item_set_id == item.item_set_id
        assert item.context.content == {"question_type": "temporal-reasoning", "question": "When?", "answer": "Never said",
                                        "question_date": "2023/05/30 (Tue) 10:00"}
        # The item keeps its own values as they were (a sealed release's candidate record reads them).
        assert item.content == {"hypothesis": "Tuesday", "hidden": {"question_date": "2023/05/30 (Tue) 10:00", "run": "r"}}
        assert (item.question, item.answer) == ("When?", "Never said")
        assert triggers <= _triggers()  # adding a nullable key rebuilt no table: every trigger is still there
    finally:
        migrate_to_latest()
