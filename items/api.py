"""The items API: list item sets and import files into them — the same upload service and the same role
rule (staff with the author or admin role) as the admin's "Import items…" page."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

import protocols
from goldkey.api_schema import ImportErrorSerializer, errors
from goldkey.lib.error_records import error_records
from goldkey.lib.jsonio import ImportFailed, column_length
from items import selectors
from items.admin import can_manage_items
from items.models import LICENSE_MAX, ItemSet
from items.upload_services import CORPUS, UPLOAD_KINDS, Upload, upload_import


class CanManageItems(BasePermission):
    message = "Importing items needs the author or admin role (staff)."

    def has_permission(self, request, view) -> bool:
        return can_manage_items(request.user)


class ItemSetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    schema = serializers.CharField(help_text="the released file schema the items came in, e.g. twist-v1")
    license = serializers.CharField(help_text="the licence recorded at import, e.g. cc-by-4.0")
    benchmark = serializers.CharField(source="track.benchmark.name")
    track = serializers.CharField(source="track.name")
    items = serializers.IntegerField(source="n_items")
    rejects = serializers.IntegerField(source="n_rejects")
    created_at = serializers.DateTimeField()


class ImportInSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=UPLOAD_KINDS, help_text="; ".join([
        f"{CORPUS}: a zip of 26.json-style files, one such file or locomo10.json",
        *(f"{spec.item_kind}: {spec.upload_label}" for spec in protocols.specs()),
    ]))
    file = serializers.FileField()
    item_set = serializers.CharField(required=False, allow_blank=True, default="", max_length=column_length(ItemSet, "name"),
                                     help_text="the item set to import into (required for every kind but the corpus)")
    rejects = serializers.FileField(required=False, help_text="generation rejects JSONL, kept with the set (kinds: " + ", ".join(
        spec.item_kind for spec in protocols.specs() if spec.accepts_rejects) + ")")
    license = serializers.CharField(required=False, allow_blank=True, default="", max_length=LICENSE_MAX,
                                    help_text="the licence id the file was released under, e.g. cc-by-4.0 (blank: "
                                    "LoCoMo's own for the corpus, the benchmark's for items)")
    dry_run = serializers.BooleanField(required=False, default=False, help_text="validate and report, write nothing")


class GateRejectSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    id = serializers.CharField()
    gate = serializers.CharField()
    verdict = serializers.CharField()


class ImportReportSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    rejects_created = serializers.IntegerField()
    rejects_unchanged = serializers.IntegerField()
    gate_rejects = GateRejectSerializer(many=True, help_text="well-formed candidates the import rejected (kept as rejects)")
    item_set = serializers.CharField(help_text="empty for a LoCoMo corpus import")
    dry_run = serializers.BooleanField()


class ItemSetListApi(APIView):
    permission_classes = [IsAuthenticated, CanManageItems]

    @extend_schema(responses={200: ItemSetSerializer(many=True), **errors(403)}, summary="Every item set with its counts")
    def get(self, request):
        return Response(ItemSetSerializer(selectors.item_sets_with_counts(), many=True).data)


class ItemImportApi(APIView):
    permission_classes = [IsAuthenticated, CanManageItems]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": ImportInSerializer},
        responses={200: ImportReportSerializer, 201: ImportReportSerializer, 400: ImportErrorSerializer, **errors(403)},
        summary="Import an uploaded file (all or nothing: a refused file writes nothing and lists every error)",
    )
    def post(self, request):
        body = ImportInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        rejects = data.get("rejects")
        try:
            report = upload_import(
                kind=data["kind"],
                upload=Upload(data["file"].name, data["file"].chunks()),
                item_set_name=data["item_set"],
                rejects=Upload(rejects.name, rejects.chunks()) if rejects else None,
                license=data["license"],
                dry_run=data["dry_run"],
            )
        except ImportFailed as exc:
            # The same problems the commands print under --json: one record per file/line/field.
            return Response({"detail": exc.message, "errors": error_records(exc.errors)}, status=status.HTTP_400_BAD_REQUEST)
        wrote = report.created or report.rejects_created
        return Response(report.as_dict(), status=status.HTTP_201_CREATED if wrote and not report.dry_run else status.HTTP_200_OK)
