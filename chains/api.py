"""A frozen Track C key's scores as JSON: the same selector as the page."""

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.permissions import IsAuthor
from chains import selectors
from chains.serializers import ChainScoresSerializer
from goldkey.api_schema import errors


class ChainScoresApi(APIView):
    """Every run stored against a frozen TWIST Track C key, each metric with its interval, beside the judge that
    scored the run (its model, judge prompt version and per-class decoy calibration)."""

    permission_classes = [IsAuthenticated, IsAuthor]

    @extend_schema(responses={200: ChainScoresSerializer, **errors(403, 404)}, summary="A Track C key's judged runs")
    def get(self, request, version: str):
        key = selectors.get_chain_key_for_author(version, request.user)
        return Response({"key": key.version, "sha256": key.sha256, "runs": selectors.chain_run_reports(key)})
