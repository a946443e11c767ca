"""An item names an item set, a conversation and a context that exist; an evidence row names an item and a
turn that exist; a turn names a conversation and a session that exist. On SQLite foreign keys say so; on
PostgreSQL statement triggers do (items 0012, 0013 and 0015), with the same guarantees: what an insert or an update names must exist, what is named cannot be deleted, re-keyed or
truncated away, the ORM's PROTECT and CASCADE behave as before, and two transactions cannot each miss
the other's rows: a delete waits for an insert naming its rows, and an insert waits for such a delete."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from goldkey.lib.bulk import bulk_insert_columns, insert_columns
from items.models import Context, Conversation, Evidence, Item, ItemSet, Session, Turn
from items.services import item_set_get_or_create
from tests.annotation.conftest import make_twist_items
from tests.annotation.test_references import _connect, _in_thread, _waiting_for_a_lock, waits_then_refused
from tests.migrating import migrate, migrate_to_latest

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite checks these references with its foreign keys"
)
pytestmark = pytest.mark.django_db

ITEM_INSERT = ("INSERT INTO items_item (item_set_id, kind, external_id, conversation_id, gold_label, family, batch, "
               "content, gate_rejected, created_at) "
               "VALUES (%s, 'twist', %s, %s, 'supporting', 'f', '', '{}', false, CURRENT_TIMESTAMP)")
CITING_INSERT = ("INSERT INTO items_item (item_set_id, kind, external_id, context_id, gold_label, family, batch, "
                 "content, gate_rejected, created_at) "
                 "VALUES (%s, 'twist', %s, %s, 'supporting', 'f', '', '{}', false, CURRENT_TIMESTAMP)")
EVIDENCE_INSERT = "INSERT INTO items_evidence (item_id, turn_id, role, position) VALUES (%s, %s, 'evidence', %s)"
TURN_INSERT = ("INSERT INTO items_turn (conversation_id, session_id, dia_id, speaker, text, \"order\", image_caption) "
               "VALUES (%s, %s, %s, 'Caroline', 'a late turn', 900, '')")


def sql(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def refused(statement, params=(), match="names no|still named by|truncated while|invalid foreign key"):
    with pytest.raises(IntegrityError, match=match):
        with transaction.atomic():
            sql(statement, params)
            connection.check_constraints(table_names=["items_item", "items_evidence", "items_turn"])  # SQLite's are deferred


def _cited(name="refs"):
    """An item set of two items in their own conversation, each citing one turn; and one turn no item cites."""
    item_set = make_twist_items(2, name=name, conversation_id=f"conv-{name}")
    item = Item.objects.filter(item_set=item_set).order_by("pk").first()
    evidence = Evidence.objects.filter(item=item).select_related("turn").get()
    uncited = Turn.objects.filter(conversation=item.conversation).exclude(citations__isnull=False).order_by("pk").first()
    return item, evidence, uncited


def _spare_item(item, external_id="spare"):
    """An item of the same set and conversation that no evidence row names."""
    spare = Item.objects.get(pk=item.pk)
    spare.pk, spare.external_id = None, external_id
    spare.save()
    return spare


def _lone(name="lone", turns=2):
    """A conversation no item names, with two sessions and `turns` turns in the first; no evidence cites them."""
    conversation = Conversation.objects.create(external_id=name, speaker_a="Caroline", speaker_b="Melanie")
    first, second = (Session.objects.create(conversation=conversation, number=n, date_time_raw="1:56 pm on 8 May, 2023")
                     for n in (1, 2))
    Turn.objects.bulk_create(Turn(conversation=conversation, session=first, dia_id=f"D1:{i + 1}", speaker="Caroline",
                                  text=f"turn {i}", order=i) for i in range(turns))
    return conversation, first, second


def _context(item, external_id="q1"):
    """A shared context (a judged question) in the item's set; no item cites it yet."""
    return Context.objects.create(item_set_id=item.item_set_id, external_id=external_id, content={"question": "?"})


def _missing(model) -> int:
    return model.objects.order_by("-pk").first().pk + 1000


def test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it():
    with connection.cursor() as cursor:
        references = {
            table: sorted(c["foreign_key"] for c in connection.introspection.get_constraints(cursor, table).values()
                          if c["foreign_key"])
            for table in ("items_item", "items_evidence", "items_turn", "items_session", "items_context")
        }
    if connection.vendor == "sqlite":
        assert references == {"items_item": [("items_context", "id"), ("items_conversation", "id"), ("items_itemset", "id")],
                              "items_evidence": [("items_item", "id"), ("items_turn", "id")],
                              "items_turn": [("items_conversation", "id"), ("items_session", "id")],
                              "items_session": [("items_conversation", "id")],
                              "items_context": [("items_itemset", "id")]}
        return
    # Checked per statement: a foreign key checks (and locks) row by row, and queues an event even for an item
    # that cites no context. A conversation is named by a few sessions, an item set by a few hundred contexts.
    assert references == {"items_item": [], "items_evidence": [], "items_turn": [],
                          "items_session": [("items_conversation", "id")], "items_context": [("items_itemset", "id")]}
    triggers = {name for (name,) in sql("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE %s",
                                        ["%verified_%_references%"])}
    assert triggers == {
        "items_item_verified_item_references_on_insert", "items_item_verified_item_references_on_update",
        "items_itemset_verified_item_references_on_delete", "items_itemset_verified_item_references_on_rekey",
        "items_itemset_verified_item_references_on_truncate", "items_conversation_verified_item_references_on_delete",
        "items_conversation_verified_item_references_on_rekey", "items_conversation_verified_item_references_on_truncate",
        "items_evidence_verified_evidence_references_on_insert", "items_evidence_verified_evidence_references_on_update",
        "items_item_verified_evidence_references_on_delete", "items_item_verified_evidence_references_on_rekey",
        "items_item_verified_evidence_references_on_truncate", "items_turn_verified_evidence_references_on_delete",
        "items_turn_verified_evidence_references_on_rekey", "items_turn_verified_evidence_references_on_truncate",
        "items_turn_verified_turn_references_on_insert", "items_turn_verified_turn_references_on_update",
        "items_conversation_verified_turn_references_on_delete", "items_conversation_verified_turn_references_on_rekey",
        "items_conversation_verified_turn_references_on_truncate", "items_session_verified_turn_references_on_delete",
        "items_session_verified_turn_references_on_rekey", "items_session_verified_turn_references_on_truncate",
        "items_item_verified_shared_context_references_on_insert", "items_item_verified_shared_context_references_on_update",
        "items_context_verified_shared_context_references_on_delete",
        "items_context_verified_shared_context_references_on_rekey",
        "items_context_verified_shared_context_references_on_truncate",
    }


def _turn_indexes() -> list[list[str]]:
    with connection.cursor() as cursor:
        return [c["columns"] for c in connection.introspection.get_constraints(cursor, "items_turn").values()
                if (c["index"] or c["unique"]) and not c["primary_key"]]


def test_a_turns_conversation_has_no_index_of_its_own():
    """The unique (conversation, dia_id) pair and the index by speaker lead with it; a session keeps its index
    (a delete of sessions looks up their turns by it)."""
    indexes = _turn_indexes()
    assert ["conversation_id"] not in indexes and ["session_id"] in indexes
    assert ["conversation_id", "dia_id"] in indexes and ["conversation_id", "speaker", "order"] in indexes


def _item_indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        return {name: c["columns"] for name, c in connection.introspection.get_constraints(cursor, "items_item").items()
                if (c["index"] or c["unique"]) and not c["primary_key"]}


def test_an_item_is_indexed_by_what_it_is_looked_up_by_and_nothing_else():
    """Every B-tree is filled row by row in an import: by family (a stratum, read with the whole campaign)
    and by conversation (only a delete of conversations, which nothing in Goldkey does, looks items up by
    it) there is none, and the context's covers only the items that cite one."""
    assert sorted(_item_indexes().values()) == [["context_id"], ["item_set_id", "external_id"],
                                                ["item_set_id", "gold_label"]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'item_by_context'")
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'item_by_context'")
        (definition,) = cursor.fetchone()
    assert "WHERE" in definition and "IS NOT NULL" in definition


def test_citations_are_indexed_by_item_only():
    """Read by item, never by turn: a delete of turns (nothing in Goldkey does one) reads the table to refuse a
    cited one, which the ORM and the database still do (test_the_orm_protects_and_cascades_as_before)."""
    with connection.cursor() as cursor:
        indexes = [c["columns"] for c in connection.introspection.get_constraints(cursor, "items_evidence").values()
                   if (c["index"] or c["unique"]) and not c["primary_key"]]
    assert indexes == [["item_id", "role", "position"]]


def test_a_contexts_items_are_found_by_the_index_that_leaves_out_the_items_citing_none():
    """The lookups a context's delete makes (PROTECT; SQLite's foreign key, PostgreSQL's trigger) and
    `context.items` ask for `context_id = X` or `IN` the deleted ids, which the partial index answers."""
    item, _, _ = _cited()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN SELECT id FROM items_item WHERE context_id = %s", [item.pk])
        else:
            cursor.execute("EXPLAIN QUERY PLAN SELECT id FROM items_item WHERE context_id = %s", [item.pk])
        plan = " ".join(str(row) for row in cursor.fetchall())
        assert "item_by_context" in plan, plan
        if connection.vendor == "postgresql":  # the trigger's join with the deleted contexts
            cursor.execute("EXPLAIN SELECT id FROM items_item WHERE context_id IN (SELECT id FROM items_context)")
            plan = " ".join(str(row) for row in cursor.fetchall())
            assert "item_by_context" in plan, plan


def test_an_item_or_its_evidence_must_name_rows_that_exist():
    item, evidence, uncited = _cited()
    before = (Item.objects.count(), Evidence.objects.count())
    refused(ITEM_INSERT, [_missing(ItemSet), "x1", item.conversation_id])
    refused(ITEM_INSERT, [item.item_set_id, "x2", _missing(Conversation)])
    refused(EVIDENCE_INSERT, [_missing(Item), uncited.pk, 5])
    refused(EVIDENCE_INSERT, [item.pk, _missing(Turn), 5])
    assert (Item.objects.count(), Evidence.objects.count()) == before
    sql(ITEM_INSERT, [item.item_set_id, "x3", None])  # an item without a conversation (Lapse, judged)
    sql(EVIDENCE_INSERT, [item.pk, uncited.pk, 5])  # rows that name what exists go in
    assert Evidence.objects.filter(item=item, turn=uncited).exists() and Item.objects.filter(external_id="x3").exists()


def test_the_orm_protects_and_cascades_as_before():
    item, evidence, uncited = _cited()
    with pytest.raises(ProtectedError):
        evidence.turn.delete()
    with pytest.raises(ProtectedError):
        item.conversation.delete()
    with pytest.raises(ProtectedError):
        item.item_set.delete()
    uncited.delete()  # a turn no item cites goes
    item.delete()  # an item goes with its evidence, which Django deletes first
    assert not Evidence.objects.filter(pk=evidence.pk).exists() and Turn.objects.filter(pk=evidence.turn_id).exists()


def test_a_turn_must_name_a_conversation_and_a_session_that_exist():
    conversation, session, other = _lone()
    turn = Turn.objects.filter(conversation=conversation).first()
    before = Turn.objects.count()
    refused(TURN_INSERT, [_missing(Conversation), session.pk, "D9:1"])
    refused(TURN_INSERT, [conversation.pk, _missing(Session), "D9:2"])
    refused("UPDATE items_turn SET conversation_id = %s WHERE id = %s", [_missing(Conversation), turn.pk])
    refused("UPDATE items_turn SET session_id = %s WHERE id = %s", [_missing(Session), turn.pk])
    assert Turn.objects.count() == before and Turn.objects.filter(session=session).count() == 2
    sql(TURN_INSERT, [conversation.pk, other.pk, "D2:1"])  # what names rows that exist goes in
    sql("UPDATE items_turn SET session_id = %s WHERE id = %s", [other.pk, turn.pk])
    assert Turn.objects.filter(session=other).count() == 2


def test_deleting_a_session_or_a_conversation_still_deletes_its_turns():
    _cited()  # another conversation, whose turns stay
    conversation, session, other = _lone()
    Turn.objects.create(conversation=conversation, session=other, dia_id="D2:1", speaker="Melanie", text="t", order=5)
    pk, kept = conversation.pk, Turn.objects.exclude(conversation=conversation).count()
    session.delete()
    assert list(Turn.objects.filter(conversation_id=pk).values_list("dia_id", flat=True)) == ["D2:1"]
    conversation.delete()  # Django deletes its turns first, then its sessions, then it
    assert not Session.objects.filter(conversation_id=pk).exists() and not Turn.objects.filter(conversation_id=pk).exists()
    assert not Conversation.objects.filter(pk=pk).exists() and Turn.objects.count() == kept


def test_a_conversation_whose_turns_are_cited_is_still_protected():
    item, evidence, uncited = _cited()
    conversation, session, other = _lone()
    cited = Turn.objects.filter(conversation=conversation).first()
    sql(EVIDENCE_INSERT, [item.pk, cited.pk, 5])  # an item of another conversation cites it
    with pytest.raises(ProtectedError) as protected:
        conversation.delete()
    assert [e.turn_id for e in protected.value.protected_objects] == [cited.pk]
    assert Turn.objects.filter(conversation=conversation).count() == 2 and Session.objects.filter(pk=session.pk).exists()


@postgres_only
def test_postgresql_names_the_missing_row():
    item, evidence, uncited = _cited()
    other, _, _ = _cited("other")
    item_set, conversation, cited, turn = _missing(ItemSet), _missing(Conversation), _missing(Item), _missing(Turn)
    refused(ITEM_INSERT, [item_set, "x", None], match=f"item_set_id {item_set} names no item set")
    refused(ITEM_INSERT, [item.item_set_id, "x", conversation], match=f"conversation_id {conversation} names no conversation")
    refused(EVIDENCE_INSERT, [cited, uncited.pk, 5], match=f"item_id {cited} names no item")
    refused(EVIDENCE_INSERT, [item.pk, turn, 5], match=f"turn_id {turn} names no turn")
    # An item of another set citing a turn of another conversation: each row's own set and conversation are locked.
    sql(EVIDENCE_INSERT, [other.pk, uncited.pk, 5])
    assert Evidence.objects.filter(item=other, turn=uncited).exists()


@postgres_only
def test_postgresql_names_a_turns_missing_conversation_or_session():
    conversation, session, other = _lone()
    turn = Turn.objects.filter(conversation=conversation).first()
    missing_conversation, missing_session = _missing(Conversation), _missing(Session)
    conversation_message = f"items_turn: conversation_id {missing_conversation} names no conversation"
    session_message = f"items_turn: session_id {missing_session} names no session"
    for statement, params, message in (
        (TURN_INSERT, [missing_conversation, session.pk, "D9:1"], conversation_message),
        (TURN_INSERT, [conversation.pk, missing_session, "D9:1"], session_message),
        ("UPDATE items_turn SET conversation_id = %s WHERE id = %s", [missing_conversation, turn.pk], conversation_message),
        ("UPDATE items_turn SET session_id = %s WHERE id = %s", [missing_session, turn.pk], session_message),
    ):
        refused(statement, params, match=message)


@postgres_only
def test_a_bulk_insert_of_turns_with_one_bad_row_among_many_is_refused_whole():
    """Both forms of the check (by primary key, then by hash joins from 20,000 rows) find the one bad row;
    nothing of the statement is left, and the same rows without it go in."""
    conversation, session, other = _lone(turns=0)

    def turns(n):
        return {"conversation_id": [conversation.pk] * n, "session_id": [session.pk, other.pk] * (n // 2),
                "dia_id": [f"B{n}:{i}" for i in range(n)], "speaker": ["Caroline"] * n, "text": ["bulk"] * n,
                "order": list(range(n)), "image_caption": [""] * n}

    for n in (100, 20_000):  # the lookup form, then the hashed form
        for column, bad in (("conversation_id", _missing(Conversation)), ("session_id", _missing(Session))):
            rows = turns(n)
            rows[column][n // 2] = bad
            with pytest.raises(IntegrityError, match=f"items_turn: {column} {bad} names no"):
                with transaction.atomic():
                    bulk_insert_columns(Turn, rows)
            assert not Turn.objects.exists()
    bulk_insert_columns(Turn, turns(20_000))
    assert Turn.objects.filter(session=other).count() == 10_000


@postgres_only
def test_a_bulk_insert_with_one_bad_row_among_many_is_refused_whole():
    """From 20,000 rows the triggers read the named rows by hash joins, below it by primary key: both
    forms find the one bad row, and nothing of the statement is left."""
    item, evidence, uncited = _cited()
    turns = list(Turn.objects.filter(conversation=item.conversation).values_list("pk", flat=True))
    for n in (100, 20_000):  # the lookup form, then the hashed form
        for column, bad in (("item_id", _missing(Item)), ("turn_id", _missing(Turn))):
            rows = {"item_id": [item.pk] * n, "turn_id": [turns[i % len(turns)] for i in range(n)],
                    "role": ["evidence"] * n, "position": list(range(100, 100 + n))}
            rows[column][n // 2] = bad
            before = Evidence.objects.count()
            with pytest.raises(IntegrityError, match=f"{column} {bad} names no"):
                with transaction.atomic():
                    bulk_insert_columns(Evidence, rows)
            assert Evidence.objects.count() == before
        items = {f.attname: [getattr(item, f.attname)] * n for f in insert_columns(Item)}
        items["external_id"] = [f"bulk-{n}-{i}" for i in range(n)]
        items["conversation_id"][n - 1] = bad = _missing(Conversation)
        with pytest.raises(IntegrityError, match=f"conversation_id {bad} names no conversation"):
            with transaction.atomic():
                bulk_insert_columns(Item, items)
        assert not Item.objects.filter(external_id__startswith=f"bulk-{n}-").exists()


@postgres_only
def test_what_items_and_evidence_name_cannot_be_deleted_rekeyed_or_truncated_away():
    item, evidence, uncited = _cited()
    turn = evidence.turn_id
    lone = Conversation.objects.create(external_id="lone", speaker_a="A", speaker_b="B")
    Item.objects.filter(pk=_spare_item(item, "in-lone").pk).update(conversation=lone)
    for statement, params, message in (
        ("DELETE FROM items_item WHERE id = %s", [item.pk], f"item {item.pk} is still named by items_evidence"),
        ("DELETE FROM items_turn WHERE id = %s", [turn], f"turn {turn} is still named by items_evidence"),
        ("DELETE FROM items_itemset WHERE id = %s", [item.item_set_id],
         f"item_set {item.item_set_id} is still named by items_item"),
        ("DELETE FROM items_conversation WHERE id = %s", [lone.pk], f"conversation {lone.pk} is still named by items_item"),
        ("UPDATE items_item SET id = id + 100000 WHERE id = %s", [item.pk], "still named by items_evidence"),
        ("UPDATE items_turn SET id = id + 100000 WHERE id = %s", [turn], "still named by items_evidence"),
        ("UPDATE items_itemset SET id = id + 100000 WHERE id = %s", [item.item_set_id], "still named by items_item"),
        ("UPDATE items_conversation SET id = id + 100000 WHERE id = %s", [item.conversation_id], "still named by"),
        ("UPDATE items_evidence SET item_id = %s WHERE id = %s", [_missing(Item), evidence.pk], "names no item"),
        ("UPDATE items_evidence SET turn_id = %s WHERE id = %s", [_missing(Turn), evidence.pk], "names no turn"),
        ("UPDATE items_item SET item_set_id = %s WHERE id = %s", [_missing(ItemSet), item.pk], "names no item set"),
        ("UPDATE items_item SET conversation_id = %s WHERE id = %s", [_missing(Conversation), item.pk],
         "names no conversation"),
    ):
        refused(statement, params, match=message)
    # CASCADE follows foreign keys only: it would empty the items and leave their evidence behind.
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at a TRUNCATE
    refused("TRUNCATE items_item CASCADE", match="items_item: truncated while items_evidence names its rows")
    refused("TRUNCATE items_conversation CASCADE", match="truncated while items_(item|evidence) names its rows")
    assert Evidence.objects.filter(pk=evidence.pk).exists()
    # What nothing names moves and goes freely; truncating the referring rows too is allowed.
    spare = _spare_item(item)
    sql("UPDATE items_item SET id = id + 100000 WHERE id = %s", [spare.pk])
    sql("DELETE FROM items_item WHERE id = %s", [spare.pk + 100000])
    sql("UPDATE items_turn SET id = id + 100000 WHERE id = %s", [uncited.pk])
    sql("DELETE FROM items_turn WHERE id = %s", [uncited.pk + 100000])
    with transaction.atomic():
        sql("SET CONSTRAINTS ALL IMMEDIATE")
        sql("TRUNCATE items_evidence, items_item, items_turn, items_session, items_conversation, items_itemset CASCADE")
        assert not Item.objects.exists()
        transaction.set_rollback(True)


@postgres_only
def test_what_turns_name_cannot_be_deleted_rekeyed_or_truncated_away():
    conversation, session, other = _lone()
    for statement, params, message in (
        ("DELETE FROM items_session WHERE id = %s", [session.pk],
         f"items_session: session {session.pk} is still named by items_turn"),
        ("DELETE FROM items_conversation WHERE id = %s", [conversation.pk],
         f"items_conversation: conversation {conversation.pk} is still named by items_turn"),
        ("UPDATE items_session SET id = id + 100000 WHERE id = %s", [session.pk],
         f"session {session.pk} is still named by items_turn"),
        ("UPDATE items_conversation SET id = id + 100000 WHERE id = %s", [conversation.pk],
         f"conversation {conversation.pk} is still named by items_turn"),
    ):
        refused(statement, params, match=message)
    # No item names a conversation here: what refuses the truncate is the turns' guard.
    assert not Item.objects.exists()
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at a TRUNCATE
    refused("TRUNCATE items_session", match="items_session: truncated while items_turn names its rows")
    refused("TRUNCATE items_conversation CASCADE", match="truncated while items_turn names its rows")
    assert Turn.objects.filter(session=session).count() == 2
    # What nothing names moves and goes freely; truncating the turns too is allowed.
    sql("UPDATE items_session SET id = id + 100000 WHERE id = %s", [other.pk])
    sql("DELETE FROM items_session WHERE id = %s", [other.pk + 100000])
    assert not Session.objects.filter(pk__in=[other.pk, other.pk + 100000]).exists()
    with transaction.atomic():
        sql("SET CONSTRAINTS ALL IMMEDIATE")
        sql("TRUNCATE items_turn, items_session, items_conversation")
        assert not Conversation.objects.exists()
        transaction.set_rollback(True)


def test_an_item_must_name_a_context_that_exists():
    item, _, _ = _cited()
    context = _context(item)
    before = Item.objects.count()
    refused(CITING_INSERT, [item.item_set_id, "c1", _missing(Context)])
    refused("UPDATE items_item SET context_id = %s WHERE id = %s", [_missing(Context), item.pk])
    assert Item.objects.count() == before and not Item.objects.filter(context__isnull=False).exists()
    sql(CITING_INSERT, [item.item_set_id, "c2", context.pk])  # what names a context that exists goes in
    sql("UPDATE items_item SET context_id = %s WHERE id = %s", [context.pk, item.pk])
    assert sorted(context.items.values_list("external_id", flat=True)) == ["c2", item.external_id]
    sql("UPDATE items_item SET context_id = NULL WHERE id = %s", [item.pk])  # citing none names nothing
    assert list(context.items.values_list("external_id", flat=True)) == ["c2"]


def test_the_orm_still_protects_a_cited_context():
    item, _, _ = _cited()
    cited, uncited = _context(item, "cited"), _context(item, "uncited")
    Item.objects.filter(pk=item.pk).update(context=cited)
    with pytest.raises(ProtectedError) as protected:
        cited.delete()
    assert [i.pk for i in protected.value.protected_objects] == [item.pk]
    uncited.delete()  # a context no item cites goes
    assert list(Context.objects.values_list("external_id", flat=True)) == ["cited"]


@postgres_only
def test_postgresql_names_an_items_missing_context():
    item, _, _ = _cited()
    _context(item)
    missing = _missing(Context)
    for statement, params in ((CITING_INSERT, [item.item_set_id, "c1", missing]),
                              ("UPDATE items_item SET context_id = %s WHERE id = %s", [missing, item.pk])):
        refused(statement, params, match=f"items_item: context_id {missing} names no context")


@postgres_only
def test_a_bulk_insert_of_items_with_one_missing_context_among_many_is_refused_whole():
    """Among items citing none and items citing a context that exists, the one row naming a missing context
    is found; nothing of the statement is left, and the same rows without it go in."""
    item, _, _ = _cited()
    first, second = _context(item, "q1"), _context(item, "q2")
    n = 20_000

    def items():
        rows = {f.attname: [getattr(item, f.attname)] * n for f in insert_columns(Item)}
        rows["external_id"] = [f"bulk-{i}" for i in range(n)]
        rows["context_id"] = [(first.pk, second.pk)[i // 10 % 2] if i % 10 == 0 else None for i in range(n)]
        return rows

    rows = items()
    rows["context_id"][n // 2 + 1] = bad = _missing(Context)
    with pytest.raises(IntegrityError, match=f"items_item: context_id {bad} names no context"):
        with transaction.atomic():
            bulk_insert_columns(Item, rows)
    assert not Item.objects.filter(external_id__startswith="bulk-").exists()
    bulk_insert_columns(Item, items())
    assert (first.items.count(), second.items.count()) == (n // 20, n // 20)
    assert Item.objects.filter(external_id__startswith="bulk-", context__isnull=True).count() == n - n // 10


@postgres_only
def test_a_cited_context_cannot_be_deleted_rekeyed_or_truncated_away():
    item, _, _ = _cited()
    context, free = _context(item, "cited"), _context(item, "free")
    Item.objects.filter(pk=item.pk).update(context=context)
    for statement, params in (("DELETE FROM items_context WHERE id = %s", [context.pk]),
                              ("DELETE FROM items_context WHERE item_set_id = %s", [item.item_set_id]),
                              ("UPDATE items_context SET id = id + 100000 WHERE id = %s", [context.pk])):
        refused(statement, params, match=f"items_context: context {context.pk} is still named by items_item")
    assert Context.objects.filter(pk=context.pk).exists() and Item.objects.get(pk=item.pk).context_id == context.pk
    # An item set a context names keeps its foreign key: the context's own, checked at the commit.
    lone = item_set_get_or_create(name="only contexts", kind="twist")
    Context.objects.create(item_set=lone, external_id="q", content={})
    sql("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at a TRUNCATE, nor this one
    refused("DELETE FROM items_itemset WHERE id = %s", [lone.pk], match="violates foreign key constraint")
    refused("TRUNCATE items_context", match="items_context: truncated while items_item names its rows")
    # What nothing names moves and goes freely; truncating the items too is allowed.
    sql("UPDATE items_context SET id = id + 100000 WHERE id = %s", [free.pk])
    sql("DELETE FROM items_context WHERE id = %s", [free.pk + 100000])
    assert list(Context.objects.values_list("external_id", flat=True)) == ["cited", "q"]
    with transaction.atomic():
        sql("TRUNCATE items_evidence, items_item, items_context CASCADE")
        assert not Context.objects.exists()
        transaction.set_rollback(True)


# Two transactions at once: the rows must be committed for the other connection to see them.

@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_delete_of_an_item_or_a_turn_waits_for_an_insert_naming_it_and_is_then_refused():
    item, evidence, uncited = _cited()
    spare = _spare_item(item)
    for deleted, params in (("DELETE FROM items_item WHERE id = %s", [spare.pk]),
                            ("DELETE FROM items_turn WHERE id = %s", [uncited.pk])):
        # The delete waits for the item's set (the turn's conversation), locked by the insert.
        error = waits_then_refused([(EVIDENCE_INSERT, [spare.pk, uncited.pk, 7])], [(deleted, params)])
        assert error is not None and "still named by items_evidence" in str(error), error
        sql("DELETE FROM items_evidence WHERE item_id = %s", [spare.pk])
    assert Item.objects.filter(pk=spare.pk).exists() and Turn.objects.filter(pk=uncited.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_waits_for_a_delete_of_what_it_names_and_is_then_refused():
    """Without the lock the insert would find the row (the delete is not committed) and keep a row
    naming one that is gone."""
    item, evidence, uncited = _cited()
    spare = _spare_item(item)
    error = waits_then_refused([("DELETE FROM items_item WHERE id = %s", [spare.pk])],
                               [(EVIDENCE_INSERT, [spare.pk, uncited.pk, 7])])
    assert error is not None and "names no item" in str(error), error
    error = waits_then_refused([("DELETE FROM items_turn WHERE id = %s", [uncited.pk])],
                               [(EVIDENCE_INSERT, [item.pk, uncited.pk, 7])])
    assert error is not None and "names no turn" in str(error), error
    conversation = Conversation.objects.create(external_id="lone", speaker_a="A", speaker_b="B")
    error = waits_then_refused([("DELETE FROM items_conversation WHERE id = %s", [conversation.pk])],
                               [(ITEM_INSERT, [item.item_set_id, "late", conversation.pk])])
    assert error is not None and "names no conversation" in str(error), error
    assert not Evidence.objects.filter(turn_id=uncited.pk).exists() and not Item.objects.filter(external_id="late").exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_item_moved_to_another_set_waits_for_an_insert_naming_it():
    """A move takes the old set's lock, so the item cannot leave the set an insert locked and be deleted
    under the other set's lock."""
    item, evidence, uncited = _cited()
    other, _, _ = _cited("elsewhere")
    spare = _spare_item(item)
    error = waits_then_refused([(EVIDENCE_INSERT, [spare.pk, uncited.pk, 7])], [
        ("UPDATE items_item SET item_set_id = %s WHERE id = %s", [other.item_set_id, spare.pk]),
        ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
    ])
    assert error is not None and "still named by items_evidence" in str(error), error
    assert Evidence.objects.filter(item=spare).count() == 1


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_delete_of_a_session_or_a_conversation_waits_for_an_insert_of_a_turn_naming_it_and_is_then_refused():
    conversation, session, other = _lone(turns=0)
    for deleted, params, named in (("DELETE FROM items_session WHERE id = %s", [other.pk], f"session {other.pk}"),
                                   ("DELETE FROM items_conversation WHERE id = %s", [conversation.pk],
                                    f"conversation {conversation.pk}")):
        # The delete waits for the row itself, locked FOR KEY SHARE by the insert.
        error = waits_then_refused([(TURN_INSERT, [conversation.pk, other.pk, "D2:1"])], [(deleted, params)])
        assert error is not None and f"{named} is still named by items_turn" in str(error), error
        sql("DELETE FROM items_turn WHERE conversation_id = %s", [conversation.pk])
    assert Session.objects.filter(pk=other.pk).exists() and Conversation.objects.filter(pk=conversation.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_of_a_turn_waits_for_a_delete_of_its_session_or_conversation_and_is_then_refused():
    """Without the lock the insert would find the row (the delete is not committed) and keep a turn naming
    one that is gone."""
    conversation, session, other = _lone(turns=0)
    error = waits_then_refused([("DELETE FROM items_session WHERE id = %s", [other.pk])],
                               [(TURN_INSERT, [conversation.pk, other.pk, "D2:1"])])
    assert error is not None and f"session_id {other.pk} names no session" in str(error), error
    error = waits_then_refused([("DELETE FROM items_session WHERE conversation_id = %s", [conversation.pk]),
                                ("DELETE FROM items_conversation WHERE id = %s", [conversation.pk])],
                               [(TURN_INSERT, [conversation.pk, session.pk, "D1:1"])])
    assert error is not None and f"conversation_id {conversation.pk} names no conversation" in str(error), error
    assert not Turn.objects.exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_delete_of_a_context_waits_for_an_insert_of_an_item_naming_it_and_is_then_refused():
    item, _, _ = _cited()
    context = _context(item)
    for changed in ("DELETE FROM items_context WHERE id = %s", "UPDATE items_context SET id = id + 100000 WHERE id = %s"):
        # The delete waits for the context itself, locked FOR KEY SHARE by the insert.
        error = waits_then_refused([(CITING_INSERT, [item.item_set_id, "late", context.pk])], [(changed, [context.pk])])
        assert error is not None and f"context {context.pk} is still named by items_item" in str(error), error
        sql("DELETE FROM items_item WHERE external_id = 'late'")
    assert Context.objects.filter(pk=context.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_item_naming_a_context_waits_for_its_delete_and_is_then_refused():
    """Without the lock the insert would find the context (the delete is not committed) and keep an item
    naming one that is gone."""
    item, _, _ = _cited()
    first, second = _context(item, "q1"), _context(item, "q2")
    error = waits_then_refused([("DELETE FROM items_context WHERE id = %s", [first.pk])],
                               [(CITING_INSERT, [item.item_set_id, "late", first.pk])])
    assert error is not None and f"context_id {first.pk} names no context" in str(error), error
    error = waits_then_refused([("DELETE FROM items_context WHERE id = %s", [second.pk])],
                               [("UPDATE items_item SET context_id = %s WHERE id = %s", [second.pk, item.pk])])
    assert error is not None and f"context_id {second.pk} names no context" in str(error), error
    assert not Item.objects.filter(external_id="late").exists() and Item.objects.get(pk=item.pk).context_id is None


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_insert_locks_its_item_set_before_its_context():
    """As when the context was checked at the commit: a transaction that deletes a set's items (which locks
    the set) and then a context does not deadlock with an insert naming both, which waits for the set
    holding no lock on the context, and is then refused."""
    item, _, _ = _cited()
    spare, context = _spare_item(item), _context(item)
    with _connect() as holding, _connect() as waiting:
        holding.execute("DELETE FROM items_item WHERE id = %s", [spare.pk])
        thread, outcome = _in_thread(lambda: waiting.execute(CITING_INSERT, [item.item_set_id, "late", context.pk]))
        assert _waiting_for_a_lock(waiting.info.backend_pid)
        holding.execute("DELETE FROM items_context WHERE id = %s", [context.pk])
        holding.commit()
        thread.join(10)
        waiting.rollback()
    error = outcome.get("error")
    assert error is not None and f"context_id {context.pk} names no context" in str(error), error
    assert not Context.objects.filter(pk=context.pk).exists() and not Item.objects.filter(pk=spare.pk).exists()


@postgres_only
def test_reversing_the_migration_puts_the_foreign_keys_back(transactional_db):
    _cited()
    migrate([("items", "0011_item_evidence_index_dropped")])
    try:
        deferred = sql("SELECT count(*), bool_and(condeferrable AND condeferred) FROM pg_constraint WHERE contype = 'f' "
                       "AND conrelid IN ('items_item'::regclass, 'items_evidence'::regclass)")
        assert deferred == [(5, True)]  # the four, and the context's, as Django makes them
        assert sql("SELECT count(*) FROM pg_trigger WHERE tgname LIKE %s", ["%verified_%_references%"]) == [(0,)]
    finally:
        migrate_to_latest()
    test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it()


@postgres_only
def test_reversing_to_0012_puts_the_turns_foreign_keys_and_index_back(transactional_db):
    _lone()
    migrate([("items", "0012_item_references_checked_per_statement")])
    try:
        assert sql("SELECT array_agg(confrelid::regclass::text ORDER BY confrelid::regclass::text), "
                   "bool_and(condeferrable AND condeferred) FROM pg_constraint "
                   "WHERE contype = 'f' AND conrelid = 'items_turn'::regclass") == [(["items_conversation", "items_session"], True)]
        assert ["conversation_id"] in _turn_indexes()
        assert sql("SELECT count(*) FROM pg_trigger WHERE tgname LIKE %s", ["%verified_turn_references%"]) == [(0,)]
    finally:
        migrate_to_latest()
    test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it()
    test_a_turns_conversation_has_no_index_of_its_own()


@postgres_only
def test_reversing_to_0014_puts_the_contexts_foreign_key_back(transactional_db):
    item, _, _ = _cited()
    Item.objects.filter(pk=item.pk).update(context=_context(item))
    migrate([("items", "0014_item_indexes_an_import_fills_fewer")])
    try:
        assert sql("SELECT array_agg(confrelid::regclass::text), bool_and(condeferrable AND condeferred) "
                   "FROM pg_constraint WHERE contype = 'f' AND conrelid = 'items_item'::regclass "
                   "AND confrelid = 'items_context'::regclass") == [(["items_context"], True)]
        assert sql("SELECT count(*) FROM pg_trigger WHERE tgname LIKE %s", ["%verified_shared_context_references%"]) == [(0,)]
        assert sql("SELECT count(*) FROM pg_proc WHERE proname LIKE %s", ["%shared_context%"]) == [(0,)]
    finally:
        migrate_to_latest()
    test_the_database_keeps_a_foreign_key_or_the_triggers_that_replace_it()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_under_repeatable_read_the_references_are_refused_rather_than_half_checked():
    item, evidence, uncited = _cited()
    spare = _spare_item(item)
    with _connect() as repeatable:
        repeatable.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        repeatable.commit()  # the transactions from here on
        for statement, params in ((EVIDENCE_INSERT, [spare.pk, uncited.pk, 7]),
                                  (ITEM_INSERT, [item.item_set_id, "rr", None]),
                                  ("DELETE FROM items_item WHERE id = %s", [spare.pk]),
                                  ("DELETE FROM items_turn WHERE id = %s", [uncited.pk])):
            with pytest.raises(Exception, match="checked under READ COMMITTED only"):
                repeatable.execute(statement, params)
            repeatable.rollback()
    assert Item.objects.filter(pk=spare.pk).exists() and Turn.objects.filter(pk=uncited.pk).exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_under_repeatable_read_a_turns_references_are_refused_rather_than_half_checked():
    conversation, session, other = _lone()
    turn = Turn.objects.filter(conversation=conversation).first()
    with _connect() as repeatable:
        repeatable.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        repeatable.commit()  # the transactions from here on
        for statement, params in ((TURN_INSERT, [conversation.pk, session.pk, "D9:1"]),
                                  ("UPDATE items_turn SET session_id = %s WHERE id = %s", [other.pk, turn.pk]),
                                  ("DELETE FROM items_session WHERE id = %s", [session.pk])):
            with pytest.raises(Exception, match="checked under READ COMMITTED only"):
                repeatable.execute(statement, params)
            repeatable.rollback()
    assert Turn.objects.filter(session=session).count() == 2 and not Turn.objects.filter(dia_id="D9:1").exists()


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_under_repeatable_read_an_items_context_is_refused_rather_than_half_checked():
    """An insert of items is refused there by 0012's triggers already; a change of an item's context and a
    delete of a context are refused by the context's own."""
    item, _, _ = _cited()
    named, free = _context(item, "q1"), _context(item, "q2")
    with _connect() as repeatable:
        repeatable.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        repeatable.commit()  # the transactions from here on
        for statement, params in (("UPDATE items_item SET context_id = %s WHERE id = %s", [named.pk, item.pk]),
                                  ("DELETE FROM items_context WHERE id = %s", [free.pk]),
                                  ("UPDATE items_context SET id = id + 100000 WHERE id = %s", [free.pk])):
            with pytest.raises(Exception, match="checked under READ COMMITTED only"):
                repeatable.execute(statement, params)
            repeatable.rollback()
    assert Item.objects.get(pk=item.pk).context_id is None and Context.objects.filter(pk=free.pk).exists()
