from django.urls import path

from council import views

app_name = "council"
urlpatterns = [
    path("", views.index, name="index"),
    path("campaigns/<slug:slug>/run/", views.run_start, name="run_start"),
    path("campaigns/<slug:slug>/triage/", views.triage, name="triage"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/progress.json", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
]
