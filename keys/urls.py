from django.urls import path

from keys import views as key_views

app_name = "keys"
urlpatterns = [
    path("", key_views.key_list, name="list"),
    path("errata/<int:pk>/decide/", key_views.erratum_decide, name="erratum-decide"),
    path("errata/<int:pk>/rejudge/", key_views.erratum_rejudge, name="erratum-rejudge"),
    path("new/<slug:slug>/", key_views.key_build, name="build"),
    path("jobs/<int:pk>/", key_views.job_detail, name="job"),
    path("jobs/<int:pk>/progress/", key_views.job_progress, name="job-progress"),
    path("<str:version>/", key_views.key_detail, name="detail"),
    path("<str:version>/download.zip", key_views.key_download, name="download"),
    path("<str:version>/key.jsonl", key_views.key_jsonl, name="jsonl"),
    path("<str:version>/errata.jsonl", key_views.key_errata_feed, name="errata-feed"),
    path("<str:version>/errata/", key_views.erratum_create, name="erratum-create"),
    path("<str:version>/freeze/", key_views.key_freeze, name="freeze"),
    path("<str:version>/publish/", key_views.key_publish, name="publish"),
    path("<str:version>/derive/", key_views.key_derive, name="derive"),
]
