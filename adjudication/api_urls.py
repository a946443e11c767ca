from django.urls import path

from adjudication import api

urlpatterns = [
    path("adjudication/<slug:slug>/agreement/", api.AgreementView.as_view(), name="api-agreement"),
    path("adjudication/<slug:slug>/queue/", api.QueueView.as_view(), name="api-queue"),
    path("adjudication/<slug:slug>/decisions/<int:item_id>/", api.DecisionView.as_view(), name="api-decision"),
]
