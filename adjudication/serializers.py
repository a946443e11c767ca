"""Typed shapes of the adjudication API's responses: agreement figures, queue entries and decisions.

The agreement is the dict `adjudication.agreement.campaign_agreement` builds (the page, the API and
`manage.py agreement --json` show the same); these serializers declare it field by field so that the
OpenAPI schema has no object of unknown shape, and the API renders through them so that the schema and
the body cannot drift apart. Figures that are undefined (kappa with no variation, an empty set) are null."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

import protocols
from adjudication.models import Action

# Which kappa a figure is: Cohen's (two annotators) or Fleiss' (more: no one pair rated every item).
STATISTICS = ["cohen", "fleiss"]


def _number(**kwargs):
    return serializers.FloatField(allow_null=True, **kwargs)


def _interval(**kwargs):
    return serializers.ListField(child=serializers.FloatField(allow_null=True), allow_null=True,
                                 min_length=2, max_length=2, **kwargs)


def _counts(**kwargs):
    return serializers.DictField(child=serializers.IntegerField(), **kwargs)


class CategoryAgreementSerializer(serializers.Serializer):
    both = serializers.IntegerField()
    either = serializers.IntegerField()
    rater_a = serializers.IntegerField()
    rater_b = serializers.IntegerField()
    specific = _number(help_text="specific agreement 2·n_kk / (n_k. + n_.k)")


class ConfusionSerializer(serializers.Serializer):
    categories = serializers.ListField(child=serializers.CharField())
    counts = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()),
                                   help_text="rows: first rater, columns: second rater, in `categories` order")


class KappaBriefSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="items both raters labelled")
    left_out = serializers.IntegerField(help_text="items missing a label")
    agree = serializers.IntegerField()
    observed = _number()
    kappa = _number(help_text="Cohen's kappa")
    ci95 = _interval(help_text="analytic 95% interval")
    ci95_bootstrap = _interval(help_text="bootstrap 95% interval (seeded by the campaign)")


class KappaFullSerializer(KappaBriefSerializer):
    se = _number()
    pabak = _number()
    ac1 = _number(help_text="Gwet's AC1")
    per_category = serializers.DictField(child=CategoryAgreementSerializer())
    confusion = ConfusionSerializer()


class ManyRaterMixin(serializers.Serializer):
    krippendorff_alpha = _number()
    fleiss_kappa = _number()
    fleiss_n = serializers.IntegerField()
    statistic = serializers.ChoiceField(
        choices=STATISTICS, required=False,
        help_text="present with more than two annotators: `kappa` is Fleiss' kappa over every item's raters "
                  "(`ci95_bootstrap` its interval, `kappa_n` its items; no analytic interval), since no one "
                  "pair of people rated every item; Cohen's kappa is then reported per pair under `raters`",
    )
    kappa_n = serializers.IntegerField(required=False)


class FleissSerializer(serializers.Serializer):
    kappa = _number(help_text="Fleiss' kappa over the items every assigned annotator answered")
    n = serializers.IntegerField()
    left_out = serializers.IntegerField(help_text="items with a missing answer")
    raters_per_item = serializers.IntegerField(allow_null=True)
    observed = _number(help_text="mean per-item agreement P-bar")
    ci95_bootstrap = _interval(help_text="percentile bootstrap over items, seeded by the campaign")


class AlphaSerializer(serializers.Serializer):
    alpha = _number(help_text="Krippendorff's alpha, nominal, every annotator, missing answers allowed")
    n = serializers.IntegerField(help_text="items with two or more answers")
    values = serializers.IntegerField(help_text="pairable answers")


class RaterPairSerializer(KappaBriefSerializer):
    raters = serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2)


class RaterGoldSerializer(serializers.Serializer):
    rater = serializers.CharField()
    n = serializers.IntegerField(help_text="items with the annotator's answer and an adjudicated gold")
    agree = serializers.IntegerField()
    observed = _number(help_text="share agreeing with gold")
    kappa = _number(help_text="Cohen's kappa of the annotator against gold")
    ci95 = _interval()
    ci95_bootstrap = _interval()


class RaterGoldSectionSerializer(serializers.Serializer):
    complete = serializers.BooleanField(help_text="every queued item is decided (else no gold figures)")
    n = serializers.IntegerField()
    by_annotator = RaterGoldSerializer(many=True)


class RatersSerializer(serializers.Serializer):
    """Agreement per annotator and per pair (any number of annotators)."""

    annotators = serializers.IntegerField()
    statistic = serializers.ChoiceField(choices=STATISTICS, help_text="what the headline kappa is")
    fleiss = FleissSerializer()
    krippendorff_alpha = AlphaSerializer()
    pairs = RaterPairSerializer(many=True, help_text="Cohen's kappa per annotator pair on the items they share")
    gold = RaterGoldSectionSerializer()


class QueueSummarySerializer(serializers.Serializer):
    n = serializers.IntegerField()
    by_reason = _counts()
    by_suggestion = _counts()
    decided = serializers.IntegerField()
    undecided = serializers.IntegerField(help_text="queued for a human reason and not decided")
    triage_only_undecided = serializers.IntegerField(help_text="council-only flags without a decision")
    by_action = _counts()


# --- the "gold_verdict" figure set: the primary answer against the item's gold (TWIST Track B) -----------


class GoldTypeAgreementSerializer(serializers.Serializer):
    agree = serializers.IntegerField()
    n = serializers.IntegerField()
    items = serializers.IntegerField()
    both_match_gold = serializers.IntegerField()
    kappa = _number()
    ci95 = _interval()
    ci95_bootstrap = _interval()


class GoldVerdictQ1Serializer(ManyRaterMixin, KappaFullSerializer):
    meaning = serializers.CharField()
    by_gold_type = serializers.DictField(child=GoldTypeAgreementSerializer())


class EvidenceAgreementSerializer(serializers.Serializer):
    agree = serializers.IntegerField()
    n = serializers.IntegerField()
    kappa = _number()
    both_no = serializers.IntegerField()


class BatchSerializer(serializers.Serializer):
    both_not_self_contained = serializers.IntegerField()
    items = serializers.IntegerField()
    contradicting_only = serializers.BooleanField()


class NotSelfContainedSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    from_contradicting_only_batches = serializers.IntegerField()
    by_batch = serializers.DictField(child=BatchSerializer())


class StratumSerializer(KappaBriefSerializer):
    items = serializers.IntegerField()


class StrataSerializer(serializers.Serializer):
    history = serializers.DictField(child=StratumSerializer())
    family = serializers.DictField(child=StratumSerializer())


class DroppedSerializer(serializers.Serializer):
    n = serializers.IntegerField(allow_null=True)
    by_type = _counts()


class GoldAgreementDetailSerializer(serializers.Serializer):
    agree = serializers.IntegerField()
    n = serializers.IntegerField()
    rate = _number()


class RetainedSerializer(serializers.Serializer):
    """The kept set after adjudication; its figures are null until every queued item is decided."""

    complete = serializers.BooleanField()
    undecided = serializers.IntegerField()
    n = serializers.IntegerField(allow_null=True)
    by_type = _counts()
    by_how = _counts(required=False)
    dropped = DroppedSerializer()
    relabelled = serializers.IntegerField(allow_null=True)
    kappa = _number()
    kappa_n = serializers.IntegerField(required=False)
    ci95 = _interval()
    ci95_bootstrap = _interval()
    agree = serializers.IntegerField(allow_null=True)
    confusion = ConfusionSerializer(required=False)
    gold_agreement = _counts()
    gold_agreement_detail = serializers.DictField(child=GoldAgreementDetailSerializer())
    statistic = serializers.ChoiceField(choices=STATISTICS, required=False,
                                        help_text="more than two annotators: kappa is Fleiss' kappa")
    bar = serializers.FloatField(help_text="the pre-registered kappa bar")
    passes = serializers.BooleanField(allow_null=True)
    meaning = serializers.CharField()


def _protocols_computing(figures: str) -> list[str]:
    """The registered protocols whose agreement is this figure set (`ProtocolSpec.agreement_figures`)."""
    return [spec.name for spec in protocols.specs() if spec.agreement_figures == figures]


class GoldVerdictAgreementSerializer(serializers.Serializer):
    campaign = serializers.SlugField()
    protocol = serializers.ChoiceField(choices=_protocols_computing("gold_verdict"))
    annotators = serializers.ListField(child=serializers.CharField())
    n_items = serializers.IntegerField()
    q1 = GoldVerdictQ1Serializer()
    q2 = EvidenceAgreementSerializer()
    q2quote = EvidenceAgreementSerializer()
    not_self_contained = NotSelfContainedSerializer()
    strata = StrataSerializer()
    queue = QueueSummarySerializer()
    retained = RetainedSerializer()
    raters = RatersSerializer(required=False)


# --- the "labels" figure set: one label per annotator, its binary collapse, judges (Lapse, judged answers) --


class LabelBinarySerializer(KappaFullSerializer):
    statistic = serializers.ChoiceField(choices=STATISTICS, required=False)
    kappa_n = serializers.IntegerField(required=False)
    excluded = serializers.IntegerField()
    missing = serializers.IntegerField()
    mapping = serializers.DictField(child=serializers.CharField(), help_text="label → binary class")


class LabelFiveWaySerializer(ManyRaterMixin, KappaFullSerializer):
    pass


class LabelJudgeSerializer(serializers.Serializer):
    judge = serializers.CharField()
    items = serializers.IntegerField()
    five_way = KappaFullSerializer()
    binary = LabelBinarySerializer()


class LabelGoldSerializer(serializers.Serializer):
    complete = serializers.BooleanField()
    undecided = serializers.IntegerField()
    n = serializers.IntegerField()
    by_label = _counts()
    by_how = _counts()
    rule = serializers.CharField()


class LabelAgreementSerializer(serializers.Serializer):
    campaign = serializers.SlugField()
    protocol = serializers.ChoiceField(choices=_protocols_computing("labels"))
    annotators = serializers.ListField(child=serializers.CharField())
    n_items = serializers.IntegerField()
    five_way = LabelFiveWaySerializer()
    binary = LabelBinarySerializer()
    queue = QueueSummarySerializer()
    gold = LabelGoldSerializer()
    detectors_sealed = serializers.BooleanField(
        help_text="judge labels sealed until every disagreement is decided: judge_gold is null, judge_gold_by_judge empty"
    )
    judge_gold = LabelJudgeSerializer(allow_null=True)
    judge_gold_by_judge = serializers.DictField(child=LabelJudgeSerializer())
    raters = RatersSerializer(required=False)


# The agreement figures differ per figure set (adjudication.agreement.FIGURES), which each protocol names in
# its spec; the `protocol` field of the body says which protocol, and so which set. A new protocol that
# computes an existing set is served by its serializer without an edit here.
FIGURE_SERIALIZERS = {"gold_verdict": GoldVerdictAgreementSerializer, "labels": LabelAgreementSerializer}
AGREEMENT_SERIALIZERS = {spec.name: FIGURE_SERIALIZERS[spec.agreement_figures] for spec in protocols.specs()}

AGREEMENT_SCHEMA = PolymorphicProxySerializer(
    component_name="Agreement",
    serializers=AGREEMENT_SERIALIZERS,
    resource_type_field_name="protocol",
)


def agreement_data(agreement: dict) -> dict:
    """The figures rendered by the serializer of the figure set their protocol computes."""
    return FIGURE_SERIALIZERS[protocols.get(agreement["protocol"]).agreement_figures](agreement).data


@extend_schema_field(AGREEMENT_SCHEMA)
class AgreementField(serializers.Field):
    """The agreement figures inside another body (a key's manifest): rendered and checked by the serializer
    its `protocol` names."""

    def to_representation(self, value):
        return agreement_data(value)

    def to_internal_value(self, data):
        serializer = AGREEMENT_SERIALIZERS.get(data.get("protocol")) if isinstance(data, dict) else None
        if serializer is None:
            raise serializers.ValidationError(f"protocol must be one of {', '.join(AGREEMENT_SERIALIZERS)}")
        checked = serializer(data=data)
        checked.is_valid(raise_exception=True)
        return checked.validated_data


# --- queue and decisions ----------------------------------------------------------------------------------


class DecisionInSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=Action.values)
    new_gold = serializers.CharField(required=False, allow_blank=True, default="",
                                     help_text="relabel: the new gold value")
    note = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                 help_text="required for drop and relabel")


class DecisionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=Action.values)
    new_gold = serializers.CharField(allow_blank=True)
    note = serializers.CharField(allow_blank=True, trim_whitespace=False)
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField()
    revision = serializers.IntegerField()


class QueueEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField(source="item.id")
    item = serializers.CharField(source="item.external_id")
    reasons = serializers.ListField(child=serializers.CharField())
    suggestion = serializers.ChoiceField(choices=["drop", "discuss"])
    decision = DecisionSerializer(allow_null=True)


class QueueSerializer(serializers.Serializer):
    campaign = serializers.SlugField(source="campaign.slug")
    frozen = serializers.BooleanField(help_text="a key is frozen from this campaign: decisions are read-only")
    queue = QueueEntrySerializer(many=True)


class DecisionResultSerializer(serializers.Serializer):
    item = serializers.CharField(source="item.external_id")
    changed = serializers.BooleanField(help_text="false when the same decision was already recorded")
    decision = DecisionSerializer()
