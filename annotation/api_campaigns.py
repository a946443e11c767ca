"""The campaign API for authors: list, create, follow a campaign's progress and close it — the same
services, selectors and access rule as `manage.py campaign_create` and the overview page."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access, selectors
from annotation.models import Campaign, Enrollment
from annotation.permissions import IsAuthor
from annotation.services import campaign_close, campaign_create_from_names
from goldkey.api_schema import errors
from goldkey.lib.jsonio import column_length


class CampaignSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    protocol = serializers.CharField()
    item_set = serializers.CharField(source="item_set.name")
    per_item = serializers.IntegerField()
    seed = serializers.IntegerField()
    crisis_block = serializers.BooleanField()
    status = serializers.CharField(help_text="annotating → closed (by an author) → frozen (a key was frozen from it)")
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class CampaignCreateSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=column_length(Campaign, "slug"))
    item_set = serializers.CharField(help_text="name of the item set to annotate (every item goes in)")
    annotators = serializers.ListField(child=serializers.CharField(), min_length=1, help_text="usernames")
    per_item = serializers.IntegerField(min_value=1, default=2, help_text="distinct annotators per item")
    seed = serializers.IntegerField(required=False, allow_null=True, default=None,
                                    help_text="order seed (default: random, recorded)")
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=column_length(Campaign, "name"))
    crisis_block = serializers.BooleanField(required=False, default=False,
                                            help_text="present crisis items as a separate declinable block")
    pseudonyms = serializers.ListField(child=serializers.CharField(max_length=column_length(Enrollment, "pseudonym")), required=False, allow_null=True, default=None,
                                       help_text="names in the released answer files (default A, B, …)")


class EnrollmentSerializer(serializers.Serializer):
    pseudonym = serializers.CharField()
    username = serializers.CharField(source="annotator.username")
    assigned = serializers.IntegerField(source="assigned_count")


class CampaignCreatedSerializer(CampaignSerializer):
    annotators = EnrollmentSerializer(many=True, source="enrollments.all")


class PhaseProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()


class AnnotatorProgressSerializer(serializers.Serializer):
    pseudonym = serializers.CharField(source="enrollment.pseudonym")
    username = serializers.CharField(source="enrollment.annotator.username")
    phase = serializers.IntegerField(help_text="the phase the annotator is in (1, or 2 once Phase 1 is complete)")
    phase1 = PhaseProgressSerializer()
    phase2 = PhaseProgressSerializer(allow_null=True, help_text="null for a protocol without a second phase")
    median_ms = serializers.FloatField(allow_null=True, help_text="median time per answered item")
    left_items = serializers.IntegerField(help_text="answers still to give, both phases")
    eta_ms = serializers.FloatField(allow_null=True)
    skipped = serializers.IntegerField()
    declined = serializers.IntegerField(help_text="crisis items declined")
    phase1_completed_at = serializers.DateTimeField(source="enrollment.phase1_completed_at", allow_null=True)
    submitted_at = serializers.DateTimeField(source="enrollment.submitted_at", allow_null=True)


class CampaignProgressSerializer(serializers.Serializer):
    campaign = serializers.SlugField()
    complete = serializers.BooleanField(help_text="every annotator has submitted")
    annotators = AnnotatorProgressSerializer(many=True)


class CampaignListApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(responses={200: CampaignSerializer(many=True), **errors(403)}, summary="Every campaign, newest first")
    def get(self, request):
        return Response(CampaignSerializer(selectors.campaigns_for_author(request.user), many=True).data)

    @extend_schema(
        request=CampaignCreateSerializer,
        responses={201: CampaignCreatedSerializer, **errors(400, 403)},
        summary="Create a campaign: every item of the item set to `per_item` distinct annotators, each in a seeded order",
    )
    def post(self, request):
        body = CampaignCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        campaign = campaign_create_from_names(
            slug=data["slug"], item_set_name=data["item_set"], usernames=data["annotators"], per_item=data["per_item"],
            seed=data["seed"], name=data["name"], crisis_block=data["crisis_block"], pseudonyms=data["pseudonyms"],
            created_by=request.user,
        )
        return Response(CampaignCreatedSerializer(campaign).data, status=status.HTTP_201_CREATED)


class CampaignProgressApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(
        responses={200: CampaignProgressSerializer, **errors(403, 404)},
        summary="Per-annotator progress and pace (never answers: those belong to adjudication)",
    )
    def get(self, request, slug: str):
        rows = selectors.campaign_overview(access.get_campaign(slug))
        return Response(CampaignProgressSerializer({
            "campaign": slug,
            "complete": bool(rows) and all(r["enrollment"].submitted_at for r in rows),
            "annotators": rows,
        }).data)


class CampaignCloseSerializer(serializers.Serializer):
    end_open = serializers.BooleanField(
        required=False, default=False,
        help_text="end the enrollments not yet submitted (recorded, and disclosed by the release); "
                  "without it, closing waits for every annotator to submit",
    )


class CampaignCloseApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(
        request=CampaignCloseSerializer,
        responses={200: CampaignSerializer, **errors(400, 403, 404)},
        summary="Close the campaign to annotation: its disagreements can then be decided",
    )
    def post(self, request, slug: str):
        body = CampaignCloseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        campaign = campaign_close(campaign=access.get_campaign(slug), user=request.user,
                                  end_open=body.validated_data["end_open"])
        return Response(CampaignSerializer(campaign).data)
