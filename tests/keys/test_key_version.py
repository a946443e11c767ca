"""A key version is plain: the service refuses a NUL, a control character, a space, a slash or a length
past the column with a message, and the database refuses such a row on any other path (both databases)."""

import pytest
from django.db import IntegrityError, transaction

from keys.models import GoldKey
from keys.services import key_build, key_version_check

pytestmark = pytest.mark.django_db

BAD = ["TWIST\x00v1", "\x00", "TWIST\nv1.0", "TWIST\rv1", "TWIST\tv1", "TWIST v1.0", "../TWIST", "a/b", "-v1", "", "x\x7f",
       "TWIST-v1.0\u200b", "v" * 51]


@pytest.mark.parametrize("version", ["TWIST-v1.0", "K", "LAPSE_v2+rc.1", "v" * 50])
def test_a_plain_version_passes(version):
    key_version_check(version=version)


@pytest.mark.parametrize("version", BAD)
def test_a_draft_with_a_version_that_is_not_plain_is_refused_with_a_message(decided, author, version):
    from goldkey.errors import ApplicationError

    with pytest.raises(ApplicationError, match="key version"):
        key_build(campaign=decided, version=version, user=author)
    assert not GoldKey.objects.exists()


@pytest.mark.parametrize("version", [v for v in BAD if len(v) <= 50])
def test_the_database_refuses_a_key_row_with_a_version_that_is_not_plain(decided, author, version):
    from django.db import connection

    if connection.vendor == "postgresql" and "\x00" in version:
        pytest.skip("SQLite only: PostgreSQL stores no NUL in any text (psycopg refuses it before the table's check)")
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldKey.objects.create(benchmark=decided.item_set.track.benchmark, kind="twist", version=version)


def test_the_database_refuses_an_update_to_such_a_version(decided, author):
    key = GoldKey.objects.create(benchmark=decided.item_set.track.benchmark, kind="twist", version="K-v1.0")
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldKey.objects.filter(pk=key.pk).update(version="K\nv1.0")


def test_the_build_page_refuses_such_a_version_without_starting_a_job(decided, author, client):
    from keys.models import KeyJob

    client.force_login(author)
    response = client.post(f"/keys/new/{decided.slug}/", {"version": "TWIST v1.0"}, follow=True)
    assert "is not a key version" in response.content.decode()
    assert not KeyJob.objects.exists()


def test_key_freeze_with_a_nul_in_the_version_exits_non_zero(decided, author):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="is not a key version"):
        call_command("key_freeze", decided.slug, "--key-version", "TWIST\x00v1", "--by", "author", stdout=StringIO())
    with pytest.raises(CommandError, match="no gold key"):
        call_command("key_verify", "TWIST\x00v1", stdout=StringIO())
