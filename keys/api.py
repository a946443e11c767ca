"""Gold key API: public reads of published keys; errata filed with a session or token; authors decide.

There is deliberately no write endpoint for keys or entries: PUT/PATCH/DELETE answer 405, and the
database refuses the change anyway."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from goldkey.api_schema import errors
from keys import selectors as key_selectors
from keys import services as key_services
from keys.canonical import entry_record
from keys.models import Erratum, GoldKey
from keys.serializers import KeyDetailSerializer


class GoldKeySerializer(serializers.ModelSerializer):
    benchmark = serializers.CharField(source="benchmark.name")
    parent = serializers.CharField(source="parent.version", default=None)
    entries = serializers.IntegerField(source="n_entries", read_only=True)
    # Read with the key (keys.selectors): null for a draft and for a frozen key still embargoed.
    published_at = serializers.DateTimeField(read_only=True, default=None)

    class Meta:
        model = GoldKey
        fields = ["version", "benchmark", "kind", "status", "parent", "sha256", "frozen_at", "published_at", "entries", "notes"]


class RejudgedSerializer(serializers.Serializer):
    gold = serializers.CharField(help_text="the label an author confirmed against the corrected reference")
    suggested = serializers.CharField(help_text="the judge's verdict shown beside it ('' : none asked)")
    judge = serializers.CharField(help_text="the council member that suggested it ('' : none)")


class ErratumSerializer(serializers.ModelSerializer):
    key = serializers.CharField(source="key.version", read_only=True)
    item = serializers.CharField(source="item_external_id")
    applied_in = serializers.CharField(source="applied_in.version", default=None, read_only=True)
    rejudged = serializers.DictField(
        child=RejudgedSerializer(), read_only=True,
        help_text="fix-reference: each re-judged entry (by item id) once an author accepted the erratum",
    )

    class Meta:
        model = Erratum
        fields = ["id", "key", "item", "kind", "value", "description", "status", "filed_at", "decided_at",
                  "decision_note", "applied_in", "rejudged"]
        read_only_fields = ["id", "status", "filed_at", "decided_at", "decision_note"]


class ErratumDecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["accept", "reject"])
    note = serializers.CharField()


class ErratumRejudgeSerializer(serializers.Serializer):
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                   help_text="item id -> its gold against the corrected reference, for every answer")
    note = serializers.CharField()
    suggestions = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False,
                                        help_text="item id -> the judge's verdict shown beside it")
    judge = serializers.CharField(required=False, allow_blank=True, default="")


class KeyListApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: GoldKeySerializer(many=True)})
    def get(self, request):
        return Response(GoldKeySerializer(key_selectors.keys_for_user(request.user), many=True).data)


class KeyDetailApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: KeyDetailSerializer, **errors(404)})
    def get(self, request, version: str):
        key = key_selectors.get_key_for_user(version, request.user)
        entries = key_selectors.key_entries(key)
        key.n_entries = len(entries)
        data = GoldKeySerializer(key).data
        data["manifest"] = key.manifest
        data["changelog"] = key.changelog
        data["changes_from_parent"] = key_selectors.key_parent_diff(key) if key.parent_id else None
        data["records"] = [entry_record(key.kind, key.version, e) for e in entries]
        return Response(data)


class KeyErrataApi(APIView):
    def get_permissions(self):
        return [AllowAny()] if self.request.method == "GET" else [IsAuthenticated()]

    @extend_schema(responses={200: ErratumSerializer(many=True), **errors(404)})
    def get(self, request, version: str):
        key = key_selectors.get_key_for_user(version, request.user)
        return Response(ErratumSerializer(key_selectors.errata_for_key(key), many=True).data)

    @extend_schema(request=ErratumSerializer, responses={201: ErratumSerializer, **errors(400, 403, 404)})
    def post(self, request, version: str):
        key = key_selectors.get_key_for_user(version, request.user)
        payload = ErratumSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        erratum = key_services.erratum_file(
            key=key,
            item_external_id=payload.validated_data["item_external_id"],
            kind=payload.validated_data["kind"],
            value=payload.validated_data.get("value", ""),
            description=payload.validated_data["description"],
            user=request.user,
        )
        return Response(ErratumSerializer(erratum).data, status=status.HTTP_201_CREATED)


class ErratumDecisionApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=ErratumDecisionSerializer, responses={200: ErratumSerializer, **errors(400, 403, 404)})
    def post(self, request, pk: int):
        payload = ErratumDecisionSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        erratum = key_services.erratum_decide(
            erratum=key_selectors.get_erratum_for_user(pk, request.user),
            accept=payload.validated_data["decision"] == "accept",
            note=payload.validated_data["note"],
            user=request.user,
        )
        return Response(ErratumSerializer(erratum).data)


class ErratumRejudgeApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=ErratumRejudgeSerializer, responses={200: ErratumSerializer, **errors(400, 403, 404)},
                   summary="Accept a fix-reference erratum: every answer to its question labelled against the "
                           "corrected reference (authors)")
    def post(self, request, pk: int):
        payload = ErratumRejudgeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        erratum = key_services.erratum_rejudge(
            erratum=key_selectors.get_erratum_for_user(pk, request.user), user=request.user,
            labels=payload.validated_data["labels"], note=payload.validated_data["note"],
            suggestions=payload.validated_data.get("suggestions"), judge=payload.validated_data["judge"],
        )
        return Response(ErratumSerializer(erratum).data)
