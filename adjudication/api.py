"""The adjudication API: agreement figures, the queue, and decisions — the same access rule,
selectors and services as the HTML pages."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from adjudication import selectors
from adjudication.agreement import campaign_agreement
from adjudication.serializers import (
    AGREEMENT_SCHEMA,
    DecisionInSerializer,
    DecisionResultSerializer,
    QueueSerializer,
    agreement_data,
)
from adjudication.services import decision_save
from annotation.access import get_unblinded_campaign
from goldkey.api_schema import errors
from goldkey.errors import NotFound


class AgreementView(APIView):
    @extend_schema(responses={200: AGREEMENT_SCHEMA, **errors(403, 404)},
                   summary="Agreement figures of a campaign (as `manage.py agreement --json`)")
    def get(self, request, slug):
        return Response(agreement_data(campaign_agreement(get_unblinded_campaign(request.user, slug))))


class QueueView(APIView):
    @extend_schema(responses={200: QueueSerializer, **errors(403, 404)},
                   summary="The adjudication queue: reasons, suggestion and decision per item")
    def get(self, request, slug):
        campaign = get_unblinded_campaign(request.user, slug)
        entries = selectors.queue_from_data(selectors.campaign_data(campaign))
        return Response(QueueSerializer(
            {"campaign": campaign, "frozen": selectors.campaign_is_frozen(campaign), "queue": entries}
        ).data)


class DecisionView(APIView):
    @extend_schema(request=DecisionInSerializer, responses={200: DecisionResultSerializer, **errors(400, 403, 404)},
                   summary="Record or change the decision on one item (the whole decision: fields left out are cleared)")
    def put(self, request, slug, item_id: int):
        campaign = get_unblinded_campaign(request.user, slug)
        item = selectors.campaign_item(campaign, item_id)
        if item is None:
            raise NotFound(f"no item {item_id} in campaign '{slug}'")
        body = DecisionInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = decision_save(campaign=campaign, item=item, user=request.user, source="api", **body.validated_data)
        return Response(DecisionResultSerializer({"item": item, **vars(result)}).data)
