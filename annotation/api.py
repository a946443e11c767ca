"""The annotation API: my assignments, the blind item view and the answer upsert — the same access
helpers, selectors and services as the HTML pages."""

from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

import protocols
from annotation import access, selectors
from annotation.api_campaigns import PhaseProgressSerializer
from annotation.models import AnswerRevision, Assignment
from annotation.permissions import IsAnnotator
from annotation.services import answer_save, answer_undo, assignment_skip
from goldkey.api_schema import errors, json_schema_field
from goldkey.lib.jsonio import column_length


class AssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    campaign = serializers.CharField(source="enrollment.campaign.slug")
    position = serializers.SerializerMethodField()
    crisis = serializers.BooleanField()
    phase1_done = serializers.SerializerMethodField()
    phase2_done = serializers.SerializerMethodField()

    def get_position(self, obj) -> int:
        return obj.position + 1

    def _answer(self, obj):
        return getattr(obj, "answer", None)

    def get_phase1_done(self, obj) -> bool:
        answer = self._answer(obj)
        return bool(answer and answer.phase1_done)

    def get_phase2_done(self, obj) -> bool:
        answer = self._answer(obj)
        return bool(answer and answer.phase2_done)


def _blind_fields(spec) -> dict:
    """A content field as the protocol's schema declares it (type, limits, description); a shared column
    (the family) as text."""
    content = spec.content_field_schemas()
    return {name: json_schema_field(content[name]) if name in content else serializers.CharField()
            for name in spec.blind_fields}


def _blind_item_serializer(spec) -> type[serializers.Serializer]:
    """The blind item of one protocol: its blind-field whitelist, nothing else. Its fields are read from
    the spec when the serializer is used, so the schema follows the protocol's content schema."""

    def get_fields(self) -> dict:
        return _blind_fields(spec)

    return type(f"Blind{spec.class_prefix}Item", (serializers.Serializer,), {"get_fields": get_fields})


# The blind item of each protocol (the dated excerpts come beside it, in ItemViewSerializer).
BLIND_ITEM_SERIALIZERS = {spec.name: _blind_item_serializer(spec) for spec in protocols.specs()}


class ExcerptSerializer(serializers.Serializer):
    dia_id = serializers.CharField()
    date = serializers.CharField()
    speaker = serializers.CharField()
    text = serializers.CharField()


class RecipientTurnSerializer(serializers.Serializer):
    dia_id = serializers.CharField()
    date = serializers.CharField()
    text = serializers.CharField()


class Phase2Serializer(serializers.Serializer):
    """Present only once Phase 2 is open (the question set depends on the gold type)."""

    questions = serializers.ListField(child=serializers.CharField())
    quote = serializers.CharField(required=False)
    recipient_turns = RecipientTurnSerializer(many=True, required=False)


class ItemViewSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    campaign = serializers.CharField()
    position = serializers.IntegerField()
    total = serializers.IntegerField()
    phase = serializers.IntegerField()
    item = PolymorphicProxySerializer(
        component_name="BlindItem",
        serializers=list(BLIND_ITEM_SERIALIZERS.values()),
        resource_type_field_name=None,
        help_text="the blind fields of the item's protocol, nothing else",
    )
    excerpts = ExcerptSerializer(many=True, required=False)
    answer = serializers.DictField(child=serializers.CharField(allow_blank=True))
    revision = serializers.IntegerField(help_text="the answer's revision: send it back as `revision` with a save")
    phase2 = Phase2Serializer(required=False)


def answer_revision(assignment: Assignment) -> int:
    answer = getattr(assignment, "answer", None)
    return answer.revision if answer else 0


def item_view_data(assignment: Assignment) -> dict:
    page = selectors.item_page(assignment)
    data = {
        "assignment": assignment.pk,
        "campaign": page["campaign"].slug,
        "position": page["position"],
        "total": page["total"],
        "phase": page["phase"],
        "item": page["item"],
        "answer": page["values"],
        "revision": answer_revision(assignment),
    }
    if "excerpts" in page:
        data["excerpts"] = page["excerpts"]
    if "phase2_keys" in page:
        phase2 = {"questions": list(page["phase2_keys"])}
        if "quote" in page:
            phase2["quote"] = page["quote"]
        if "recipient_turns" in page:
            phase2["recipient_turns"] = page["recipient_turns"]
        data["phase2"] = phase2
    return data


class AnswerInSerializer(serializers.Serializer):
    values = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False, default=dict)
    time_on_item_ms = serializers.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False, default=0)
    revision = serializers.IntegerField(
        min_value=0, required=False, default=None, allow_null=True,
        help_text="the revision this change is based on: a change to a field that another writer changed "
                  "after it is refused (409)",
    )
    writer = serializers.CharField(max_length=column_length(AnswerRevision, "writer"), required=False, default="", allow_blank=True,
                                   help_text="an id of the page or client sending the change")
    seq = serializers.IntegerField(min_value=0, required=False, default=None, allow_null=True,
                                   help_text="the writer's running number of this request")


class AnswerOutSerializer(serializers.Serializer):
    values = serializers.DictField(child=serializers.CharField(allow_blank=True))
    revision = serializers.IntegerField()
    changed = serializers.BooleanField()
    phase1_done = serializers.BooleanField()
    phase2_done = serializers.BooleanField()
    phase1_ready = serializers.BooleanField(
        help_text="every item has its Phase 1 answer: Phase 1 can be finished from the review screen"
    )
    phase_ready = serializers.BooleanField(
        help_text="every item of the current phase is answered: the review screen can end the phase"
    )
    progress_percent = serializers.IntegerField(help_text="the current phase's progress")
    phase = serializers.IntegerField(help_text="the annotator's current phase (1 until Phase 1 is finished)")
    phases = serializers.DictField(
        child=PhaseProgressSerializer(),
        help_text="progress of each phase, by phase number: a page shows the phase it was drawn for",
    )


class AssignmentPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


class AnnotatorAPIView(APIView):
    """An endpoint an annotator uses: every refusal it answers with is an AnnotatorError (any other
    application error reaches the annotator as its status and a fixed text: api_exception_handler)."""

    annotator_facing = True
    permission_classes = [IsAuthenticated, IsAnnotator]


class MyAssignmentsView(AnnotatorAPIView):
    pagination_class = AssignmentPagination

    @extend_schema(
        parameters=[OpenApiParameter("campaign", str, description="campaign slug (default: all my campaigns)")],
        responses={200: AssignmentSerializer(many=True), **errors(403, 404)},
        summary="My assignments in a campaign, in my order (paginated: limit, offset)",
    )
    def get(self, request):
        slug = request.query_params.get("campaign")
        if slug:
            qs = Assignment.objects.filter(enrollment=access.get_enrollment_for_user(request.user, slug))
        else:
            qs = Assignment.objects.filter(enrollment__annotator=request.user)
        qs = qs.select_related("enrollment__campaign", "item", "answer").order_by("enrollment_id", "position")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(AssignmentSerializer(page, many=True).data)


class AssignmentItemView(AnnotatorAPIView):
    @extend_schema(responses={200: ItemViewSerializer, **errors(403, 404)}, summary="The blind item view of one of my assignments")
    def get(self, request, pk: int):
        assignment = access.get_assignment_for_user(request.user, pk=pk)
        return Response(item_view_data(assignment))


def answer_response(assignment: Assignment, result) -> dict:
    """What a write of an answer returns: the answer as stored and the annotator's progress."""
    enrollment = assignment.enrollment
    progress = selectors.enrollment_progress(enrollment)
    bar = progress["phase2"] if progress["phase"] == 2 else progress["phase1"]
    answer = result.answer
    return {
        "values": answer.values,
        "revision": answer.revision,
        "changed": result.changed,
        "phase1_done": answer.phase1_done,
        "phase2_done": answer.phase2_done,
        "phase1_ready": result.phase1_ready,
        "phase_ready": bar.complete and not enrollment.submitted_at,
        "progress_percent": bar.percent,
        "phase": progress["phase"],
        "phases": {
            str(number): {"done": p.done, "total": p.total, "percent": p.percent}
            for number, p in ((1, progress["phase1"]), (2, progress["phase2"])) if p is not None
        },
    }


class AnswerView(AnnotatorAPIView):
    @extend_schema(
        request=AnswerInSerializer,
        responses={200: AnswerOutSerializer, **errors(400, 403, 404, 409)},
        summary="Update my answer: merges the given fields (the same request twice changes nothing; "
                "a change based on an older `revision` is refused with 409 and the current answer)",
    )
    def patch(self, request, pk: int):
        return self._save(request, pk, replace=False)

    @extend_schema(
        request=AnswerInSerializer,
        responses={200: AnswerOutSerializer, **errors(400, 403, 404, 409)},
        summary="Replace my answer: fields left out are cleared",
    )
    def put(self, request, pk: int):
        return self._save(request, pk, replace=True)

    @extend_schema(
        request=AnswerInSerializer,
        responses={200: AnswerOutSerializer, **errors(400, 403, 404, 409)},
        summary="Update my answer (as PATCH; what the item page's autosave sends)",
    )
    def post(self, request, pk: int):
        return self._save(request, pk, replace=False)

    def _save(self, request, pk: int, *, replace: bool):
        assignment = access.get_assignment_for_user(request.user, pk=pk)
        incoming = AnswerInSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        result = answer_save(
            assignment=assignment,
            values=incoming.validated_data["values"],
            time_on_item_ms=incoming.validated_data["time_on_item_ms"],
            user=request.user,
            source="api" if request.auth is not None else "web",
            replace=replace,
            base_revision=incoming.validated_data["revision"],
            writer=incoming.validated_data["writer"],
            writer_seq=incoming.validated_data["seq"],
        )
        return Response(answer_response(assignment, result))


class SkipOutSerializer(serializers.Serializer):
    skipped = serializers.BooleanField(help_text="false when the item was already answered in this phase (nothing recorded)")
    next = AssignmentSerializer(allow_null=True, help_text="the next item still to answer, wrapping round; null when only skipped ones are left")


class SkipView(AnnotatorAPIView):
    @extend_schema(
        request=None,
        responses={200: SkipOutSerializer, **errors(403, 404)},
        summary="Skip one of my items for now: Resume passes over it until every other open item of the phase is answered",
    )
    def post(self, request, pk: int):
        assignment = access.get_assignment_for_user(request.user, pk=pk)
        skipped = assignment_skip(assignment=assignment)
        following = selectors.next_open_assignment(assignment.enrollment, assignment.position)
        return Response({"skipped": skipped, "next": AssignmentSerializer(following).data if following else None})


class UndoOutSerializer(AnswerOutSerializer):
    assignment = AssignmentSerializer(help_text="the item the undone change was on")


class UndoView(AnnotatorAPIView):
    @extend_schema(
        request=None,
        responses={200: UndoOutSerializer, **errors(400, 403, 404, 409)},
        summary="Take back my last change in this campaign (on whichever item it was); the undo is itself a revision",
    )
    def post(self, request, slug: str):
        enrollment = access.get_enrollment_for_user(request.user, slug)
        assignment, result = answer_undo(enrollment=enrollment, user=request.user)
        return Response({"assignment": AssignmentSerializer(assignment).data, **answer_response(assignment, result)})
