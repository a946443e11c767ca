from django.urls import path

from council import api

urlpatterns = [
    path("council/members/", api.MemberListApi.as_view(), name="api-council-members"),
    path("council/runs/", api.RunListApi.as_view(), name="api-council-runs"),
    path("council/runs/<int:run_id>/", api.RunProgressApi.as_view(), name="api-council-run"),
    path("council/runs/<int:run_id>/cancel/", api.RunCancelApi.as_view(), name="api-council-run-cancel"),
]
