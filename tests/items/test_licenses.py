"""Every imported item set and conversation records the licence it was released under: the import's
--license, else the benchmark's (items) or LoCoMo's own (the corpus). Releases declare what is recorded."""

import importlib
from io import StringIO

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.base import CommandError

from goldkey.lib.jsonio import ImportFailed
from items.models import LOCOMO_LICENSE, Conversation, ItemSet
from items.services import corpus_import_locomo, items_import_lapse, items_import_twist
from tests.items.conftest import table_counts, twist_record, write_jsonl

pytestmark = pytest.mark.django_db


def test_an_item_set_records_its_benchmarks_licence_by_default(small_corpus, twist_file):
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s")
    assert ItemSet.objects.get(name="s").license == "cc-by-4.0"


def test_an_import_records_the_licence_it_names(small_corpus, twist_file, tmp_path):
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s", license="cc-by-sa-4.0")
    assert ItemSet.objects.get(name="s").license == "cc-by-sa-4.0"
    lapse = write_jsonl(tmp_path / "lapse.jsonl", [{"gid": "g001", "query": "q", "response": "r", "witness": "w"}])
    items_import_lapse(path=lapse, item_set_name="l", license="mit")
    assert ItemSet.objects.get(name="l").license == "mit"


def test_conversations_record_locomos_licence_unless_the_import_names_one(db, locomo_dir, tmp_path):
    corpus_import_locomo(path=locomo_dir)
    assert set(Conversation.objects.values_list("license", flat=True)) == {LOCOMO_LICENSE} == {"cc-by-nc-4.0"}


def test_reimporting_a_conversation_under_another_licence_is_refused(small_corpus, locomo_dir):
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        corpus_import_locomo(path=locomo_dir, license="cc-by-4.0")
    assert "field 'license': conversation conv-1 is recorded under cc-by-nc-4.0, not cc-by-4.0" in "\n".join(caught.value.errors)
    assert table_counts() == before


def test_an_item_set_keeps_its_licence_and_another_one_is_refused(small_corpus, twist_file):
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s")
    with pytest.raises(ImportFailed) as caught:
        items_import_twist(path=twist_file([twist_record(2)]), item_set_name="s", license="cc0-1.0")
    assert caught.value.errors == ["field 'license': item set 's' is recorded under cc-by-4.0, not cc0-1.0"]
    assert ItemSet.objects.get(name="s").items.count() == 1  # nothing of the refused import was written


@pytest.mark.parametrize("bad", ["CC BY 4.0", "cc-by-4.0; rm", "x" * 51, "-leading-dash"])
def test_a_malformed_licence_is_refused_naming_the_field(small_corpus, twist_file, bad):
    before = table_counts()
    with pytest.raises(ImportFailed) as caught:
        items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s", license=bad)
    assert "field 'license'" in caught.value.errors[0]
    assert table_counts() == before


def test_the_import_commands_take_a_licence(small_corpus, twist_file):
    call_command("import_twist", str(twist_file([twist_record(1)])), "--item-set", "s", "--license", "cc-by-nc-sa-4.0",
                 stdout=StringIO())
    assert ItemSet.objects.get(name="s").license == "cc-by-nc-sa-4.0"
    with pytest.raises(CommandError, match="field 'license'"):
        call_command("import_twist", str(twist_file([twist_record(2)])), "--item-set", "t", "--license", "Not A Licence",
                     stdout=StringIO(), stderr=StringIO())


def test_the_migration_gives_item_sets_imported_before_licences_their_benchmarks(small_corpus, twist_file):
    items_import_twist(path=twist_file([twist_record(1)]), item_set_name="s")
    ItemSet.objects.filter(name="s").update(license="")
    migration = importlib.import_module("items.migrations.0005_licenses")
    migration.item_set_licenses(django_apps, None)
    assert ItemSet.objects.get(name="s").license == "cc-by-4.0"
