from django.urls import path

from keys import api as key_api

urlpatterns = [
    path("keys/", key_api.KeyListApi.as_view(), name="api-keys"),
    path("keys/<str:version>/", key_api.KeyDetailApi.as_view(), name="api-key-detail"),
    path("keys/<str:version>/errata/", key_api.KeyErrataApi.as_view(), name="api-key-errata"),
    path("errata/<int:pk>/decision/", key_api.ErratumDecisionApi.as_view(), name="api-erratum-decision"),
    path("errata/<int:pk>/rejudge/", key_api.ErratumRejudgeApi.as_view(), name="api-erratum-rejudge"),
]
