"""The typed shape of a key's Track C scores in the API (`chains.selectors.chain_run_reports` builds them; these
classes only declare them for the OpenAPI schema, and a test checks a real report against them)."""

from rest_framework import serializers

from protocols.twist_c import metrics
from scoring.serializers import SourceSerializer


def _interval(**kwargs):
    return serializers.ListField(child=serializers.FloatField(allow_null=True), min_length=2, max_length=2, **kwargs)


class ChainRateSerializer(serializers.Serializer):
    label = serializers.CharField()
    k = serializers.IntegerField(help_text="answers that hit the metric")
    n = serializers.IntegerField(help_text="probes the metric is over")
    rate = serializers.FloatField(allow_null=True, help_text="k / n (null when n = 0)")
    wilson = _interval(help_text="Wilson 95% interval")


class ChainDifferenceSerializer(serializers.Serializer):
    label = serializers.CharField()
    rate = serializers.FloatField(allow_null=True, help_text="stale-answer rate minus stale after resolution (null "
                                                             "without post-resolution answers)")
    newcombe = _interval(allow_null=True, help_text="Newcombe's 95% interval of the difference")


class ChainMetricsSerializer(serializers.Serializer):
    resolution_responsiveness = ChainDifferenceSerializer()

    def get_fields(self):
        fields = super().get_fields()
        for name in metrics.METRICS:
            fields[name] = ChainRateSerializer()
        return fields


class ChainDecoyClassSerializer(serializers.Serializer):
    not_applicable = serializers.BooleanField(required=False, help_text="the class applies to no item of the set")
    n = serializers.IntegerField(help_text="decoys of the class")
    rejected = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True)
    wilson = _interval(help_text="Wilson 95% interval")
    clears = serializers.BooleanField(help_text="at or above the admissibility bar (or not applicable)")


class ChainGoldAcceptanceSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="gold answers mixed into the set")
    accepted = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True)
    wilson = _interval(help_text="Wilson 95% interval")
    clears = serializers.BooleanField()


class ChainJudgeCalibrationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    seed = serializers.IntegerField()
    decoys = serializers.CharField(help_text="the decoy template version the judge was calibrated on")
    item_set = serializers.CharField()
    admissible = serializers.BooleanField()
    classes = serializers.DictField(child=ChainDecoyClassSerializer(), help_text="per decoy class")
    gold = ChainGoldAcceptanceSerializer(help_text="the gold answers' acceptance (a judge rejecting everything fails it)")


class ChainJudgeSerializer(serializers.Serializer):
    member = serializers.CharField()
    model = serializers.CharField()
    judge_prompt_version = serializers.CharField()
    calibration = ChainJudgeCalibrationSerializer()


class ChainRunReportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    system = serializers.CharField()
    source = SourceSerializer()  # the answers file, as a stored Track B run names its own
    imported_at = serializers.DateTimeField()
    key = serializers.CharField()
    items = serializers.IntegerField(help_text="the key's items")
    answered = serializers.IntegerField(help_text="items the run answered (the others count as 'other')")
    verdicts = serializers.DictField(child=serializers.ChoiceField(choices=metrics.ANSWER_VERDICTS),
                                     help_text="item id -> what the judge says the answer does")
    metrics = ChainMetricsSerializer()
    judge = ChainJudgeSerializer()


class ChainScoresSerializer(serializers.Serializer):
    key = serializers.CharField()
    sha256 = serializers.CharField()
    runs = ChainRunReportSerializer(many=True)
