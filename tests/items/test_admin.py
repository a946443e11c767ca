"""The items admin and its "Import items…" upload page, through the Django test client."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from items.models import Conversation, GenerationReject, Item, ItemSet, Turn
from items.services import corpus_import_locomo, items_import_twist
from tests.items.conftest import locomo_conversation, table_counts, twist_record

pytestmark = pytest.mark.django_db

IMPORT_URL = "admin:items_itemset_import"


def upload(name: str, content) -> SimpleUploadedFile:
    data = content if isinstance(content, bytes) else content.encode()
    return SimpleUploadedFile(name, data)


def jsonl(records: list) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def locomo_zip(*conversations: tuple[str, dict]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, doc in conversations:
            archive.writestr(f"locomo10_v2/{name}", json.dumps(doc, indent=1))
        archive.writestr("__MACOSX/locomo10_v2/._1.json", "junk")
    return buffer.getvalue()


@pytest.fixture
def author_client(client, author):
    client.force_login(author)
    return client


# --- who may import --------------------------------------------------------------------------


def test_the_itemset_changelist_links_to_the_import_page(author_client):
    response = author_client.get(reverse("admin:items_itemset_changelist"))
    assert response.status_code == 200
    assert reverse(IMPORT_URL) in response.content.decode()
    assert "Import items…" in response.content.decode()


@pytest.mark.parametrize("persona", ["author", "admin_user"])
def test_authors_and_admins_get_the_import_form(client, request, persona):
    client.force_login(request.getfixturevalue(persona))
    response = client.get(reverse(IMPORT_URL))
    assert response.status_code == 200
    assert 'enctype="multipart/form-data"' in response.content.decode()


def test_staff_without_the_author_role_are_refused_the_import_page(client, annotator_a):
    annotator_a.is_staff = True
    annotator_a.save()
    client.force_login(annotator_a)
    assert client.get(reverse(IMPORT_URL)).status_code == 403
    assert client.post(reverse(IMPORT_URL), {"kind": "locomo"}).status_code == 403
    assert client.get(reverse("admin:items_item_changelist")).status_code == 403


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_non_staff_are_sent_to_the_admin_login(client, request, persona):
    client.force_login(request.getfixturevalue(persona))
    response = client.get(reverse(IMPORT_URL))
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]


def test_anonymous_users_cannot_upload(client, locomo_dir):
    before = table_counts()
    response = client.post(
        reverse(IMPORT_URL), {"kind": "locomo", "file": upload("1.json", (locomo_dir / "1.json").read_bytes())}
    )
    assert response.status_code == 302
    assert table_counts() == before


# --- uploads ---------------------------------------------------------------------------------


def test_a_locomo_zip_upload_imports_the_conversations(author_client):
    archive = locomo_zip(("26.json", locomo_conversation()), ("30.json", locomo_conversation("Cy", "Di")))
    response = author_client.post(reverse(IMPORT_URL), {"kind": "locomo", "file": upload("locomo10.zip", archive)}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("admin:items_itemset_changelist")
    assert "Imported 2 conversation(s); 0 already present." in response.content.decode()
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["conv-26", "conv-30"]
    assert Turn.objects.count() == 16


def test_a_locomo10_json_list_upload_imports_the_conversations(author_client):
    doc = json.dumps([{"sample_id": "conv-41", "conversation": locomo_conversation()}])
    response = author_client.post(reverse(IMPORT_URL), {"kind": "locomo", "file": upload("locomo10.json", doc)})
    assert response.status_code == 302
    assert list(Conversation.objects.values_list("external_id", flat=True)) == ["conv-41"]


def test_a_twist_upload_with_rejects_imports_items_and_rejects(author_client, small_corpus):
    items = jsonl([twist_record(1), twist_record(2, type="aligned", evidence=["D1:3", "D2:1"])])
    rejects = jsonl([twist_record(9, _verdict="contradicts=True claim_stated=False", _dropped_by="verify")])
    response = author_client.post(
        reverse(IMPORT_URL),
        {
            "kind": "twist",
            "item_set": "TWIST Track B v1 candidates",
            "file": upload("track_b_items_v1_candidates.jsonl", items),
            "rejects": upload("rejects.jsonl", rejects),
        },
        follow=True,
    )
    text = response.content.decode()
    assert "Imported 2 item(s) into &#x27;TWIST Track B v1 candidates&#x27;" in text
    assert "Rejects: 1 new, 0 already present." in text
    item_set = ItemSet.objects.get(name="TWIST Track B v1 candidates")
    assert item_set.items.count() == 2 and item_set.rejects.count() == 1
    assert list(Item.objects.get(external_id="conv-1:v1b2").evidence.values_list("turn__dia_id", flat=True)) == ["D1:3", "D2:1"]


def test_a_lapse_upload_imports_items(author_client):
    records = jsonl([{"gid": "g001", "query": "q", "response": "r", "witness": "the Marbury Residences", "gap": "30d"}])
    response = author_client.post(
        reverse(IMPORT_URL), {"kind": "lapse", "item_set": "Lapse gold", "file": upload("gold.jsonl", records)}
    )
    assert response.status_code == 302
    item = Item.objects.get(external_id="g001")
    assert (item.kind, item.key_fact, item.hidden) == ("lapse", "the Marbury Residences", {"gap": "30d"})


def test_a_bad_upload_shows_every_file_line_error_and_writes_nothing(author_client, small_corpus):
    bad = jsonl([twist_record(1, conv="conv-99"), "{broken", twist_record(3, evidence=["D9:9"])])
    before = table_counts()
    response = author_client.post(
        reverse(IMPORT_URL), {"kind": "twist", "item_set": "s", "file": upload("track_b_bad.jsonl", bad)}
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "nothing was written" in text
    assert "track_b_bad.jsonl:1: field &#x27;conv&#x27;: unknown conversation &#x27;conv-99&#x27;" in text
    assert "track_b_bad.jsonl:2: invalid JSON" in text
    # A candidate citing an unknown turn is a gate reject, not a file error: not listed among the errors.
    assert "D9:9" not in text
    assert table_counts() == before


def test_a_bad_rejects_upload_refuses_the_items_too(author_client, small_corpus):
    before = table_counts()
    response = author_client.post(
        reverse(IMPORT_URL),
        {
            "kind": "twist",
            "item_set": "s",
            "file": upload("items.jsonl", jsonl([twist_record(1)])),
            "rejects": upload("rejects.jsonl", jsonl([twist_record(9, _dropped_by="verify")])),
        },
    )
    assert response.status_code == 400
    assert "rejects.jsonl:1: missing field &#x27;_verdict&#x27;" in response.content.decode()
    assert table_counts() == before


def test_a_bad_conversation_in_a_zip_is_refused_with_its_file_and_line(author_client):
    broken = locomo_conversation()
    broken["session_2"][1]["dia_id"] = 7
    archive = locomo_zip(("26.json", locomo_conversation()), ("30.json", broken))
    before = table_counts()
    response = author_client.post(reverse(IMPORT_URL), {"kind": "locomo", "file": upload("locomo.zip", archive)})
    assert response.status_code == 400
    assert "30.json:" in response.content.decode() and "field &#x27;dia_id&#x27; must be a string" in response.content.decode()
    assert table_counts() == before


def test_a_file_that_is_not_a_zip_is_refused(author_client):
    response = author_client.post(reverse(IMPORT_URL), {"kind": "locomo", "file": upload("locomo.zip", b"plain text")})
    assert response.status_code == 400
    assert "locomo.zip: not a zip archive" in response.content.decode()
    assert Conversation.objects.count() == 0


def test_a_dry_run_upload_reports_and_writes_nothing(author_client, small_corpus):
    before = table_counts()
    response = author_client.post(
        reverse(IMPORT_URL),
        {"kind": "twist", "item_set": "s", "dry_run": "on", "file": upload("t.jsonl", jsonl([twist_record(1)]))},
        follow=True,
    )
    assert "Dry run, nothing written: would import 1 item(s)" in response.content.decode()
    assert table_counts() == before


def test_twist_and_lapse_uploads_need_an_item_set_name(author_client, small_corpus):
    response = author_client.post(reverse(IMPORT_URL), {"kind": "twist", "file": upload("t.jsonl", jsonl([twist_record(1)]))})
    assert response.status_code == 200
    assert "An item set name is required" in response.content.decode()
    assert Item.objects.count() == 0


def test_rejects_are_refused_with_a_lapse_upload(author_client):
    response = author_client.post(
        reverse(IMPORT_URL),
        {"kind": "lapse", "item_set": "s", "file": upload("l.jsonl", "{}\n"), "rejects": upload("r.jsonl", "{}\n")},
    )
    assert "Generation rejects go with TWIST items only." in response.content.decode()
    assert ItemSet.objects.count() == 0


def test_an_uploaded_file_name_with_a_path_is_reduced_to_its_base_name(author_client, small_corpus):
    response = author_client.post(
        reverse(IMPORT_URL),
        {"kind": "twist", "item_set": "s", "file": upload("../../etc/evil.jsonl", jsonl([twist_record(1, conv="conv-9")]))},
    )
    assert "evil.jsonl:1: field &#x27;conv&#x27;" in response.content.decode()


# --- browsing --------------------------------------------------------------------------------


@pytest.fixture
def items_two_sets(small_corpus, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(jsonl([twist_record(1), twist_record(2, type="aligned"), twist_record(3, type="hard_negative")]))
    items_import_twist(path=path, item_set_name="set A")
    path.write_text(jsonl([twist_record(4, conv="conv-2", speaker="Cy")]))
    items_import_twist(path=path, item_set_name="set B")
    return ItemSet.objects.get(name="set A"), ItemSet.objects.get(name="set B")


def test_items_filter_by_kind_item_set_and_gold_label(author_client, items_two_sets):
    set_a, _ = items_two_sets
    url = reverse("admin:items_item_changelist")
    assert author_client.get(url, {"kind__exact": "twist"}).context["cl"].result_count == 4
    assert author_client.get(url, {"item_set__id__exact": set_a.pk}).context["cl"].result_count == 3
    response = author_client.get(url, {"gold_label__exact": "aligned"})
    assert [i.external_id for i in response.context["cl"].result_list] == ["conv-1:v1b2"]


def test_items_are_searchable_by_id_and_draft(author_client, items_two_sets):
    url = reverse("admin:items_item_changelist")
    assert [i.external_id for i in author_client.get(url, {"q": "conv-2:v1b4"}).context["cl"].result_list] == ["conv-2:v1b4"]
    assert author_client.get(url, {"q": "draft 3"}).context["cl"].result_count == 1


def test_an_item_page_shows_its_evidence_turns_read_only(author_client, items_two_sets):
    item = Item.objects.get(external_id="conv-1:v1b1")
    response = author_client.get(reverse("admin:items_item_change", args=[item.pk]))
    assert response.status_code == 200
    text = response.content.decode()
    assert "turn 1 of session 1" in text
    assert 'name="_save"' not in text  # imported items change through errata, not by hand


def test_the_itemset_list_counts_items_and_rejects(author_client, items_two_sets):
    response = author_client.get(reverse("admin:items_itemset_changelist"))
    rows = {s.name: (s.n_items, s.n_rejects) for s in response.context["cl"].result_list}
    assert rows == {"set A": (3, 0), "set B": (1, 0)}


def test_a_conversation_page_lists_its_dated_sessions_and_links_its_turns(author_client, small_corpus):
    conversation = Conversation.objects.get(external_id="conv-1")
    response = author_client.get(reverse("admin:items_conversation_change", args=[conversation.pk]))
    text = response.content.decode()
    assert "1:05 pm on 3 May, 2023" in text and "8 turns" in text
    turns = author_client.get(reverse("admin:items_turn_changelist"), {"conversation__id__exact": conversation.pk})
    assert turns.context["cl"].result_count == 8


def test_generation_rejects_are_listed_with_their_verdicts(author_client, small_corpus, tmp_path):
    items = tmp_path / "i.jsonl"
    items.write_text(jsonl([twist_record(1)]))
    rejects = tmp_path / "r.jsonl"
    rejects.write_text(jsonl([twist_record(9, _verdict="contradicts=True claim_stated=False", _dropped_by="verify")]))
    items_import_twist(path=items, item_set_name="s", rejects_path=rejects)
    response = author_client.get(reverse("admin:items_generationreject_changelist"))
    assert response.status_code == 200 and "contradicts=True claim_stated=False" in response.content.decode()


def test_an_author_still_blind_in_a_campaign_does_not_see_that_sets_items_or_rejects(
    client, author, annotator_b, items_two_sets
):
    from annotation.services import campaign_create

    set_a, _ = items_two_sets
    GenerationReject.objects.create(item_set=set_a, external_id="conv-1:v1b9", conversation_external_id="conv-1",
                                    record={}, verdict="v", dropped_by="verify")
    campaign_create(slug="pilot", item_set=set_a, annotators=[author, annotator_b])
    client.force_login(author)
    listed = client.get(reverse("admin:items_item_changelist")).context["cl"].result_list
    assert [i.external_id for i in listed] == ["conv-2:v1b4"]
    item = Item.objects.get(external_id="conv-1:v1b1")
    assert client.get(reverse("admin:items_item_change", args=[item.pk])).status_code == 302  # "does not exist"
    assert client.get(reverse("admin:items_generationreject_changelist")).context["cl"].result_count == 0

    author.enrollments.update(submitted_at="2026-01-01T00:00:00Z")
    assert client.get(reverse("admin:items_item_changelist")).context["cl"].result_count == 4


def test_the_item_list_runs_a_constant_number_of_queries(author_client, small_corpus, tmp_path):
    url = reverse("admin:items_item_changelist")

    def queries_with(n: int, name: str) -> int:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(jsonl([twist_record(i) for i in range(n)]))
        items_import_twist(path=path, item_set_name=name)
        author_client.get(url)  # warm the session and role caches
        with CaptureQueriesContext(connection) as queries:
            assert author_client.get(url).status_code == 200
        return len(queries)

    assert queries_with(3, "few") == queries_with(60, "many")


def test_the_corpus_pages_run_a_constant_number_of_queries(author_client, db, tmp_path):
    def queries_with(n: int) -> int:
        folder = tmp_path / f"c{n}"
        folder.mkdir()
        for i in range(n):
            (folder / f"{100 * n + i}.json").write_text(json.dumps(locomo_conversation(turns=3 + i)))
        corpus_import_locomo(path=folder)
        total = 0
        for name in ("conversation", "turn", "itemset"):
            url = reverse(f"admin:items_{name}_changelist")
            author_client.get(url)
            with CaptureQueriesContext(connection) as queries:
                assert author_client.get(url).status_code == 200
            total += len(queries)
        conversation = Conversation.objects.order_by("-id").first()
        with CaptureQueriesContext(connection) as queries:
            author_client.get(reverse("admin:items_conversation_change", args=[conversation.pk]))
        return total + len(queries)

    assert queries_with(2) == queries_with(12)
