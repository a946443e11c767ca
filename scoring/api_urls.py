from django.urls import path

from scoring.api import ScoreReportApi

urlpatterns = [
    path("keys/<str:version>/scores/", ScoreReportApi.as_view(), name="api-key-scores"),
]
