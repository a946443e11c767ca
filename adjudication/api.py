"""The adjudication API: agreement figures, the queue, and decisions — the same access rule,
selectors and services as the HTML pages."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from adjudication import selectors
from adjudication.agreement import campaign_agreement
from adjudication.models import Action
from adjudication.services import decision_save
from annotation.access import get_unblinded_campaign
from goldkey.errors import NotFound


class DecisionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=Action.values)
    new_gold = serializers.CharField(required=False, allow_blank=True, default="")
    note = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)


def decision_json(decision) -> dict | None:
    if decision is None:
        return None
    return {
        "action": decision.action,
        "new_gold": decision.new_gold,
        "note": decision.note,
        "decided_by": decision.decided_by.get_username() if decision.decided_by else None,
        "decided_at": decision.decided_at.isoformat(),
        "revision": decision.revision,
    }


class AgreementView(APIView):
    @extend_schema(responses=dict, summary="Agreement figures of a campaign (as `manage.py agreement --json`)")
    def get(self, request, slug):
        return Response(campaign_agreement(get_unblinded_campaign(request.user, slug)))


class QueueView(APIView):
    @extend_schema(responses=dict, summary="The adjudication queue: reasons, suggestion and decision per item")
    def get(self, request, slug):
        campaign = get_unblinded_campaign(request.user, slug)
        entries = selectors.queue_from_data(selectors.campaign_data(campaign))
        return Response(
            {
                "campaign": campaign.slug,
                "frozen": selectors.campaign_is_frozen(campaign),
                "queue": [
                    {
                        "id": e.item.id,
                        "item": e.item.external_id,
                        "reasons": e.reasons,
                        "suggestion": e.suggestion,
                        "decision": decision_json(e.decision),
                    }
                    for e in entries
                ],
            }
        )


class DecisionView(APIView):
    @extend_schema(request=DecisionSerializer, responses=dict, summary="Record or change the decision on one item")
    def put(self, request, slug, item_id: int):
        campaign = get_unblinded_campaign(request.user, slug)
        item = selectors.campaign_item(campaign, item_id)
        if item is None:
            raise NotFound(f"no item {item_id} in campaign '{slug}'")
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = decision_save(campaign=campaign, item=item, user=request.user, source="api", **body.validated_data)
        return Response({"item": item.external_id, "changed": result.changed, "decision": decision_json(result.decision)})
