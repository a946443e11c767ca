"""upload_import: the uploaded file is saved privately and handed to the same importers."""

import io
import json
import zipfile

import pytest

from goldkey.lib.jsonio import ImportFailed
from items.models import Conversation
from items.upload_services import Upload, upload_import
from tests.items.conftest import locomo_conversation, table_counts, twist_record

pytestmark = pytest.mark.django_db


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_zip_holding_one_locomo10_json_imports_its_conversations():
    doc = json.dumps([{"sample_id": "conv-26", "conversation": locomo_conversation()}])
    report = upload_import(kind="locomo", upload=Upload("locomo10.zip", [zipped({"data/locomo10.json": doc})]))
    assert report.created == 1
    assert Conversation.objects.get().external_id == "conv-26"


def test_a_zip_with_several_json_files_none_a_conversation_is_refused():
    archive = zipped({"a.json": "{}", "b.json": "{}"})
    with pytest.raises(ImportFailed, match="expected 26.json-style files or one locomo10.json, found a.json, b.json"):
        upload_import(kind="locomo", upload=Upload("x.zip", [archive]))


def test_a_zip_with_the_same_conversation_twice_is_refused():
    doc = json.dumps(locomo_conversation())
    with pytest.raises(ImportFailed, match="26.json appears twice"):
        upload_import(kind="locomo", upload=Upload("x.zip", [zipped({"a/26.json": doc, "b/26.json": doc})]))
    assert Conversation.objects.count() == 0


def test_an_unknown_kind_is_refused():
    with pytest.raises(ImportFailed, match="unknown import kind 'csv'"):
        upload_import(kind="csv", upload=Upload("x.csv", [b""]))


def test_items_need_an_item_set_name(small_corpus):
    before = table_counts()
    with pytest.raises(ImportFailed, match="item set name is required"):
        upload_import(kind="twist", upload=Upload("t.jsonl", [json.dumps(twist_record(1)).encode()]), item_set_name=" ")
    assert table_counts() == before


def test_an_upload_is_read_in_chunks_and_named_by_its_base_name(small_corpus):
    line = json.dumps(twist_record(1, conv="conv-7")).encode() + b"\n"
    with pytest.raises(ImportFailed) as caught:
        upload_import(kind="twist", upload=Upload("C:\\Users\\me\\items.jsonl", [line[:10], line[10:]]), item_set_name="s")
    assert caught.value.errors == [
        "items.jsonl:1: field 'conv': unknown conversation 'conv-7' (import it with import_locomo first)"
    ]


def test_an_upload_records_the_licence_it_names():
    doc = json.dumps(locomo_conversation())
    upload_import(kind="locomo", upload=Upload("7.json", [doc.encode()]), license="cc-by-4.0")
    assert Conversation.objects.get().license == "cc-by-4.0"
