from django.urls import path

from council import views

app_name = "council"
urlpatterns = [
    path("", views.index, name="index"),
    path("campaigns/<slug:slug>/run/", views.run_start, name="run-start"),
    path("campaigns/<slug:slug>/triage/", views.triage, name="triage"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/progress.json", views.run_progress, name="run-progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("item-sets/<int:item_set_id>/gates/", views.gates_start, name="gates-start"),
]
