"""The council API: members, and runs (start, progress, cancel) — the same services, selectors and access
rule as the council pages (authors; a run's campaign must be open to the user's unblinded view)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import get_unblinded_campaign
from annotation.permissions import IsAuthor
from council import selectors, services
from council.access import get_run_for_user
from council.models import CouncilMember
from goldkey.api_schema import errors
from goldkey.lib.jsonio import column_length


class MemberSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=column_length(CouncilMember, "name"))
    base_url = serializers.URLField(required=False, allow_blank=True, default="",
                                    help_text="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8011/v1")
    model = serializers.CharField(max_length=column_length(CouncilMember, "model"), required=False, allow_blank=True, default="")
    api_key_env = serializers.CharField(max_length=column_length(CouncilMember, "api_key_env"), required=False, allow_blank=True, default="",
                                        help_text="the NAME of the environment variable holding the key (never the key)")
    is_generator = serializers.BooleanField(required=False, default=False,
                                            help_text="the member also generated the items (circularity)")
    temperature = serializers.FloatField(required=False, default=0.0)
    max_tokens = serializers.IntegerField(min_value=1, required=False, default=800)
    requests_per_minute = serializers.IntegerField(min_value=0, required=False, default=60, help_text="0: unpaced")
    concurrency = serializers.IntegerField(min_value=1, max_value=32767, required=False, default=4)
    timeout_seconds = serializers.FloatField(min_value=0.1, required=False, default=60.0)


class RunStartSerializer(serializers.Serializer):
    campaign = serializers.SlugField()
    members = serializers.ListField(child=serializers.CharField(), min_length=1, help_text="member names")


class MemberProgressSerializer(serializers.Serializer):
    member = serializers.CharField()
    is_generator = serializers.BooleanField()
    done = serializers.IntegerField()
    errors = serializers.IntegerField()
    remaining = serializers.IntegerField()
    total = serializers.IntegerField()


class RunProgressSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "finished", "cancelled"])
    cancelled = serializers.BooleanField()
    prompt_version = serializers.CharField()
    members = MemberProgressSerializer(many=True)
    finished = serializers.BooleanField(help_text="every member has a vote or an error row for every item")


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.CharField(source="campaign.slug")
    status = serializers.CharField()
    prompt_version = serializers.CharField(source="prompt_version.name")
    members = serializers.SerializerMethodField(help_text="member names")
    total_items = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_members(self, run) -> list[str]:
        return [m.name for m in run.members.all()]  # prefetched by runs_for_campaign


class MemberListApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(responses={200: MemberSerializer(many=True), **errors(403)}, summary="Every council member")
    def get(self, request):
        return Response(MemberSerializer(selectors.members_all(), many=True).data)

    @extend_schema(
        request=MemberSerializer,
        responses={201: MemberSerializer, 200: MemberSerializer, **errors(400, 403)},
        summary="Add a council member, or update the one of that name (200)",
    )
    def post(self, request):
        body = MemberSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        member, created = services.council_member_add(**body.validated_data)
        return Response(MemberSerializer(member).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RunListApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(
        parameters=[OpenApiParameter("campaign", str, required=True, description="campaign slug")],
        responses={200: RunSerializer(many=True), **errors(403, 404)},
        summary="The council runs of a campaign, newest first",
    )
    def get(self, request):
        campaign = get_unblinded_campaign(request.user, request.query_params.get("campaign", ""))
        return Response(RunSerializer(selectors.runs_for_campaign(campaign).select_related("campaign"), many=True).data)

    @extend_schema(
        request=RunStartSerializer,
        responses={201: RunProgressSerializer, **errors(400, 403, 404)},
        summary="Start a run: every member answers every item of the campaign (one task per member and item)",
    )
    def post(self, request):
        body = RunStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        campaign = get_unblinded_campaign(request.user, body.validated_data["campaign"])
        run = services.council_run_start(
            campaign=campaign, members=services.members_by_names(body.validated_data["members"]), created_by=request.user
        )
        return Response(RunProgressSerializer(selectors.run_progress(run)).data, status=status.HTTP_201_CREATED)


class RunProgressApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(responses={200: RunProgressSerializer, **errors(403, 404)}, summary="A run's progress per member")
    def get(self, request, run_id: int):
        return Response(RunProgressSerializer(selectors.run_progress(get_run_for_user(request.user, run_id))).data)


class RunCancelApi(APIView):
    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(
        request=None,
        responses={200: RunProgressSerializer, **errors(403, 404)},
        summary="Cancel a run: tasks not yet started stop; votes already recorded are kept",
    )
    def post(self, request, run_id: int):
        run = services.council_run_cancel(run=get_run_for_user(request.user, run_id))
        return Response(RunProgressSerializer(selectors.run_progress(run)).data)
