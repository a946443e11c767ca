"""The score report as JSON: the same selector as the page and `score_report --json`."""

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from goldkey.api_schema import errors
from keys import selectors as key_selectors
from scoring import selectors as score_selectors
from scoring.serializers import ScoreReportSerializer
from scoring.views import family_options


class ScoreReportApi(APIView):
    """Every run imported against the key version, scored against it: {"key": {"version", "sha256"},
    "runs", "mcnemar", "family", "family_size", "run_records", "multi_ingest", "unscorable"}."""

    permission_classes = [AllowAny]  # visibility is the key's: get_key_for_user

    @extend_schema(responses={200: ScoreReportSerializer, **errors(404)})
    def get(self, request, version: str):
        key = key_selectors.get_key_for_user(version, request.user)
        return Response(score_selectors.score_report(key, **family_options(request)))
