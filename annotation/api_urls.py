from django.urls import path

from annotation import api, api_campaigns

urlpatterns = [
    path("annotation/assignments/", api.MyAssignmentsView.as_view(), name="api-my-assignments"),
    path("annotation/assignments/<int:pk>/", api.AssignmentItemView.as_view(), name="api-assignment"),
    path("annotation/assignments/<int:pk>/answer/", api.AnswerView.as_view(), name="api-answer"),
    path("annotation/assignments/<int:pk>/skip/", api.SkipView.as_view(), name="api-skip"),
    path("annotation/campaigns/<slug:slug>/undo/", api.UndoView.as_view(), name="api-undo"),
    path("campaigns/", api_campaigns.CampaignListApi.as_view(), name="api-campaigns"),
    path("campaigns/<slug:slug>/progress/", api_campaigns.CampaignProgressApi.as_view(), name="api-campaign-progress"),
    path("campaigns/<slug:slug>/close/", api_campaigns.CampaignCloseApi.as_view(), name="api-campaign-close"),
]
