from django.urls import path

from chains.api import ChainScoresApi

urlpatterns = [
    path("keys/<str:version>/scores/chains/", ChainScoresApi.as_view(), name="api-chain-scores"),
]
