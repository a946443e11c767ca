"""Typed shapes of a gold key's detail in the API: its manifest, changelog and canonical records.

The manifest is written once, when the key is built, and sealed with it; the API hands it out as stored.
These serializers declare its shape for the OpenAPI schema (fields a derived key or a frozen key adds are
optional), and tests check a freshly frozen key's manifest against them."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

import protocols
from adjudication.serializers import AgreementField
from goldkey.api_schema import json_schema_field


def _number(**kwargs):
    return serializers.FloatField(allow_null=True, **kwargs)


class HeadlineKappaSerializer(serializers.Serializer):
    kappa = _number()
    ci95 = serializers.ListField(child=serializers.FloatField(allow_null=True), allow_null=True, required=False)
    ci95_bootstrap = serializers.ListField(child=serializers.FloatField(allow_null=True), allow_null=True, required=False)
    n = serializers.IntegerField(allow_null=True, required=False)
    agree = serializers.IntegerField(allow_null=True, required=False)
    observed = _number(required=False)
    meaning = serializers.CharField(allow_blank=True)


class KeyAgreementSerializer(serializers.Serializer):
    question = serializers.CharField(help_text="the answer key the headline kappas compare")
    kappa_all_candidates = HeadlineKappaSerializer(allow_null=True)
    kappa_kept_set = HeadlineKappaSerializer(allow_null=True, required=False)
    kappa_binary = HeadlineKappaSerializer(allow_null=True, required=False)
    preregistered_bar = _number(required=False)
    full = AgreementField(help_text="the campaign's agreement figures when the key was built")


class AnnotationOrderSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=["drawn", "imported", "given"])
    seed = serializers.IntegerField(allow_null=True, help_text="the seed given at import (source 'given')")


class CouncilMemberRecordSerializer(serializers.Serializer):
    name = serializers.CharField()
    model = serializers.CharField(allow_blank=True, help_text="the model the member is configured to ask for")
    is_generator = serializers.BooleanField()
    reported_models = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="the models the endpoint said answered (empty: imported votes)"
    )
    system_fingerprints = serializers.ListField(child=serializers.CharField(), required=False)


class CouncilPairSerializer(serializers.Serializer):
    members = serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2)
    kappa = _number()
    n = serializers.IntegerField()


class GateCountSerializer(serializers.Serializer):
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()


class GateSummarySerializer(serializers.Serializer):
    gates = serializers.DictField(child=GateCountSerializer())
    generation_rejects_by_gate = serializers.DictField(child=serializers.IntegerField())


class QueueSnapshotSerializer(serializers.Serializer):
    id = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField())
    suggestion = serializers.CharField()
    decision = serializers.CharField(allow_null=True, help_text="the action decided, null if none")


class LeakageSerializer(serializers.Serializer):
    """The shortcut-leakage audit of the key's own items (PROTOCOL §6), recorded when it was frozen."""

    computed = serializers.BooleanField(help_text="false: too few items, conversations or classes (see reason)")
    method = serializers.CharField()
    reason = serializers.CharField(required=False)
    field = serializers.CharField(required=False, help_text="the item content field the classifier reads")
    positive = serializers.CharField(required=False, help_text="the gold value it tries to recover")
    items = serializers.IntegerField(required=False)
    conversations = serializers.IntegerField(required=False)
    folds = serializers.IntegerField(required=False)
    contradicting = serializers.IntegerField(required=False, help_text="items of the positive gold value")
    accuracy = _number(required=False)
    balanced_accuracy = _number(required=False, help_text="0.5: no signal in the text alone")
    contradicting_recall = _number(required=False, help_text="recall on the positive gold value")
    other_recall = _number(required=False)
    majority_baseline = _number(required=False)
    draft_words_mean = serializers.DictField(child=serializers.FloatField(), required=False)
    batch_by_type = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()), required=False)
    tokens_for_contradicting = serializers.ListField(child=serializers.CharField(), required=False)
    tokens_for_other = serializers.ListField(child=serializers.CharField(), required=False)


class ManifestSerializer(serializers.Serializer):
    key_version = serializers.CharField()
    entries = serializers.IntegerField()
    campaign = serializers.CharField()
    campaign_seed = serializers.IntegerField()
    protocol = serializers.CharField()
    protocol_version = serializers.CharField()
    item_set = serializers.CharField()
    candidates = serializers.IntegerField()
    kept = serializers.IntegerField()
    dropped = serializers.IntegerField()
    counts_by_gold = serializers.DictField(child=serializers.IntegerField())
    decisions = serializers.DictField(child=serializers.IntegerField(), help_text="decisions per action")
    annotators = serializers.ListField(child=serializers.CharField(), help_text="pseudonyms")
    adjudicator_also_annotator = serializers.ListField(child=serializers.CharField())
    annotation_order = serializers.DictField(
        child=AnnotationOrderSerializer(), required=False, help_text="per pseudonym: where the annotation order came from"
    )
    decisions_adjudicator_unknown = serializers.IntegerField(
        required=False, help_text="decisions whose adjudicator was not recorded (imported with --adjudicator-unknown)"
    )
    council_members = CouncilMemberRecordSerializer(many=True)
    gate_summary = GateSummarySerializer()
    agreement = KeyAgreementSerializer()
    council_pairwise_kappa = CouncilPairSerializer(many=True)
    queue = QueueSnapshotSerializer(many=True, help_text="the human queue as it stood at freezing")
    sha256 = serializers.CharField(required=False, help_text="set when frozen")
    frozen_at = serializers.CharField(required=False, help_text="set when frozen (ISO 8601, UTC)")
    parent = serializers.CharField(required=False, help_text="derived keys: the parent version")
    parent_sha256 = serializers.CharField(required=False)
    errata_applied = serializers.ListField(child=serializers.IntegerField(), required=False)
    leakage = LeakageSerializer(required=False, help_text="keys frozen since the audit ships with them")


# What each source of a key record field holds (`ProtocolSpec.key_fields`; keys.canonical writes them).
KEY_FIELD_SOURCES = {
    "external_id": lambda **kw: serializers.CharField(**kw, help_text="the item's id"),
    "gold": lambda **kw: serializers.CharField(**kw, help_text="the final gold"),
    "verdict": lambda **kw: serializers.CharField(**kw, help_text="the primary answer that agrees with the gold"),
    "family": lambda **kw: serializers.CharField(**kw, allow_blank=True, help_text="the item's stratum"),
    "evidence": lambda **kw: serializers.ListField(
        **kw, child=serializers.CharField(), allow_null=True, help_text="the turns the item cites"),
    "quote": lambda **kw: serializers.CharField(
        **kw, allow_blank=True, allow_null=True, help_text="the quote the gold rests on ('' where the gold has none)"),
    "history_turns": lambda **kw: serializers.IntegerField(**kw, allow_null=True),
    "provenance": lambda **kw: serializers.CharField(**kw, help_text="how the gold was reached"),
}


def _key_field(spec, source: str, **kw) -> serializers.Field:
    """The serializer field of one key-field source. A field frozen from the item's content is described
    as the content schema describes it, and is never required: entries frozen before the protocol froze
    it do not have it."""
    if not source.startswith(protocols.base.KEY_CONTENT_SOURCE):
        return KEY_FIELD_SOURCES[source](**kw)
    schema = spec.stored_field_schemas().get(source.removeprefix(protocols.base.KEY_CONTENT_SOURCE))
    if schema is not None:  # typed as the protocol's schema types it (the shared context's where it holds it)
        return json_schema_field(schema, required=False, allow_null=True)
    return serializers.JSONField(required=False, allow_null=True, help_text="frozen from the item's content")


def _record_serializer(spec) -> type[serializers.Serializer]:
    """One protocol's key record, field by field as its spec lists them, then the key version."""
    fields = {name: _key_field(spec, source) for name, source in spec.key_fields}
    fields["key_version"] = serializers.CharField()
    return type(f"{spec.class_prefix}KeyRecordSerializer", (serializers.Serializer,), fields)


# A key's records are those of its protocol: one serializer per registered protocol, from its spec.
RECORD_SERIALIZERS = {spec.name: _record_serializer(spec) for spec in protocols.specs()}


@extend_schema_field(PolymorphicProxySerializer(
    component_name="KeyRecord", serializers=list(RECORD_SERIALIZERS.values()), resource_type_field_name=None, many=False
))
class KeyRecordField(serializers.Field):
    """One canonical record: its fields are those of the key's item kind."""

    def to_representation(self, value):
        return value

    def to_internal_value(self, data):
        for serializer in RECORD_SERIALIZERS.values():
            checked = serializer(data=data)
            if checked.is_valid() and set(data) == set(checked.fields):
                return checked.validated_data
        raise serializers.ValidationError("not a record of any key kind")


def _entry_content_fields() -> dict:
    """Every field of any protocol's record but the key version; required where every protocol's has it."""
    records = [(spec, dict(spec.key_fields)) for spec in protocols.specs()]
    fields: dict = {}
    for spec, record in records:
        for name, source in record.items():
            if name not in fields:
                fields[name] = _key_field(spec, source, required=all(name in r for _, r in records))
    return fields


# An entry without its key version: what a changelog compares (the fields of the key's record type).
EntryContentSerializer = type("EntryContentSerializer", (serializers.Serializer,), _entry_content_fields())


class ChangeSerializer(serializers.Serializer):
    item = serializers.CharField()
    erratum = serializers.IntegerField()
    kind = serializers.CharField()
    before = EntryContentSerializer(allow_null=True)
    after = EntryContentSerializer(allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    decision_note = serializers.CharField(allow_blank=True)


class DiffErratumSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    decision_note = serializers.CharField(allow_blank=True)


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "array", "items": {"type": "string"}}],
                      "nullable": True})
class RecordValueField(serializers.JSONField):
    """One value of a key record: text (gold, quote, family), a number (history turns) or turn ids."""


class ParentDiffSerializer(serializers.Serializer):
    """One item of a derived key's per-item diff from its parent (keys.canonical.parent_diff)."""

    item = serializers.CharField()
    changes = serializers.ListField(child=serializers.CharField(), help_text="dropped, added, relabelled, re-quoted, re-evidenced")
    fields = serializers.DictField(
        child=serializers.ListField(child=RecordValueField(allow_null=True), min_length=2, max_length=2),
        help_text="record field -> [parent's value, this version's]",
    )
    before = EntryContentSerializer(allow_null=True, help_text="the parent's record; null: not in the parent")
    after = EntryContentSerializer(allow_null=True, help_text="this version's record; null: dropped")
    errata = DiffErratumSerializer(many=True)


class KeyDetailSerializer(serializers.Serializer):
    """What KeyDetailApi answers: the key's list fields (GoldKeySerializer), then manifest, changelog and
    every canonical record. Declared for the schema; a test keeps the field list equal to the response's."""

    version = serializers.CharField()
    benchmark = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    parent = serializers.CharField(allow_null=True)
    sha256 = serializers.CharField(allow_blank=True)
    frozen_at = serializers.DateTimeField(allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True, help_text="null: a draft, or frozen and not yet published")
    entries = serializers.IntegerField()
    notes = serializers.CharField(allow_blank=True)
    manifest = ManifestSerializer()
    changelog = ChangeSerializer(many=True, help_text="derived keys: one record per changed item")
    changes_from_parent = ParentDiffSerializer(many=True, allow_null=True, help_text="derived keys: the per-item diff from the parent; null for a first version")
    records = serializers.ListField(child=KeyRecordField())
