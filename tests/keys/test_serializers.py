"""The key detail's declared shape (keys/serializers.py) matches what the API answers, for a frozen key
and for a key derived from it with a change."""

import pytest
from rest_framework.test import APIClient

from keys.serializers import RECORD_SERIALIZERS, KeyDetailSerializer, ManifestSerializer
from keys.services import erratum_decide, erratum_file, key_derive, key_publish

pytestmark = pytest.mark.django_db


def _declared(serializer) -> set[str]:
    return set(serializer().fields)


def _required(serializer) -> set[str]:
    return {name for name, field in serializer().fields.items() if field.required}


def _valid(serializer, data: dict) -> None:
    checked = serializer(data=data)
    assert checked.is_valid(), checked.errors


def test_the_key_detail_answers_exactly_the_declared_fields(frozen_key):
    detail = APIClient().get(f"/api/keys/{frozen_key.version}/").json()
    assert set(detail) == _declared(KeyDetailSerializer)
    manifest = detail["manifest"]
    assert _required(ManifestSerializer) <= set(manifest) <= _declared(ManifestSerializer)
    _valid(ManifestSerializer, manifest)
    for record in detail["records"]:
        assert set(record) == _declared(RECORD_SERIALIZERS[frozen_key.campaign.protocol])
        _valid(RECORD_SERIALIZERS[frozen_key.campaign.protocol], record)


def test_a_derived_keys_manifest_and_changelog_match_the_declared_shape(frozen_key, author, outsider):
    erratum = erratum_file(key=frozen_key, item_external_id="s-0002", kind="relabel", value="aligned",
                           description="not a hard negative", user=outsider)
    erratum_decide(erratum=erratum, accept=True, note="agreed", user=author)
    child = key_derive(parent=frozen_key, version="TWIST-test-v1.1", user=author)
    key_publish(key=child, user=author)
    detail = APIClient().get(f"/api/keys/{child.version}/").json()
    assert {"parent", "parent_sha256", "errata_applied"} <= set(detail["manifest"]) <= _declared(ManifestSerializer)
    _valid(ManifestSerializer, detail["manifest"])
    assert len(detail["changelog"]) == 1
    _valid(KeyDetailSerializer().fields["changelog"].child.__class__, detail["changelog"][0])
