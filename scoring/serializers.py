"""The typed shape of a score report in the API (the selector builds it; these classes only declare it
for the OpenAPI schema, and a test checks a real report against them)."""

from rest_framework import serializers


def _interval(**kwargs):
    return serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, **kwargs)


class FigureSerializer(serializers.Serializer):
    k = serializers.IntegerField(help_text="items scored correct")
    n = serializers.IntegerField(help_text="items scored")
    value = serializers.FloatField(help_text="k / n")
    wilson = _interval(help_text="Wilson 95% interval")
    bootstrap = _interval(required=False, help_text="conversation-cluster bootstrap 95% interval (CR, AS, HNS)")


class FiguresSerializer(serializers.Serializer):
    CR = FigureSerializer()
    AS = FigureSerializer()
    HNS = FigureSerializer()
    Attr = FigureSerializer()
    GCR = FigureSerializer()
    fact_only = FigureSerializer()
    balanced_accuracy = serializers.FloatField(help_text="(CR + AS) / 2")
    n_items = serializers.IntegerField()


class BootstrapSectionSerializer(serializers.Serializer):
    replicates = serializers.IntegerField()
    seed = serializers.IntegerField()
    cluster = serializers.CharField()
    metrics = serializers.ListField(child=serializers.CharField())


class RunFiguresSerializer(FiguresSerializer):
    bootstrap = BootstrapSectionSerializer(required=False)
    strata = serializers.DictField(child=FiguresSerializer(), help_text="the same figures per history-length stratum")
    ignored_predictions = serializers.IntegerField(help_text="predictions for items the key does not hold")


class McNemarTestSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    # "class" is a Python keyword: the field is declared under another name and renamed in the schema.
    class_ = serializers.CharField(help_text="the gold class the test compares on")
    b_count = serializers.IntegerField(help_text="items a got right and b wrong")
    c_count = serializers.IntegerField(help_text="items b got right and a wrong")
    p = serializers.FloatField(help_text="exact two-sided p")
    p_holm = serializers.FloatField(help_text="Holm-adjusted over the family")
    family_size = serializers.IntegerField(help_text="the number of tests p_holm is adjusted over")

    def get_fields(self):
        fields = super().get_fields()
        fields["class"] = fields.pop("class_")
        return fields


class FamilySerializer(serializers.Serializer):
    size = serializers.IntegerField()
    spec = serializers.CharField(help_text="all | against:RUN | pairs:A~B,… | floors:SYSTEM (?family= on the page and API)")
    description = serializers.CharField()
    runs = serializers.ListField(child=serializers.CharField())
    classes = serializers.ListField(child=serializers.CharField())
    pairs = serializers.IntegerField()
    test = serializers.CharField()
    correction = serializers.CharField()


class SourceSerializer(serializers.Serializer):
    name = serializers.CharField()
    sha256 = serializers.CharField()


class RunRecordSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    system = serializers.CharField()
    configuration = serializers.CharField(allow_blank=True)
    ingest = serializers.IntegerField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField(), help_text="as imported")
    produced_by = serializers.CharField(help_text="system_authors (independent of the key's authors), key_authors or unstated")
    source = SourceSerializer()
    imported_by = serializers.CharField(allow_null=True)
    imported_at = serializers.DateTimeField()
    key = serializers.CharField(help_text="the key version the run was imported against")


class IngestCountSerializer(serializers.Serializer):
    per_item = serializers.IntegerField()
    score_level = serializers.IntegerField()


class MultiIngestBootstrapSerializer(serializers.Serializer):
    replicates = serializers.IntegerField()
    seed = serializers.IntegerField()
    kind = serializers.CharField()


class MultiIngestMetricSerializer(serializers.Serializer):
    points = serializers.ListField(child=serializers.FloatField())
    mean = serializers.FloatField()
    range = _interval()
    hierarchical = _interval(required=False)


class ScoreLevelIngestSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    ingest = serializers.IntegerField()
    scores = serializers.DictField(child=serializers.FloatField(), help_text="the figures as the file gave them (CR, AS, HNS, Attr)")
    note = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField(child=serializers.CharField(), help_text="as imported")
    source = SourceSerializer()
    imported_by = serializers.CharField(allow_null=True)
    imported_at = serializers.DateTimeField()


class MultiIngestSerializer(serializers.Serializer):
    ingests = IngestCountSerializer()
    bootstrap = MultiIngestBootstrapSerializer()
    CR = MultiIngestMetricSerializer()
    AS = MultiIngestMetricSerializer()
    HNS = MultiIngestMetricSerializer()
    Attr = MultiIngestMetricSerializer()
    GCR = MultiIngestMetricSerializer()
    runs = serializers.ListField(child=serializers.CharField(), help_text="the per-item runs, whose points come first")
    score_level = ScoreLevelIngestSerializer(many=True, help_text="score-level-only ingests, points after the runs'")


class KeyCitationSerializer(serializers.Serializer):
    version = serializers.CharField()
    sha256 = serializers.CharField()


class ScoreReportSerializer(serializers.Serializer):
    key = KeyCitationSerializer(help_text="the key version every figure is scored against")
    runs = serializers.DictField(child=RunFiguresSerializer())
    mcnemar = McNemarTestSerializer(many=True)
    family = FamilySerializer()
    family_size = serializers.IntegerField()
    run_records = serializers.DictField(child=RunRecordSerializer())
    multi_ingest = serializers.DictField(child=MultiIngestSerializer(), help_text="per system run on several ingests")
    unscorable = serializers.DictField(child=serializers.CharField(), help_text="run name → why it cannot be scored")
    outside_key = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="run name → the items it predicted that this key does not hold (dropped by a derived version); scored on the key's items",
    )
